package memcached_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
)

// BenchmarkAuthModes measures what the ClientCertificate and SASL modes cost a client of the
// real memcached run as they are rendered, as BenchmarkMemcached does for the password and
// TLS: a get on an open connection (RoundTrip), and a new connection with its handshake and
// authentication, then one get (Connect). ClientCertificate runs with the server certificate
// the function issues; SASL over plaintext, with the binary protocol SASL requires.
func BenchmarkAuthModes(b *testing.B) {
	b.Run("client-certificate", func(b *testing.B) {
		m := memcached()
		m = withCertificates(m, issue(b, m, cachev1alpha1.AuthModeClientCertificate, "", time.Now(), nil), nil)
		m.Metrics = false
		p := run(b, m, nil)
		cfg := clientTLS(b, render.ConnectionDetails(m), nil)
		connect := func() *memcachedtest.Conn {
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", p.public, cfg)
			if err != nil {
				b.Fatalf("TLS handshake with the client certificate: %v", err)
			}
			return memcachedtest.NewConn(c)
		}
		c := connect()
		defer func() { _ = c.Close() }()
		if got, err := c.Set("k", "value"); err != nil || got != "STORED" {
			b.Fatalf("set: %q, %v", got, err)
		}
		c.NoDeadline()
		b.Run("RoundTrip", func(b *testing.B) {
			for b.Loop() {
				if _, err := c.Get("k"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Connect", func(b *testing.B) {
			for b.Loop() {
				nc := connect()
				if _, err := nc.Get("k"); err != nil {
					b.Fatal(err)
				}
				_ = nc.Close()
			}
		})
	})
	b.Run("sasl", func(b *testing.B) {
		memcachedtest.SASLBinary(b) // Only a build with the SASL password file runs this mode.
		m := memcached()
		m.Auth = issue(b, m, cachev1alpha1.AuthModeSASL, "", time.Now(), nil)
		p := run(b, m, nil)
		connect := func() *memcachedtest.BinaryConn {
			nc, err := net.DialTimeout("tcp", p.public, 2*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			c := memcachedtest.NewBinaryConn(nc)
			if st, err := c.SASLPlain(m.Auth.Username, m.Auth.Password); err != nil || st != 0 {
				b.Fatalf("SASL PLAIN: %v, %v", st, err)
			}
			return c
		}
		c := connect()
		defer func() { _ = c.Close() }()
		if st, err := c.Set("k", "value"); err != nil || st != 0 {
			b.Fatalf("set: %v, %v", st, err)
		}
		c.NoDeadline()
		b.Run("RoundTrip", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := c.Get("k"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Connect", func(b *testing.B) {
			for b.Loop() {
				nc := connect()
				if _, _, err := nc.Get("k"); err != nil {
					b.Fatal(err)
				}
				_ = nc.Close()
			}
		})
	})
}
