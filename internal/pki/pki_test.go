package pki

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	t0    = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	hosts = Hosts("sessions.team-a.svc.cluster.local", "sessions", "team-a")
	day   = 24 * time.Hour
)

// verifies reports whether the roots of bundle admit the client certificate crt at now, as
// memcached with ssl_verify_mode=2 does.
func verifies(t *testing.T, bundle, crt string, usage x509.ExtKeyUsage, now time.Time, dns string) error {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(bundle)) {
		t.Fatal("the CA bundle holds no certificate")
	}
	chain, err := parseCertificates([]byte(crt))
	if err != nil || len(chain) == 0 {
		t.Fatalf("no certificate in %q: %v", crt, err)
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] { // What the server sends after its certificate.
		intermediates.AddCert(c)
	}
	_, err = chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{usage}, DNSName: dns})
	return err
}

func TestNew(t *testing.T) {
	c, err := New("team-a/sessions", hosts, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !Valid(c) {
		t.Fatal("New's certificates are not Valid")
	}
	if err := verifies(t, c.CA, c.Client, x509.ExtKeyUsageClientAuth, t0, ""); err != nil {
		t.Errorf("memcached would refuse the client certificate: %v", err)
	}
	for _, h := range hosts {
		if err := verifies(t, c.CA, c.Server, x509.ExtKeyUsageServerAuth, t0, h); err != nil {
			t.Errorf("a client reaching %s would refuse the server certificate: %v", h, err)
		}
	}
	if err := verifies(t, c.CA, c.Server, x509.ExtKeyUsageClientAuth, t0, ""); err == nil {
		t.Error("the server certificate is admitted as a client's: a client could present memcached's own")
	}
	if _, err := tls.X509KeyPair([]byte(c.Client), []byte(c.ClientKey)); err != nil {
		t.Errorf("tls.crt and tls.key are not a pair a client library loads: %v", err)
	}
	if got, want := RenewAt(c), t0.Add(-Backdate).Add(LeafValidity*2/3+Backdate*2/3).Truncate(time.Second); got.Sub(want).Abs() > time.Second {
		t.Errorf("RenewAt = %s, want the leaves' two-thirds point %s", got, want)
	}
	other, err := New("team-b/sessions", hosts, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifies(t, c.CA, other.Client, x509.ExtKeyUsageClientAuth, t0, ""); err == nil {
		t.Error("one Memcached's CA admits another's client certificate")
	}
}

func TestRenew(t *testing.T) {
	c, err := New("team-a/sessions", hosts, t0)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		changed, sameCA, sameClientKey, sameServer bool
		cas                                        int
		oldClientAdmitted, oldBundleVerifiesServer bool
	}
	cases := map[string]struct {
		reason string
		at     time.Time
		want   want
	}{
		"NotDue": {
			reason: "Before the leaves' renewal point nothing changes: no reconcile changes what clients hold.",
			at:     t0.Add(59 * day),
			want:   want{changed: false, sameCA: true, sameClientKey: true, sameServer: true, cas: 1, oldClientAdmitted: true, oldBundleVerifiesServer: true},
		},
		"LeavesDue": {
			reason: "After 60 of 90 days the client certificate is renewed with its key, by the same CA: memcached's bundle does not change, the old certificate is admitted until it expires, and the server certificate, which a renewal would roll the replicas for, lasts a year.",
			at:     t0.Add(61 * day),
			want:   want{changed: true, sameCA: true, sameClientKey: true, sameServer: true, cas: 1, oldClientAdmitted: true, oldBundleVerifiesServer: true},
		},
		"ServerDue": {
			reason: "After eight of twelve months the server certificate is renewed with its key too.",
			at:     t0.Add(245 * day),
			want:   want{changed: true, sameCA: true, sameClientKey: true, sameServer: false, cas: 1, oldClientAdmitted: false, oldBundleVerifiesServer: true},
		},
		"CADue": {
			reason: "After two thirds of its life the CA is renewed, and its predecessor stays in the bundle, so that a client certificate it signed is admitted until that certificate expires; the server certificate the new CA signs comes with the new CA cross-signed by the old, so that a client verifying with the old bundle accepts it.",
			at:     t0.Add(CAValidity * 2 / 3).Add(day),
			want:   want{changed: true, sameCA: false, sameClientKey: true, cas: 2, oldClientAdmitted: true, oldBundleVerifiesServer: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := c
			if name == "CADue" {
				// A client certificate issued just before the CA's renewal, still valid after.
				if old, _, err = Renew(c, "team-a/sessions", hosts, tc.at.Add(-10*day)); err != nil {
					t.Fatal(err)
				}
			}
			got, changed, err := Renew(old, "team-a/sessions", hosts, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			bundle, _ := parseCertificates([]byte(got.CA))
			oldBundle, _ := parseCertificates([]byte(old.CA))
			g := want{
				changed:                 changed,
				sameCA:                  bundle[0].Equal(oldBundle[0]),
				sameClientKey:           got.ClientKey == old.ClientKey && got.ServerKey == old.ServerKey,
				sameServer:              got.Server == old.Server,
				cas:                     len(bundle),
				oldClientAdmitted:       verifies(t, got.CA, old.Client, x509.ExtKeyUsageClientAuth, tc.at, "") == nil,
				oldBundleVerifiesServer: verifies(t, old.CA, got.Server, x509.ExtKeyUsageServerAuth, tc.at, hosts[0]) == nil,
			}
			if diff := cmp.Diff(tc.want, g, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nRenew(...): -want, +got:\n%s", tc.reason, diff)
			}
			if err := verifies(t, got.CA, got.Client, x509.ExtKeyUsageClientAuth, tc.at, ""); err != nil {
				t.Errorf("the renewed client certificate is refused: %v", err)
			}
			if err := verifies(t, got.CA, got.Server, x509.ExtKeyUsageServerAuth, tc.at, hosts[0]); err != nil {
				t.Errorf("the renewed server certificate is refused: %v", err)
			}
			if !RenewAt(got).After(tc.at) {
				t.Errorf("RenewAt = %s is not after the renewal at %s: every call would renew again", RenewAt(got), tc.at)
			}
		})
	}
}

// TestRotationRefusesOldClients: a new rotation is a new CA, without its predecessor, so
// that a leaked client certificate stops working.
func TestRotationRefusesOldClients(t *testing.T) {
	old, err := New("team-a/sessions", hosts, t0)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := New("team-a/sessions", hosts, t0.Add(day))
	if err != nil {
		t.Fatal(err)
	}
	if err := verifies(t, rotated.CA, old.Client, x509.ExtKeyUsageClientAuth, t0.Add(day), ""); err == nil {
		t.Error("after a rotation the old client certificate is still admitted")
	}
	if rotated.ClientKey == old.ClientKey {
		t.Error("a rotation kept the client key")
	}
}

func TestValid(t *testing.T) {
	c, err := New("team-a/sessions", hosts, t0)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New("team-a/other", hosts, t0)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		change func(*Certificates)
		want   bool
	}{
		"AsIssued":      {reason: "What New issues is kept.", change: func(*Certificates) {}, want: true},
		"NoCA":          {reason: "Without a CA nothing can be renewed.", change: func(c *Certificates) { c.CA = "" }, want: false},
		"ForeignCAKey":  {reason: "A CA key that is not the CA's signs nothing memcached admits.", change: func(c *Certificates) { c.CAKey = other.CAKey }, want: false},
		"ForeignClient": {reason: "A client key that is not its certificate's is no pair.", change: func(c *Certificates) { c.ClientKey = other.ClientKey }, want: false},
		"LeafAsCA":      {reason: "A leaf in the CA's place is no CA.", change: func(c *Certificates) { c.CA, c.CAKey = c.Client, c.ClientKey }, want: false},
		"Garbage":       {reason: "A hand-edited PEM is replaced.", change: func(c *Certificates) { c.Server = "-----BEGIN CERTIFICATE-----\nbm90\n-----END CERTIFICATE-----\n" }, want: false},
		"Oversized": {reason: "A value larger than MaxPEM was written by hand, perhaps to make every call parse a megabyte: replaced unparsed.", change: func(c *Certificates) {
			for len(c.CA) <= MaxPEM {
				c.CA += c.CA
			}
		}, want: false},
		"TooManyCAs": {reason: "A bundle longer than MaxCAs is not one Renew made.", change: func(c *Certificates) {
			c.CA += c.CA + c.CA + c.CA
		}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			changed := c
			tc.change(&changed)
			if got := Valid(changed); got != tc.want {
				t.Errorf("%s\nValid(...) = %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}
