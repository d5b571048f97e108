package memcached_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	creds "github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// day is a day, in the arithmetic of certificate lifetimes.
const day = 24 * time.Hour

// issue returns the credentials of mode the function and the provider give m, generated for
// rotation at now (package credentials, asked as fn asks it): new ones, or, with observed (the
// Memcached whose auth Secret is observed), those it holds, renewed if due at now.
func issue(t testing.TB, m render.Memcached, mode, rotation string, now time.Time, observed *render.Memcached) *render.Auth {
	t.Helper()
	var secret *creds.Secret
	if observed != nil {
		s := render.AuthSecret(*observed)
		secret = creds.ObservedSecret(s.Data, s.Annotations)
	}
	m.Auth = &render.Auth{Mode: mode, Rotation: rotation}
	want := creds.WantFor(m, now) // As the function and the provider ask.
	var store *creds.Store        // Remembers nothing: each call is one reconcile's.
	a, err := store.Get(creds.Owner{Namespace: m.Namespace, UID: m.Namespace + "/" + m.Name}, want, secret, nil)
	if err != nil {
		t.Fatalf("credentials of mode %s at %s: %v", mode, now, err)
	}
	return &a
}

// withCertificates is m with the exporter on and clients authenticating with the client
// certificates of a, memcached serving tenant's pair or, when nil, the issued server
// certificate (as fn does when the claim names no TLS Secret).
func withCertificates(m render.Memcached, a *render.Auth, tenant *render.TLS) render.Memcached {
	m.Auth, m.Metrics = a, true
	m.TLS = tenant
	if tenant == nil {
		m.TLS = render.IssuedTLS(a.Certificates)
	}
	return m
}

// clientTLS is what an application builds from its connection Secret cd in the
// ClientCertificate mode: it trusts ca.crt (roots instead, when not nil), presents tls.crt
// with tls.key, and expects memcached's certificate to name host.
func clientTLS(t testing.TB, cd map[string][]byte, roots []byte) *tls.Config {
	t.Helper()
	if roots == nil {
		roots = cd[render.ConnectionCA]
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(roots) {
		t.Fatal("no CA certificate to verify memcached's with")
	}
	pair, err := tls.X509KeyPair(cd[corev1.TLSCertKey], cd[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatalf("the connection details' tls.crt and tls.key: %v", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: string(cd["host"]), MinVersion: tls.VersionTLS12}
}

// setGet stores a random value with gomemcache, dialing addr with cfg, and reads it back.
func setGet(addr string, cfg *tls.Config) error {
	c := memcache.New(addr)
	c.Timeout = 2 * time.Second
	c.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		return (&tls.Dialer{Config: cfg}).DialContext(ctx, network, address)
	}
	defer c.Close() //nolint:errcheck // Only what it read matters.
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	value := hex.EncodeToString(b)
	if err := c.Set(&memcache.Item{Key: "greeting", Value: []byte(value)}); err != nil {
		return errors.Wrap(err, "set")
	}
	it, err := c.Get("greeting")
	if err != nil {
		return errors.Wrap(err, "get")
	}
	if string(it.Value) != value {
		return errors.Errorf("get: %q, want %q", it.Value, value)
	}
	return nil
}

// expectRefused checks that memcached at addr refuses a TLS client with cfg with a TLS alert:
// in the handshake or, with TLS 1.3, where the server checks the client's certificate once
// the client has finished its part, as the first thing the client reads. (A client that
// wrote first could see the connection reset instead.) An error of the client's own, such as
// its refusing memcached's certificate, is not memcached refusing it.
func expectRefused(t *testing.T, addr string, cfg *tls.Config, who string) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
	if err == nil {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c.Read(make([]byte, 1))
		_ = c.Close()
		var timeout net.Error
		if errors.As(err, &timeout) && timeout.Timeout() {
			t.Errorf("%s: memcached completed the handshake and sent no alert, want the connection refused", who)
			return
		}
	}
	if err == nil || !strings.Contains(err.Error(), "remote error: tls:") {
		t.Errorf("%s: %v, want memcached to refuse the handshake with a TLS alert", who, err)
	}
}

// exporterOf is m's rendered exporter container with p's mounts and ports translated.
func exporterOf(t *testing.T, p *pod, m render.Memcached) corev1.Container {
	t.Helper()
	for _, c := range render.Deployment(m).Spec.Template.Spec.Containers {
		if c.Name == render.ExporterContainerName {
			c.Args = p.args(c)
			return c
		}
	}
	t.Fatal("the rendered pod has no exporter")
	return corev1.Container{}
}

// TestClientCertificate runs memcached as the ClientCertificate mode renders it, serving the
// server certificate the function issues or a tenant's pair, and checks that an application
// configured from its connection details alone stores and reads a key, that memcached refuses
// a client without a certificate and one whose certificate another Memcached's CA signed, and
// that the exporter, with its rendered arguments, reads memcached's statistics.
func TestClientCertificate(t *testing.T) {
	base := memcached()
	tenantSecret, tenantCA := tlsSecret(t, base)
	noCASecret := tenantSecret.DeepCopy()
	delete(noCASecret.Data, render.ConnectionCA)
	type args struct {
		// secret is the tenant's TLS Secret spec.tls.secretName names; nil for none.
		secret *corev1.Secret
		// roots is what the application trusts memcached's certificate with, when the
		// connection details carry no ca.crt.
		roots []byte
	}
	cases := map[string]struct {
		reason string
		args   args
	}{
		"IssuedServerCertificate": {
			reason: "Without a TLS Secret, memcached serves the certificate the function issues, which the connection details' ca.crt verifies.",
		},
		"TenantServerCertificate": {
			reason: "With a tenant's pair, memcached serves it and still admits the clients of the Memcached's own CA; ca.crt is the tenant's CA.",
			args:   args{secret: tenantSecret},
		},
		"TenantServerCertificateWithoutCA": {
			reason: "A tenant's pair without ca.crt is verified with a CA the application knows otherwise; the exporter, which cannot know it, still reads memcached.",
			args:   args{secret: noCASecret, roots: tenantCA},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := issue(t, base, cachev1alpha1.AuthModeClientCertificate, "", time.Now(), nil)
			var tenant *render.TLS
			if tc.args.secret != nil {
				served, errs := resolve.TLSSecret(nil, tc.args.secret.Name, base.Namespace, render.Host(base), tc.args.secret, time.Now())
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				tenant = served
			}
			m := withCertificates(base, a, tenant)
			p := run(t, m, tc.args.secret)
			cd := render.ConnectionDetails(m)
			for _, k := range []string{render.ConnectionUsername, render.ConnectionPassword} {
				if _, ok := cd[k]; ok {
					t.Errorf("%s\nthe connection details hold %s, which this mode has no use for", tc.reason, k)
				}
			}

			cfg := clientTLS(t, cd, tc.args.roots)
			if err := setGet(p.public, cfg); err != nil {
				t.Fatalf("%s\nan application with the connection details' certificate: %v", tc.reason, err)
			}
			noCert := cfg.Clone()
			noCert.Certificates = nil
			expectRefused(t, p.public, noCert, "a client without a certificate")
			other := base
			other.Name = "orders"
			stranger := cfg.Clone()
			stranger.Certificates = clientTLS(t, render.ConnectionDetails(withCertificates(other,
				issue(t, other, cachev1alpha1.AuthModeClientCertificate, "", time.Now(), nil), nil)), nil).Certificates
			expectRefused(t, p.public, stranger, "a client with a certificate from another Memcached's CA")
			if got, err := p.dial(t, p.public).Line("version"); err == nil {
				t.Errorf("%s\na plaintext client got %q, want the connection closed", tc.reason, got)
			}
			// Memcached's containers never read the CA's key: no file of theirs holds it.
			if _, err := os.Stat(filepath.Join(p.dir, "auth", render.CAKey)); !os.IsNotExist(err) {
				t.Errorf("%s\nthe pod mounts the CA's key (%v)", tc.reason, err)
			}

			scrapeExporter(t, exporterOf(t, p, m), p.public, "1")
		})
	}
}

// TestClientCertificateLeafRenewal renews the certificates the CA signed as the function does
// once they are due, and checks that no application notices: memcached, running since before
// the renewal, admits the old client certificate and the renewed one alike, since the CA
// bundle, all memcached reads of the credentials, is unchanged, and so is the credentials
// digest. A client certificate's renewal alone changes nothing the pods read, so nothing
// restarts; a server certificate's rolls the replicas, and memcached, restarted with it,
// admits both clients too, the old connection details' ca.crt verifying it.
func TestClientCertificateLeafRenewal(t *testing.T) {
	base := memcached()
	type args struct {
		// issued is how long ago the certificates were issued; renewed how long ago the client
		// certificate was last renewed (zero: never).
		issued, renewed time.Duration
	}
	type want struct {
		// serverRenewed is whether the server certificate is renewed, and the replicas roll.
		serverRenewed bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"ClientCertificate": {
			reason: "At 61 days, the client certificate is due and the server's is not: nothing the pods read changes.",
			args:   args{issued: 61 * day},
		},
		"ClientAndServerCertificates": {
			reason: "At 244 days, the server certificate is due too, with the client's, renewed 61 days ago.",
			args:   args{issued: 244 * day, renewed: 61 * day},
			want:   want{serverRenewed: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := time.Now()
			certificates := func(at time.Time, observed *render.Memcached) render.Memcached {
				return withCertificates(base, issue(t, base, cachev1alpha1.AuthModeClientCertificate, "", at, observed), nil)
			}
			old := certificates(now.Add(-tc.args.issued), nil)
			if tc.args.renewed != 0 {
				old = certificates(now.Add(-tc.args.renewed), &old)
			}
			p := run(t, old, nil)

			renewed := certificates(now, &old)
			o, r := old.Auth.Certificates, renewed.Auth.Certificates
			if r.Client == o.Client || r.ClientKey != o.ClientKey || r.CA != o.CA || r.ServerKey != o.ServerKey {
				t.Fatalf("%s\nwant the client certificate renewed with its key, and the CA and the server's key kept", tc.reason)
			}
			if got := r.Server != o.Server; got != tc.want.serverRenewed {
				t.Fatalf("%s\nserver certificate renewed: %t, want %t", tc.reason, got, tc.want.serverRenewed)
			}
			if got, want := render.CredentialsDigest(*renewed.Auth), render.CredentialsDigest(*old.Auth); got != want {
				t.Errorf("%s\nthe credentials digest changed from %s to %s: a client certificate's renewal would restart memcached", tc.reason, want, got)
			}
			before, after := render.Deployment(old).Spec.Template.Annotations, render.Deployment(renewed).Spec.Template.Annotations
			if rolls := !maps.Equal(before, after); rolls != tc.want.serverRenewed {
				t.Errorf("%s\nthe replicas roll: %t (pod template annotations %v, then %v), want %t", tc.reason, rolls, before, after, tc.want.serverRenewed)
			}

			clients := map[string]*tls.Config{
				"old client certificate":     clientTLS(t, render.ConnectionDetails(old), nil),
				"renewed client certificate": clientTLS(t, render.ConnectionDetails(renewed), nil),
			}
			for who, cfg := range clients {
				if err := setGet(p.public, cfg); err != nil {
					t.Errorf("%s\nmemcached running since before the renewal, the %s: %v", tc.reason, who, err)
				}
			}
			if !tc.want.serverRenewed {
				return
			}
			restarted := run(t, renewed, nil)
			for who, cfg := range clients {
				if err := setGet(restarted.public, cfg); err != nil {
					t.Errorf("%s\nmemcached restarted with the renewed server certificate, the %s: %v", tc.reason, who, err)
				}
			}
		})
	}
}

// TestClientCertificateCARenewal renews the CA, due after three years and four months, and
// checks that memcached, restarted with the renewed bundle (the credentials digest changes
// for it), still admits a client certificate the previous CA signed, beside the renewed one;
// and that a new rotation, which issues a new CA, refuses both. The Memcached's CA was issued
// three and a half years ago; its leaves were last renewed 70 days ago, before the CA was
// due, so the old client certificate, which the old CA signed, is valid today.
func TestClientCertificateCARenewal(t *testing.T) {
	base := memcached()
	secret, _ := tlsSecret(t, base)
	type args struct {
		// secret is the tenant's TLS Secret; nil serves the issued server certificate.
		secret *corev1.Secret
	}
	cases := map[string]struct {
		reason string
		args   args
	}{
		"TenantServerCertificate": {
			reason: "The renewal leaves a tenant's pair alone: an application that has not read its connection Secret since connects as before.",
			args:   args{secret: secret},
		},
		"IssuedServerCertificate": {
			reason: "The renewal re-signs the issued server certificate with the new CA and serves the new CA cross-signed by the old one after it: an application that has not read its connection Secret since (the old client certificate, the old ca.crt) connects as before.",
			args:   args{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var tenant *render.TLS
			if tc.args.secret != nil {
				served, errs := resolve.TLSSecret(nil, tc.args.secret.Name, base.Namespace, render.Host(base), tc.args.secret, time.Now())
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				tenant = served
			}
			certificates := func(rotation string, at time.Time, observed *render.Memcached) render.Memcached {
				return withCertificates(base, issue(t, base, cachev1alpha1.AuthModeClientCertificate, rotation, at, observed), tenant)
			}
			now := time.Now()
			first := certificates("", now.Add(-1278*day), nil)
			old := certificates("", now.Add(-70*day), &first)
			if old.Auth.Certificates.CA != first.Auth.Certificates.CA || old.Auth.Certificates.Client == first.Auth.Certificates.Client {
				t.Fatal("70 days ago, want the leaves renewed by the CA, not yet due")
			}
			renewed := certificates("", now, &old)
			if !strings.HasSuffix(renewed.Auth.Certificates.CA, old.Auth.Certificates.CA) || renewed.Auth.Certificates.CA == old.Auth.Certificates.CA {
				t.Fatal("today, want a new CA first in the bundle and the previous one after it")
			}
			if render.CredentialsDigest(*renewed.Auth) == render.CredentialsDigest(*old.Auth) {
				t.Errorf("%s\nthe credentials digest did not change with the CA bundle: memcached would not restart to load it", tc.reason)
			}

			p := run(t, renewed, tc.args.secret)
			oldClient := clientTLS(t, render.ConnectionDetails(old), nil)
			newClient := clientTLS(t, render.ConnectionDetails(renewed), nil)
			for who, cfg := range map[string]*tls.Config{"certificate the previous CA signed": oldClient, "renewed certificate": newClient} {
				if err := setGet(p.public, cfg); err != nil {
					t.Errorf("%s\nmemcached restarted with the renewed CA bundle, a client with the %s: %v", tc.reason, who, err)
				}
			}
			scrapeExporter(t, exporterOf(t, p, renewed), p.public, "1")

			rotated := certificates("2", now, &renewed)
			if k := rotated.Auth.Certificates.ClientKey; k == old.Auth.Certificates.ClientKey || k == renewed.Auth.Certificates.ClientKey {
				t.Fatal("a new rotation kept the client's key")
			}
			r := run(t, rotated, tc.args.secret)
			if err := setGet(r.public, clientTLS(t, render.ConnectionDetails(rotated), nil)); err != nil {
				t.Errorf("%s\nafter a new rotation, a client with its certificate: %v", tc.reason, err)
			}
			// The refused clients trust memcached's certificate, so that the refusal is memcached's.
			for who, cd := range map[string]map[string][]byte{
				"the previous rotation's certificate":         render.ConnectionDetails(renewed),
				"a certificate of the rotation's previous CA": render.ConnectionDetails(old),
			} {
				expectRefused(t, r.public, clientTLS(t, cd, render.ConnectionDetails(rotated)[render.ConnectionCA]),
					"after a new rotation, a client with "+who)
			}
		})
	}
}

// dialRaw connects to memcached's public address as a client does: over TLS verified with
// the connection details' ca.crt when memcached serves TLS.
func (p *pod) dialRaw(t *testing.T, m render.Memcached) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	if ca := render.ConnectionDetails(m)[render.ConnectionCA]; m.TLS != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", p.public,
			&tls.Config{RootCAs: pool, ServerName: render.Host(m), MinVersion: tls.VersionTLS12})
	} else {
		c, err = net.DialTimeout("tcp", p.public, 2*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSASL runs memcached as the SASL mode renders it (its arguments and environment, the
// password file and Cyrus SASL's configuration from the auth Secret), plaintext and with TLS,
// and checks what clients see: a binary-protocol client authenticating with SASL PLAIN and
// the connection details' username and password stores and reads a key; PLAIN is the only
// mechanism offered; a wrong password, and no authentication, are refused; a text-protocol
// client gets no answer; and the exporter, through the auth proxy as rendered, reads
// memcached's statistics, which it cannot without the proxy.
func TestSASL(t *testing.T) {
	base := memcached()
	base.Metrics, base.AuthProxyImage = true, "memcached-auth-proxy:test"
	secret, _ := tlsSecret(t, base)
	cases := map[string]struct {
		reason string
		secret *corev1.Secret
	}{
		"Plaintext": {reason: "Without TLS, SASL clients and the auth proxy reach memcached on its port."},
		"TLS": {
			reason: "With TLS, SASL clients authenticate over TLS and the auth proxy on the plaintext loopback listener.",
			secret: secret,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// run starts $MEMCACHED_BIN: one that reads SASL passwords from a file.
			t.Setenv("MEMCACHED_BIN", memcachedtest.SASLBinary(t))
			m := base
			m.Auth = issue(t, m, cachev1alpha1.AuthModeSASL, "", time.Now(), nil)
			if tc.secret != nil {
				served, errs := resolve.TLSSecret(nil, tc.secret.Name, m.Namespace, render.Host(m), tc.secret, time.Now())
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				m.TLS = served
			}
			p := run(t, m, tc.secret)
			cd := render.ConnectionDetails(m)
			user, password := string(cd[render.ConnectionUsername]), string(cd[render.ConnectionPassword])

			b := memcachedtest.NewBinaryConn(p.dialRaw(t, m))
			if mechs, s, err := b.SASLMechanisms(); err != nil || s != memcachedtest.StatusOK || strings.TrimSpace(mechs) != "PLAIN" {
				t.Errorf("%s\nSASL mechanisms: %q, %v, %v; want PLAIN only", tc.reason, mechs, s, err)
			}
			if s, err := b.SASLPlain(user, password); err != nil || s != memcachedtest.StatusOK {
				t.Fatalf("%s\nSASL PLAIN with the connection details' username %q and password: %v, %v", tc.reason, user, s, err)
			}
			if s, err := b.Set("greeting", "hello"); err != nil || s != memcachedtest.StatusOK {
				t.Fatalf("%s\nset after authenticating: %v, %v", tc.reason, s, err)
			}
			if v, s, err := b.Get("greeting"); err != nil || s != memcachedtest.StatusOK || v != "hello" {
				t.Fatalf("%s\nget after authenticating: %q, %v, %v", tc.reason, v, s, err)
			}

			wrong := memcachedtest.NewBinaryConn(p.dialRaw(t, m))
			if s, err := wrong.SASLPlain(user, wrongPassword(password)); err != nil || s != memcachedtest.StatusAuthError {
				t.Errorf("%s\nSASL PLAIN with a wrong password: %v, %v; want %v", tc.reason, s, err, memcachedtest.StatusAuthError)
			}
			if v, s, err := wrong.Get("greeting"); err != nil || s != memcachedtest.StatusAuthError {
				t.Errorf("%s\nget after a wrong password: %q, %v, %v; want %v", tc.reason, v, s, err, memcachedtest.StatusAuthError)
			}
			if v, s, err := memcachedtest.NewBinaryConn(p.dialRaw(t, m)).Get("greeting"); err != nil || s != memcachedtest.StatusAuthError {
				t.Errorf("%s\nget without authenticating: %q, %v, %v; want %v", tc.reason, v, s, err, memcachedtest.StatusAuthError)
			}
			// memcached reads a text command and answers nothing, not even an error: a
			// second is long enough to tell.
			raw := p.dialRaw(t, m)
			text := memcachedtest.NewConn(raw)
			_ = raw.SetDeadline(time.Now().Add(time.Second))
			if got, err := text.Line("get greeting"); err == nil || got != "" {
				t.Errorf("%s\na text-protocol client got %q (%v), want no answer", tc.reason, got, err)
			}

			var proxy corev1.Container
			for _, c := range render.Deployment(m).Spec.Template.Spec.Containers {
				if c.Name == render.AuthProxyContainerName {
					proxy = c
				}
			}
			if !slices.Contains(proxy.Args, "--upstream-protocol=sasl") {
				t.Fatalf("the auth proxy runs with %v, want --upstream-protocol=sasl", proxy.Args)
			}
			addr, c := p.startAuthProxy(t, proxy)
			stats, err := memcachedtest.NewConn(c).Stats("")
			_ = c.Close()
			if err != nil || stats["pid"] == "" {
				t.Fatalf("%s\nstats through the auth proxy, as the exporter asks: %v, %v", tc.reason, stats, err)
			}
			exporter := exporterOf(t, p, m)
			scrapeExporter(t, exporter, addr, "1")
			// Pointed at memcached itself, the exporter gets nothing: that is why the proxy is
			// there.
			direct := p.public
			if m.TLS != nil {
				direct = p.loopback
			}
			scrapeExporter(t, exporter, direct, "0")
		})
	}
}
