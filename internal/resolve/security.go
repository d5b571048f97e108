package resolve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// Credentials generated for a Memcached.
const (
	// Username is the user every generated credential names: a Memcached has one user.
	Username = "memcached"
	// PasswordLength is the length of generated passwords: 32 characters of 62 carry 190
	// bits of entropy.
	PasswordLength = 32
	// MaxCredentialLength bounds a username or password read back from an auth Secret.
	MaxCredentialLength = 128
	// SaltLength is the length of generated salts of the credentials digest: 256 random
	// bits, as many as the HMAC-SHA256 key holds.
	SaltLength = 32
	// MinSaltLength and MaxSaltLength bound a salt read back from an auth Secret; one outside
	// them is no salt (a hand-edited Secret), and the credentials get a new one when their
	// pods next restart for them.
	MinSaltLength = 16
	MaxSaltLength = 64
)

// security resolves spec's authentication, TLS and NetworkPolicy into m, which must already
// hold its metrics setting. With auth on, m.Auth is set without credentials: those are state
// (generated once, then read back from the auth Secret), which the caller fills in.
func security(root *field.Path, spec cachev1alpha1.MemcachedSpec, m *render.Memcached, s Settings) field.ErrorList {
	var errs field.ErrorList
	auth := s.Auth
	if a := spec.Auth; a != nil && a.Enabled != nil {
		auth = *a.Enabled
		if !auth && s.RequireAuth {
			errs = append(errs, field.Invalid(root.Child("auth", "enabled"), false, "must be true (policy.requireAuth)"))
		}
	}
	if r := spec.Auth.GetRotation(); r != "" {
		switch msgs := validation.IsValidLabelValue(r); {
		case len(msgs) > 0:
			errs = append(errs, field.Invalid(root.Child("auth", "rotation"), r, "must be at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit: "+strings.Join(msgs, "; ")))
		case !auth:
			errs = append(errs, field.Invalid(root.Child("auth", "rotation"), r, "rotates credentials, and authentication is off (spec.auth.enabled, or the platform's defaults.auth.enabled)"))
		}
	}
	mode := s.AuthMode
	if m := spec.Auth.GetMode(); m != "" {
		mode = m
		p := root.Child("auth", "mode")
		switch {
		case !slices.Contains(cachev1alpha1.AuthModes, m):
			errs = append(errs, field.NotSupported(p, m, cachev1alpha1.AuthModes))
		case !auth:
			errs = append(errs, field.Invalid(p, m, "chooses how clients authenticate, and authentication is off (spec.auth.enabled, or the platform's defaults.auth.enabled)"))
		case !s.authModeAllowed(m):
			errs = append(errs, field.Invalid(p, m, "must be one of "+strings.Join(s.AllowedAuthModes, ", ")+" (policy.allowedAuthModes)"))
		}
	}
	if auth {
		m.Auth = &render.Auth{Mode: mode, Rotation: spec.Auth.GetRotation()}
		m.AuthProxyImage = s.AuthProxyImage
		if render.NeedsAuthProxy(*m) && s.AuthProxyImage == "" {
			how := "cannot authenticate with a password"
			if mode == cachev1alpha1.AuthModeSASL {
				how = "speaks neither SASL nor the binary protocol, which is all memcached speaks with SASL on"
			}
			errs = append(errs, field.Invalid(root.Child("metrics", "enabled"), true, fmt.Sprintf(
				"cannot be true with auth mode %s here: the exporter %s and reaches memcached through the auth proxy, whose image the platform has not set (defaults.authProxyImage)", mode, how)))
		}
	}

	if t := spec.TLS; t != nil && t.SecretName != "" {
		if msgs := validation.IsDNS1123Subdomain(t.SecretName); len(msgs) > 0 {
			errs = append(errs, field.Invalid(root.Child("tls", "secretName"), t.SecretName, "must be a Secret name: "+strings.Join(msgs, "; ")))
		} else if t.SecretName == render.TLSSecretName(*m) {
			errs = append(errs, field.Invalid(root.Child("tls", "secretName"), t.SecretName,
				"is the function's copy of the pair the pods serve, not a Secret a certificate is issued into: name the Secret your certificate (cert-manager's spec.secretName) is written to"))
		} else {
			m.TLS = &render.TLS{SecretName: t.SecretName}
		}
	}

	np := s.NetworkPolicy
	var allowed *metav1.LabelSelector
	if p := spec.NetworkPolicy; p != nil {
		if p.Enabled != nil {
			np = *p.Enabled
			if !np && s.RequireNetworkPolicy {
				errs = append(errs, field.Invalid(root.Child("networkPolicy", "enabled"), false, "must be true (policy.requireNetworkPolicy)"))
			}
		}
		allowed = p.AllowedNamespaces
	}
	if np {
		if allowed != nil { // Field paths are built only when there is something to check.
			errs = append(errs, s.checkNamespaces(root.Child("networkPolicy", "allowedNamespaces"), allowed)...)
		}
		m.NetworkPolicy = &render.NetworkAccess{AllowedNamespaces: allowed, MonitoringNamespace: s.MonitoringNamespace}
	}
	m.ServiceMonitor = s.ServiceMonitor && m.Metrics
	m.PrometheusRule = s.PrometheusRule && m.Metrics
	return errs
}

// checkNamespaces reports a namespace selector that admits more than it names: an empty one
// (every namespace), an operator other than In (NotIn, Exists and DoesNotExist admit
// namespaces nobody listed), or a label key the platform's policy does not allow, since
// whoever may label a namespace with it could admit themselves.
func (s Settings) checkNamespaces(p *field.Path, sel *metav1.LabelSelector) field.ErrorList {
	if sel == nil {
		return nil
	}
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return field.ErrorList{field.Invalid(p, "{}", "must name the namespaces it admits: an empty selector admits every namespace")}
	}
	notAllowed := "this label key is not allowed; policy.networkPolicy.allowedNamespaceLabels allows " + strings.Join(s.AllowedNamespaceLabels, ", ")
	if len(s.AllowedNamespaceLabels) == 0 {
		notAllowed = "this platform admits no other namespace (policy.networkPolicy.allowedNamespaceLabels is empty)"
	}
	var errs field.ErrorList
	keys := slices.Sorted(maps.Keys(sel.MatchLabels))
	for _, k := range keys {
		kp := p.Child("matchLabels").Key(k)
		switch {
		case !slices.Contains(s.AllowedNamespaceLabels, k):
			errs = append(errs, field.Invalid(kp, k, notAllowed))
		case len(validation.IsValidLabelValue(sel.MatchLabels[k])) > 0:
			errs = append(errs, field.Invalid(kp, sel.MatchLabels[k], "must be a label value: "+strings.Join(validation.IsValidLabelValue(sel.MatchLabels[k]), "; ")))
		}
	}
	for i, e := range sel.MatchExpressions {
		ep := p.Child("matchExpressions").Index(i)
		if e.Operator != metav1.LabelSelectorOpIn {
			errs = append(errs, field.Invalid(ep.Child("operator"), string(e.Operator), "must be In: a selector names the namespaces it admits"))
		}
		if !slices.Contains(s.AllowedNamespaceLabels, e.Key) {
			errs = append(errs, field.Invalid(ep.Child("key"), e.Key, notAllowed))
		}
		if len(e.Values) == 0 {
			errs = append(errs, field.Required(ep.Child("values"), "the namespaces' label values to admit"))
		}
		for j, v := range e.Values {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				errs = append(errs, field.Invalid(ep.Child("values").Index(j), v, "must be a label value: "+strings.Join(msgs, "; ")))
			}
		}
	}
	return errs
}

// Limits on the keys memcached serves TLS with. OpenSSL at security level 2 (Debian's
// default, and its memcached's) refuses to load an RSA key under 2048 bits ("ee key too
// small", memcached exits) and verifying clients refuse such a chain; TLS 1.3 has signature
// schemes for ECDSA on P-256, P-384 and P-521 only, so a key on another curve serves no TLS 1.3
// client (Go's crypto/tls among them).
const (
	// MinRSABits is the smallest RSA key accepted in tls.crt's chain and as tls.key.
	MinRSABits = 2048
)

// TLSSecret checks the Secret that spec.tls.secretName (at p) names, found in namespace (nil
// when it does not exist), at time now, for a memcached that clients reach as host, and
// returns what memcached serves TLS with: the pair and its digest, so that a renewed
// certificate rolls the replicas, and its ca.crt, for clients. It accepts only a pair that a
// verifying client can use: a key memcached loads, a certificate valid at now, naming host and
// usable by a server, signed by ca.crt when the Secret has one. Each problem is in one field
// error naming the Secret and what is wrong with it. now is a parameter, not the clock: a
// certificate valid today is invalid once it expires, and the caller decides when that is.
func TLSSecret(p *field.Path, name, namespace, host string, secret *corev1.Secret, now time.Time) (*render.TLS, field.ErrorList) {
	where := "Secret " + namespace + "/" + name
	invalid := func(detail string) (*render.TLS, field.ErrorList) {
		return nil, field.ErrorList{field.Invalid(p, name, detail)}
	}
	if secret == nil {
		return invalid(where + " does not exist")
	}
	if secret.Type != corev1.SecretTypeTLS {
		return invalid(fmt.Sprintf("%s is of type %q, not %q", where, secret.Type, corev1.SecretTypeTLS))
	}
	crt, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	var missing []string
	for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(secret.Data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return invalid(where + " has no " + strings.Join(missing, " and no "))
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return invalid(where + ": tls.crt and tls.key are not a certificate and its private key: " + err.Error())
	}
	ca := secret.Data[corev1.ServiceAccountRootCAKey]
	var roots []*x509.Certificate
	if len(ca) > 0 {
		if roots, err = certificates(ca); err != nil {
			return invalid(where + ": ca.crt is not a PEM certificate: " + err.Error())
		}
	}
	if problems := servable(pair, roots, host, now); len(problems) > 0 {
		return invalid(where + ": " + strings.Join(problems, "; "))
	}
	return &render.TLS{
		SecretName: name, Certificate: string(crt), PrivateKey: string(key), CA: string(ca),
		Digest: render.Digest(crt, []byte{0}, key),
	}, nil
}

// TLSSecretExpiry is when a verdict of TLSSecret accepting secret stops holding: the earliest
// expiry among tls.crt's chain and ca.crt's certificates (zero when there is none to parse).
// An accepted Secret whose content has not changed is accepted at any later time before then,
// which lets a caller remember the verdict instead of checking again on every call.
func TLSSecretExpiry(secret *corev1.Secret) time.Time {
	var until time.Time
	earliest := func(b []byte) {
		for {
			var block *pem.Block
			if block, b = pem.Decode(b); block == nil {
				return
			}
			if c, err := x509.ParseCertificate(block.Bytes); err == nil && (until.IsZero() || c.NotAfter.Before(until)) {
				until = c.NotAfter
			}
		}
	}
	if secret != nil {
		earliest(secret.Data[corev1.TLSCertKey])
		earliest(secret.Data[corev1.ServiceAccountRootCAKey])
	}
	return until
}

// servable lists why clients could not use pair, as memcached serves it, at now: a weak key
// in its chain, a certificate of the chain not valid at now, a leaf that does not name host
// or is not for servers, and a chain roots (ca.crt, when the Secret has one) did not sign.
func servable(pair tls.Certificate, roots []*x509.Certificate, host string, now time.Time) []string {
	var problems []string
	chain := make([]*x509.Certificate, 0, len(pair.Certificate))
	for i, der := range pair.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			// X509KeyPair parsed the first; a later one of the chain that does not parse
			// would be sent to clients as is.
			return append(problems, fmt.Sprintf("certificate %d of tls.crt does not parse: %v", i+1, err))
		}
		chain = append(chain, c)
	}
	leaf := chain[0]
	for i, c := range chain {
		what := "tls.crt's certificate"
		if i > 0 {
			what = fmt.Sprintf("certificate %d of tls.crt (%q)", i+1, c.Subject.CommonName)
		}
		if weak := weakKey(c.PublicKey); weak != "" {
			problems = append(problems, what+" has "+weak)
		}
		switch {
		case now.Before(c.NotBefore):
			problems = append(problems, fmt.Sprintf("%s is not valid before %s", what, c.NotBefore.UTC().Format(time.RFC3339)))
		case now.After(c.NotAfter):
			problems = append(problems, fmt.Sprintf("%s expired at %s", what, c.NotAfter.UTC().Format(time.RFC3339)))
		}
	}
	if err := leaf.VerifyHostname(host); err != nil {
		names := "no DNS name"
		if len(leaf.DNSNames) > 0 {
			shown := leaf.DNSNames[:min(len(leaf.DNSNames), 5)]
			names = strings.Join(shown, ", ")
			if len(leaf.DNSNames) > len(shown) {
				names += fmt.Sprintf(" and %d more", len(leaf.DNSNames)-len(shown))
			}
		}
		problems = append(problems, fmt.Sprintf("tls.crt's certificate names %s, not %s, the host in the connection Secret that clients verify", names, host))
	}
	if len(leaf.ExtKeyUsage) > 0 && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageAny) {
		problems = append(problems, "tls.crt's certificate is not for servers: its extended key usage lacks serverAuth")
	}
	if len(roots) > 0 && len(problems) == 0 {
		// Verified only when the rest holds: Verify would repeat the validity and name
		// problems above in its own words.
		opts := x509.VerifyOptions{Roots: x509.NewCertPool(), Intermediates: x509.NewCertPool(), CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		for _, r := range roots {
			opts.Roots.AddCert(r)
		}
		for _, c := range chain[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := leaf.Verify(opts); err != nil {
			var unknown x509.UnknownAuthorityError
			if errors.As(err, &unknown) {
				problems = append(problems, "ca.crt did not sign tls.crt's certificate: clients verifying with the connection Secret's ca.crt would refuse it")
			} else {
				problems = append(problems, "clients verifying tls.crt's certificate with ca.crt would refuse it: "+err.Error())
			}
		}
	}
	return problems
}

// weakKey says what is wrong with a certificate's public key for TLS, or "" when nothing is.
func weakKey(pub any) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if bits := k.N.BitLen(); bits < MinRSABits {
			return fmt.Sprintf("a %d-bit RSA key, under %d bits: memcached's OpenSSL refuses to load it (\"ee key too small\") and verifying clients refuse it", bits, MinRSABits)
		}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
		default:
			return fmt.Sprintf("an ECDSA key on %s: TLS 1.3 clients accept P-256, P-384 and P-521 only", k.Curve.Params().Name)
		}
	}
	return ""
}

// certificates parses b, which must hold PEM certificates and nothing else.
func certificates(b []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, errors.Errorf("a %s block", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 || len(strings.TrimSpace(string(b))) > 0 {
		return nil, errors.New("no PEM certificate")
	}
	return certs, nil
}

// Credentials reads the credentials back from the data of an observed auth Secret. ok is
// false when they cannot be used — a key missing, empty, too long, or holding a character
// memcached's auth file or its text protocol cannot carry (whitespace, or ':' in the
// username) — and new ones must be generated. The salt of their digest is read too: empty
// when the Secret has none (it predates salts) or one of a length outside
// MinSaltLength..MaxSaltLength.
func Credentials(data map[string][]byte) (a render.Auth, ok bool) {
	u, pw := string(data[render.ConnectionUsername]), string(data[render.ConnectionPassword])
	if !credential(u) || strings.Contains(u, ":") || !credential(pw) {
		return render.Auth{}, false
	}
	return render.Auth{Username: u, Password: pw, Salt: Salt(data)}, true
}

// Salt is the salt of the credentials digest an auth Secret's data holds: empty when it has
// none of a usable length (a hand-edited Secret), and the credentials then get a new one when
// their pods next restart for them.
func Salt(data map[string][]byte) string {
	if salt := data[render.AuthSaltKey]; len(salt) >= MinSaltLength && len(salt) <= MaxSaltLength {
		return string(salt)
	}
	return ""
}

// credential reports whether s is 1 to MaxCredentialLength printable ASCII characters without
// spaces.
func credential(s string) bool {
	if s == "" || len(s) > MaxCredentialLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// alphanumerics are the characters of generated passwords: every client library and shell
// passes them through unquoted.
const alphanumerics = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// NewCredentials generates credentials from random (crypto/rand.Reader outside tests): user
// Username, a password of PasswordLength alphanumerics, each drawn without bias, and the salt
// of their digest (NewSalt).
func NewCredentials(random io.Reader) (render.Auth, error) {
	pw := make([]byte, 0, PasswordLength)
	buf := make([]byte, PasswordLength*2)
	for len(pw) < PasswordLength {
		if _, err := io.ReadFull(random, buf); err != nil {
			return render.Auth{}, errors.Wrap(err, "cannot generate a password")
		}
		for _, b := range buf {
			// 248 is the largest multiple of 62 below 256: rejecting the rest keeps every
			// character equally likely.
			if b < 248 && len(pw) < PasswordLength {
				pw = append(pw, alphanumerics[int(b)%len(alphanumerics)])
			}
		}
	}
	salt, err := NewSalt(random)
	if err != nil {
		return render.Auth{}, err
	}
	return render.Auth{Username: Username, Password: string(pw), Salt: salt}, nil
}

// NewSalt generates the salt of a credentials digest (render.CredentialsDigest): SaltLength
// bytes of random.
func NewSalt(random io.Reader) (string, error) {
	salt := make([]byte, SaltLength)
	if _, err := io.ReadFull(random, salt); err != nil {
		return "", errors.Wrap(err, "cannot generate the salt of the credentials digest")
	}
	return string(salt), nil
}
