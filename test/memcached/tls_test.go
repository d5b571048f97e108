package memcached_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// TestTLSKeySize runs the real memcached with the rendered arguments on TLS pairs whose keys
// straddle resolve's limit: an RSA-1024 key, which memcached's OpenSSL refuses ("ee key too
// small", and memcached exits: a crash loop) and resolve refuses first, naming why; and an
// RSA-2048 key, which both accept and a verifying client connects to.
func TestTLSKeySize(t *testing.T) {
	m := memcached()
	t.Run("RSA-1024", func(t *testing.T) {
		secret, _ := tlsSecretWithKey(t, m, rsaKey(t, 1024))
		_, errs := resolve.TLSSecret(nil, secret.Name, m.Namespace, render.Host(m), secret, time.Now())
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "1024-bit RSA key, under 2048 bits") {
			t.Errorf("resolve.TLSSecret(an RSA-1024 pair) = %v; want it refused, naming the key size", errs)
		}
		// What the pods would run, had resolve accepted it.
		w := m
		w.TLS = pairOf(secret)
		out, err := exited(t, w)
		if err == nil || !strings.Contains(out, "ee key too small") {
			t.Errorf("memcached with an RSA-1024 key: %v, output:\n%s\nwant it to exit with \"ee key too small\"", err, out)
		}
	})
	t.Run("RSA-2048", func(t *testing.T) {
		secret, ca := tlsSecretWithKey(t, m, rsaKey(t, 2048))
		served, errs := resolve.TLSSecret(nil, secret.Name, m.Namespace, render.Host(m), secret, time.Now())
		if len(errs) > 0 {
			t.Fatalf("resolve.TLSSecret(an RSA-2048 pair) = %v; want it accepted", errs)
		}
		w := m
		w.TLS = served
		p := run(t, w, secret)
		if got, err := p.dialTLS(t, ca).Set("greeting", "hello"); err != nil || got != "STORED" {
			t.Errorf("set over TLS with an RSA-2048 certificate: %q, %v", got, err)
		}
	})
}

// exited runs memcached's rendered container for m, with the function's copy of m's TLS pair
// laid out as the kubelet mounts it, expecting it to exit: its output and exit error. A
// memcached still running after 10 seconds is killed and reported with a nil error.
func exited(t *testing.T, m render.Memcached) (string, error) {
	t.Helper()
	dir := memcachedtest.Dir(t)
	s := render.TLSSecret(m)
	for k, v := range s.Data {
		memcachedtest.WriteFile(t, filepath.Join(dir, "tls", k), v)
	}
	port := strconv.Itoa(memcachedtest.FreePort(t))
	c := render.Deployment(m).Spec.Template.Spec.Containers[0]
	args := make([]string, 0, len(c.Args))
	for _, a := range c.Args {
		a = strings.ReplaceAll(a, render.TLSDir, filepath.Join(dir, "tls"))
		args = append(args, strings.Replace(a, "--port="+strconv.Itoa(render.Port), "--port="+port, 1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, memcachedtest.Binary(t), args...) //nolint:gosec // The test's own arguments.
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: memcachedtest.UID, Gid: memcachedtest.UID}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), nil
	}
	return out.String(), err
}

// pairOf is what memcached would serve from secret, unchecked.
func pairOf(s *corev1.Secret) *render.TLS {
	c, k := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	return &render.TLS{SecretName: s.Name, Certificate: string(c), PrivateKey: string(k), CA: string(s.Data["ca.crt"]), Digest: render.Digest(c, []byte{0}, k)}
}

func rsaKey(t *testing.T, bits int) crypto.Signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// tlsSecretWithKey is a cert-manager Secret for m's host whose certificate has key, signed by
// a new CA: the Secret and the CA.
func tlsSecretWithKey(t testing.TB, m render.Memcached, key crypto.Signer) (*corev1.Secret, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	usage := x509.KeyUsageDigitalSignature // As cert-manager sets it: RSA keys also encipher.
	if _, ok := key.(*rsa.PrivateKey); ok {
		usage |= x509.KeyUsageKeyEncipherment
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: render.Host(m)}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), DNSNames: []string{render.Host(m), "*." + render.Host(m)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: usage}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-tls", Namespace: m.Namespace},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
			"ca.crt":                ca,
		},
	}, ca
}
