package resolve

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/example/function-memcached/internal/render"
)

// tlsNow is the time TestTLSSecret judges certificates at.
var tlsNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// tlsHost is the host the connection Secret of Memcached sessions in team-a gives clients.
const tlsHost = "sessions.team-a.svc.cluster.local"

// testCA is a CA that issues certificates for TestTLSSecret.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

func newTestCA(t *testing.T, notAfter time.Time) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "team-a CA"}, NotBefore: tlsNow.Add(-48 * time.Hour),
		NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf is what a certificate is issued for: a serving certificate for tlsHost, valid from an
// hour before tlsNow for a day, with a P-256 key, unless changed.
type leaf struct {
	key       crypto.Signer
	names     []string
	notBefore time.Time
	notAfter  time.Time
	usage     []x509.ExtKeyUsage
	isCA      bool
}

func (ca *testCA) issue(t *testing.T, change func(l *leaf)) (crt, key []byte, cert *x509.Certificate, signer crypto.Signer) {
	t.Helper()
	l := leaf{names: []string{tlsHost}, notBefore: tlsNow.Add(-time.Hour), notAfter: tlsNow.Add(24 * time.Hour), usage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if change != nil {
		change(&l)
	}
	if l.key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		l.key = k
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "memcached"}, NotBefore: l.notBefore,
		NotAfter: l.notAfter, DNSNames: l.names, ExtKeyUsage: l.usage, KeyUsage: x509.KeyUsageDigitalSignature}
	if l.isCA {
		tmpl.Subject.CommonName, tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = "intermediate", true, true, x509.KeyUsageCertSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, l.key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(l.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), cert, l.key
}

func rsaKey(t *testing.T, bits int) crypto.Signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ecKey(t *testing.T, c elliptic.Curve) crypto.Signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTLSSecret covers the Secrets a claim's spec.tls.secretName may name: what memcached
// serves from a good one, and, for each way a pair can be one no verifying client could use
// (or memcached could not load), an InvalidSpec naming the Secret and why.
func TestTLSSecret(t *testing.T) {
	ca := newTestCA(t, tlsNow.Add(365*24*time.Hour))
	other := newTestCA(t, tlsNow.Add(365*24*time.Hour))
	expiredCA := newTestCA(t, tlsNow.Add(-time.Hour))
	crt, key, _, _ := ca.issue(t, nil)
	p := field.NewPath("spec", "tls", "secretName")
	secret := func(typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{Type: typ, Data: data}
	}
	tlsSecret := func(crt, key, ca []byte) *corev1.Secret {
		data := map[string][]byte{"tls.crt": crt, "tls.key": key}
		if ca != nil {
			data["ca.crt"] = ca
		}
		return secret(corev1.SecretTypeTLS, data)
	}
	issued := func(by *testCA, change func(l *leaf), withCA []byte) *corev1.Secret {
		crt, key, _, _ := by.issue(t, change)
		return tlsSecret(crt, key, withCA)
	}
	served := func(s *corev1.Secret) *render.TLS {
		c, k := s.Data["tls.crt"], s.Data["tls.key"]
		return &render.TLS{SecretName: "web-tls", Certificate: string(c), PrivateKey: string(k), CA: string(s.Data["ca.crt"]), Digest: render.Digest(c, []byte{0}, k)}
	}
	const at = `spec.tls.secretName: Invalid value: "web-tls": Secret team-a/web-tls`

	// A chain of tls.crt through an intermediate with an RSA-1024 key, which signed the leaf.
	_, _, interCert, interKey := ca.issue(t, func(l *leaf) { l.key, l.isCA, l.names, l.usage = rsaKey(t, 1024), true, nil, nil })
	inter := &testCA{cert: interCert, key: interKey, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: interCert.Raw})}
	chainLeaf, chainKey, _, _ := inter.issue(t, nil)
	weakChain := tlsSecret(append(chainLeaf, inter.pem...), chainKey, ca.pem)

	valid := tlsSecret(crt, key, ca.pem)
	noCA := tlsSecret(crt, key, nil)
	rsa2048 := issued(ca, func(l *leaf) { l.key = rsaKey(t, 2048) }, ca.pem)
	wildcard := issued(ca, func(l *leaf) { l.names = []string{"*.team-a.svc.cluster.local"} }, ca.pem)
	p384 := issued(ca, func(l *leaf) { l.key = ecKey(t, elliptic.P384()) }, ca.pem)
	noUsage := issued(ca, func(l *leaf) { l.usage = nil }, ca.pem)
	cases := map[string]struct {
		reason string
		secret *corev1.Secret
		want   *render.TLS
		errs   []string
	}{
		"Valid": {
			reason: "A cert-manager Secret gives its pair, the pair's digest and its CA.",
			secret: valid,
			want:   served(valid),
		},
		"NoCA": {
			reason: "ca.crt is optional: clients then verify with the roots they have.",
			secret: noCA,
			want:   served(noCA),
		},
		"RSA2048": {
			reason: "An RSA key of 2048 bits is what memcached's OpenSSL accepts.",
			secret: rsa2048,
			want:   served(rsa2048),
		},
		"P384": {
			reason: "ECDSA on P-384 has a TLS 1.3 signature scheme.",
			secret: p384,
			want:   served(p384),
		},
		"Wildcard": {
			reason: "A wildcard for the namespace's Services names the host.",
			secret: wildcard,
			want:   served(wildcard),
		},
		"NoExtendedKeyUsage": {
			reason: "A certificate without extended key usage may serve.",
			secret: noUsage,
			want:   served(noUsage),
		},
		"Missing": {
			reason: "A Secret that does not exist is named with its namespace.",
			errs:   []string{at + ` does not exist`},
		},
		"WrongType": {
			reason: "Only kubernetes.io/tls Secrets are certificates.",
			secret: secret(corev1.SecretTypeOpaque, map[string][]byte{"tls.crt": crt, "tls.key": key}),
			errs:   []string{at + ` is of type "Opaque", not "kubernetes.io/tls"`},
		},
		"NoKey": {
			reason: "A Secret without its key is named with what it lacks.",
			secret: secret(corev1.SecretTypeTLS, map[string][]byte{"tls.crt": crt}),
			errs:   []string{at + ` has no tls.key`},
		},
		"KeyOfAnotherCertificate": {
			reason: "A key that does not match the certificate (a renewal that wrote one of the two) is refused.",
			secret: tlsSecret(crt, func() []byte { _, k, _, _ := ca.issue(t, nil); return k }(), ca.pem),
			errs:   []string{at + `: tls.crt and tls.key are not a certificate and its private key: tls: private key does not match public key`},
		},
		"BadCA": {
			reason: "A ca.crt clients could not use is reported rather than handed on.",
			secret: tlsSecret(crt, key, []byte("not a certificate")),
			errs:   []string{at + `: ca.crt is not a PEM certificate: no PEM certificate`},
		},
		"RSA1024": {
			reason: "memcached exits with \"ee key too small\" on an RSA-1024 key, and verifying clients refuse it.",
			secret: issued(ca, func(l *leaf) { l.key = rsaKey(t, 1024) }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate has a 1024-bit RSA key, under 2048 bits: memcached's OpenSSL refuses to load it ("ee key too small") and verifying clients refuse it`},
		},
		"WeakIntermediate": {
			reason: "An RSA-1024 key anywhere in the chain memcached sends is refused like the leaf's.",
			secret: weakChain,
			errs:   []string{at + `: certificate 2 of tls.crt ("intermediate") has a 1024-bit RSA key, under 2048 bits: memcached's OpenSSL refuses to load it ("ee key too small") and verifying clients refuse it`},
		},
		"P224": {
			reason: "ECDSA on P-224 has no TLS 1.3 signature scheme: no TLS 1.3 client accepts it.",
			secret: issued(ca, func(l *leaf) { l.key = ecKey(t, elliptic.P224()) }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate has an ECDSA key on P-224: TLS 1.3 clients accept P-256, P-384 and P-521 only`},
		},
		"Expired": {
			reason: "An expired certificate fails every verifying client.",
			secret: issued(ca, func(l *leaf) { l.notBefore, l.notAfter = tlsNow.Add(-48*time.Hour), tlsNow.Add(-time.Second) }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate expired at 2026-12-01T11:59:59Z`},
		},
		"NotYetValid": {
			reason: "A certificate valid only from tomorrow fails every verifying client today.",
			secret: issued(ca, func(l *leaf) { l.notBefore, l.notAfter = tlsNow.Add(24*time.Hour), tlsNow.Add(48*time.Hour) }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate is not valid before 2026-12-02T12:00:00Z`},
		},
		"OtherHost": {
			reason: "A certificate for another Service fails clients verifying the connection Secret's host.",
			secret: issued(ca, func(l *leaf) { l.names = []string{"carts.team-a.svc.cluster.local", "carts"} }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate names carts.team-a.svc.cluster.local, carts, not sessions.team-a.svc.cluster.local, the host in the connection Secret that clients verify`},
		},
		"OtherNamespace": {
			reason: "The same name in another namespace is another host.",
			secret: issued(ca, func(l *leaf) { l.names = []string{"sessions.team-b.svc.cluster.local"} }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate names sessions.team-b.svc.cluster.local, not sessions.team-a.svc.cluster.local, the host in the connection Secret that clients verify`},
		},
		"NoNames": {
			reason: "A common name alone names no host for clients that verify subject alternative names (all current ones).",
			secret: issued(ca, func(l *leaf) { l.names = nil }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate names no DNS name, not sessions.team-a.svc.cluster.local, the host in the connection Secret that clients verify`},
		},
		"ClientCertificate": {
			reason: "A certificate for clients only is refused by clients verifying a server.",
			secret: issued(ca, func(l *leaf) { l.usage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} }, ca.pem),
			errs:   []string{at + `: tls.crt's certificate is not for servers: its extended key usage lacks serverAuth`},
		},
		"OtherCA": {
			reason: "A ca.crt that did not sign tls.crt fails every client verifying with the connection Secret.",
			secret: issued(other, nil, ca.pem),
			errs:   []string{at + `: ca.crt did not sign tls.crt's certificate: clients verifying with the connection Secret's ca.crt would refuse it`},
		},
		"ExpiredCA": {
			reason: "A CA that expired fails clients verifying with it, though the certificate itself is valid.",
			secret: issued(expiredCA, nil, expiredCA.pem),
			errs:   []string{at + `: clients verifying tls.crt's certificate with ca.crt would refuse it: x509: certificate has expired or is not yet valid: current time 2026-12-01T12:00:00Z is after 2026-12-01T11:00:00Z`},
		},
		"EveryProblem": {
			reason: "Every problem of a certificate is named at once, so a renewal is fixed in one go.",
			secret: issued(ca, func(l *leaf) {
				l.key, l.names, l.notBefore, l.notAfter = rsaKey(t, 1024), []string{"carts.team-a.svc.cluster.local"}, tlsNow.Add(-48*time.Hour), tlsNow.Add(-time.Hour)
			}, ca.pem),
			errs: []string{at + `: tls.crt's certificate has a 1024-bit RSA key, under 2048 bits: memcached's OpenSSL refuses to load it ("ee key too small") and verifying clients refuse it; ` +
				`tls.crt's certificate expired at 2026-12-01T11:00:00Z; ` +
				`tls.crt's certificate names carts.team-a.svc.cluster.local, not sessions.team-a.svc.cluster.local, the host in the connection Secret that clients verify`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := TLSSecret(p, "web-tls", "team-a", tlsHost, tc.secret, tlsNow)
			if diff := cmp.Diff(tc.errs, messages(errs)); diff != "" {
				t.Errorf("%s\nTLSSecret(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nTLSSecret(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTLSSecretExpiresLater shows that a Secret accepted today is refused once its
// certificate expires: the check is at the time it is given, not once.
func TestTLSSecretExpiresLater(t *testing.T) {
	ca := newTestCA(t, tlsNow.Add(365*24*time.Hour))
	crt, key, _, _ := ca.issue(t, nil)
	s := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": ca.pem}}
	if _, errs := TLSSecret(nil, "web-tls", "team-a", tlsHost, s, tlsNow); len(errs) > 0 {
		t.Fatalf("TLSSecret(..., now) = %v, want it accepted", errs)
	}
	if _, errs := TLSSecret(nil, "web-tls", "team-a", tlsHost, s, tlsNow.Add(25*time.Hour)); len(errs) == 0 {
		t.Error("TLSSecret(..., a day later) accepted a certificate that expired an hour before")
	}
}

// BenchmarkTLSSecret measures the check of a cert-manager Secret (ECDSA P-256 and RSA-2048
// leaves, with ca.crt), which the function runs on every call of a Memcached with TLS.
func BenchmarkTLSSecret(b *testing.B) {
	t := &testing.T{}
	ca := newTestCA(t, tlsNow.Add(365*24*time.Hour))
	for name, key := range map[string]crypto.Signer{"P256": ecKey(t, elliptic.P256()), "RSA2048": rsaKey(t, 2048)} {
		crt, k, _, _ := ca.issue(t, func(l *leaf) { l.key = key })
		s := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": k, "ca.crt": ca.pem}}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, errs := TLSSecret(nil, "web-tls", "team-a", tlsHost, s, tlsNow); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
		})
	}
}

// TestTLSSecretExpiry checks that an accepted verdict is remembered no longer than the
// earliest expiry of the certificates it judged: the CA's, here, before the leaf's.
func TestTLSSecretExpiry(t *testing.T) {
	ca := newTestCA(t, tlsNow.Add(2*time.Hour))
	crt, key, _, _ := ca.issue(t, nil) // Expires a day after tlsNow.
	s := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": ca.pem}}
	if got, want := TLSSecretExpiry(s), ca.cert.NotAfter; !got.Equal(want) {
		t.Errorf("TLSSecretExpiry(...) = %v, want the CA's expiry %v", got, want)
	}
	if _, errs := TLSSecret(nil, "web-tls", "team-a", tlsHost, s, TLSSecretExpiry(s).Add(time.Second)); len(errs) == 0 {
		t.Error("TLSSecret(...) accepts the Secret after TLSSecretExpiry(...): the verdict outlives it")
	}
	if !TLSSecretExpiry(nil).IsZero() {
		t.Error("TLSSecretExpiry(nil) is not zero")
	}
}
