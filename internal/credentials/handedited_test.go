package credentials

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/pki"
	"github.com/example/function-memcached/internal/render"
)

// handEditedCA is a self-signed CA certificate (with its key) whose validity runs backwards:
// notBefore after notAfter. pki.Valid accepts it (it is a CA whose key is CAKey), and its
// renewal point, notAfter - (notAfter - notBefore)/3, lies after notAfter.
func handEditedCA(t *testing.T, notBefore, notAfter time.Time) (string, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hand-edited CA"},
		NotBefore: notBefore, NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalECPrivateKey(k)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}

// TestHandEditedCAIsReplacedOnce: a tenant (who may write every Secret of its
// namespace, the auth Secret too) puts a CA into <name>-auth whose NotAfter is in the past and
// whose NotBefore is far in the future. Kept, its renewal point would never come
// while every leaf it signs, clipped to its NotAfter, would be due the moment it is issued:
// renewed on every call, the connection Secret changing and the replicas rolling each time.
// Whatever Renew cannot keep is replaced whole, once.
func TestHandEditedCAIsReplacedOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	hosts := pki.Hosts("sessions.team-a.svc.cluster.local", "sessions", "team-a")
	want := func(now time.Time) Want {
		return Want{Mode: cachev1alpha1.AuthModeClientCertificate, Now: now, Subject: "team-a/sessions", Hosts: hosts}
	}
	// Start from certificates the Store issued and stored, then edit the CA by hand.
	s := NewStore()
	owner := Owner{Namespace: "team-a", UID: "uid"}
	a, err := s.Get(owner, want(t0), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Applied and observed: the Store forgets its entry, the Secret holds the certificates.
	if again, err := s.Get(owner, want(t0), stored(a), nil); err != nil || again != a {
		t.Fatalf("the stored certificates are read back (err %v)", err)
	}
	observed := stored(a)
	ca, caKey := handEditedCA(t, t0.Add(100*365*24*time.Hour), t0.Add(-24*time.Hour))
	observed.Data[render.ConnectionCA], observed.Data[render.CAKey] = []byte(ca), []byte(caKey)

	var clients []string
	now := t0
	for i := range 5 {
		now = now.Add(time.Minute)
		got, err := s.Get(owner, want(now), observed, nil)
		if err != nil {
			t.Fatalf("Get #%d: %v", i+1, err)
		}
		clients = append(clients, got.Certificates.Client)
		t.Logf("call %d CA same as hand-edited: %v", i+1, got.Certificates.CA == ca)
		observed = stored(got) // Crossplane applies it; the next call observes it.
	}
	changes := 0
	for i := 1; i < len(clients); i++ {
		if clients[i] != clients[i-1] {
			changes++
		}
	}
	if changes > 0 {
		t.Errorf("after the auth Secret was edited by hand once, %d of the next %d reconciles (each observing the one before applied) issued a new client certificate: "+
			"the connection Secret (and, with the issued server certificate, the replicas) change on every call", changes, len(clients)-1)
	}
}
