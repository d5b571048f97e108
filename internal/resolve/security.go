package resolve

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

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
	if auth {
		m.Auth = &render.Auth{Rotation: spec.Auth.GetRotation()}
		m.AuthProxyImage = s.AuthProxyImage
		if m.Metrics && s.AuthProxyImage == "" {
			errs = append(errs, field.Invalid(root.Child("metrics", "enabled"), true,
				"cannot be true with auth on here: the exporter reaches memcached through the auth proxy, whose image the platform has not set (defaults.authProxyImage)"))
		}
	}

	if t := spec.TLS; t != nil && t.SecretName != "" {
		if msgs := validation.IsDNS1123Subdomain(t.SecretName); len(msgs) > 0 {
			errs = append(errs, field.Invalid(root.Child("tls", "secretName"), t.SecretName, "must be a Secret name: "+strings.Join(msgs, "; ")))
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

// TLSSecret checks the Secret that spec.tls.secretName (at p) names, found in namespace (nil
// when it does not exist), and returns what memcached serves TLS with: its digest, so that a
// renewed certificate rolls the replicas, and its ca.crt, for clients. Each problem is a
// field error naming the Secret and what is wrong with it.
func TLSSecret(p *field.Path, name, namespace string, secret *corev1.Secret) (*render.TLS, field.ErrorList) {
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
	if _, err := tls.X509KeyPair(crt, key); err != nil {
		return invalid(where + ": tls.crt and tls.key are not a certificate and its private key: " + err.Error())
	}
	ca := secret.Data[corev1.ServiceAccountRootCAKey]
	if len(ca) > 0 {
		if err := certificates(ca); err != nil {
			return invalid(where + ": ca.crt is not a PEM certificate: " + err.Error())
		}
	}
	return &render.TLS{SecretName: name, Digest: render.Digest(crt, []byte{0}, key), CA: string(ca)}, nil
}

// certificates checks that b holds PEM certificates and nothing else.
func certificates(b []byte) error {
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return errors.Errorf("a %s block", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return err
		}
		n++
	}
	if n == 0 || len(strings.TrimSpace(string(b))) > 0 {
		return errors.New("no PEM certificate")
	}
	return nil
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
	a = render.Auth{Username: u, Password: pw}
	if salt := data[render.AuthSaltKey]; len(salt) >= MinSaltLength && len(salt) <= MaxSaltLength {
		a.Salt = string(salt)
	}
	return a, true
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
