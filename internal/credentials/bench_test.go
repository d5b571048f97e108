package credentials

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/pki"
	"github.com/example/function-memcached/internal/render"
)

// BenchmarkSteadyGet: what a steady-state call costs the shared function in
// each mode (reading the observed auth Secret back).
func BenchmarkSteadyGet(b *testing.B) {
	t0 := time.Now()
	hosts := pki.Hosts("sessions.team-a.svc.cluster.local", "sessions", "team-a")
	for _, mode := range cachev1alpha1.AuthModes {
		b.Run(mode, func(b *testing.B) {
			s := NewStore()
			w := Want{Mode: mode, Now: t0, Subject: "team-a/sessions", Hosts: hosts}
			o := Owner{Namespace: "team-a", UID: "uid"}
			a, err := s.Get(o, w, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			observed := stored(a)
			for b.Loop() {
				if _, err := s.Get(o, w, observed, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPaddedAuthSecret: a tenant writes its own auth Secret with a ca.crt
// of ~1 MiB (copies of a real certificate). pki.Valid parses every certificate before it
// checks there are at most MaxCAs, all under the Store's one mutex, which every tenant's call
// takes.
func BenchmarkPaddedAuthSecret(b *testing.B) {
	t0 := time.Now()
	hosts := pki.Hosts("sessions.team-a.svc.cluster.local", "sessions", "team-a")
	w := Want{Mode: cachev1alpha1.AuthModeClientCertificate, Now: t0, Subject: "team-a/sessions", Hosts: hosts}
	s := NewStore()
	a, err := s.Get(Owner{Namespace: "team-a", UID: "uid"}, w, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	observed := stored(a)
	one := observed.Data["ca.crt"]
	var padded []byte
	for len(padded)+len(one) < 1000<<10 {
		padded = append(padded, one...)
	}
	observed.Data["ca.crt"] = padded
	b.ReportMetric(float64(len(padded)/len(one)), "certs")
	for b.Loop() {
		// A new owner each time: the Store does not remember the refusal.
		if _, err := s.Get(Owner{Namespace: "team-a", UID: "uid"}, w, observed, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeavyValidAuthSecret: a tenant replaces its auth Secret's CA,
// client and server certificates with valid ones of its own making (it has the CA key), each
// carrying ~300 KiB of DNS names. pki.Valid accepts them and Renew keeps them, so Crossplane
// applies them back unchanged and they stay: every reconcile of that claim parses them, several
// times, under the Store's one mutex.
func BenchmarkHeavyValidAuthSecret(b *testing.B) {
	t0 := time.Now()
	hosts := pki.Hosts("sessions.team-a.svc.cluster.local", "sessions", "team-a")
	w := Want{Mode: cachev1alpha1.AuthModeClientCertificate, Now: t0, Subject: "team-a/sessions", Hosts: hosts}
	var names []string
	for i := 0; len(names)*22 < 180<<10; i++ {
		names = append(names, fmt.Sprintf("n%07d.padding.example", i))
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(5 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLen: 1, KeyUsage: x509.KeyUsageCertSign, DNSNames: names}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		b.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(eku x509.ExtKeyUsage, dns []string) (string, string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"}, NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(80 * 24 * time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{eku}, DNSNames: dns}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			b.Fatal(err)
		}
		kd, _ := x509.MarshalECPrivateKey(k)
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
	}
	kd, _ := x509.MarshalECPrivateKey(caKey)
	c := pki.Certificates{CA: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), CAKey: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))}
	c.Client, c.ClientKey = leaf(x509.ExtKeyUsageClientAuth, names)
	c.Server, c.ServerKey = leaf(x509.ExtKeyUsageServerAuth, append(hosts, names...))
	observed := stored(render.Auth{Mode: cachev1alpha1.AuthModeClientCertificate, Certificates: c, Salt: "0123456789abcdef0123"})
	size := 0
	for _, v := range observed.Data {
		size += len(v)
	}
	b.Logf("auth Secret data: %d KiB (a Secret may hold 1024)", size/1024)
	s := NewStore()
	got, err := s.Get(Owner{Namespace: "team-a", UID: "uid"}, w, observed, nil)
	if err != nil || got.Certificates != c {
		b.Fatalf("the tenant's certificates are not kept as they are (err %v)", err)
	}
	for b.Loop() {
		if _, err := s.Get(Owner{Namespace: "team-a", UID: "uid"}, w, observed, nil); err != nil {
			b.Fatal(err)
		}
	}
}
