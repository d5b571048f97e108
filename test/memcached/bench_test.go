package memcached_test

import (
	"testing"
	"time"

	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// BenchmarkMemcached measures what authentication and TLS cost a client of the real memcached
// run with the rendered arguments: a get on an open connection (RoundTrip), and a new
// connection with its TLS handshake and authentication, then one get (Connect). Over
// loopback, so these are memcached's and the handshake's own costs, without a network.
func BenchmarkMemcached(b *testing.B) {
	for _, mode := range []string{"plain", "auth", "tls", "auth+tls"} {
		b.Run(mode, func(b *testing.B) {
			m := memcached()
			var ca []byte
			if mode == "auth" || mode == "auth+tls" {
				m.Auth = credentials(b)
			}
			var p *pod
			if mode == "tls" || mode == "auth+tls" {
				secret, c := tlsSecret(b, m)
				served, errs := resolve.TLSSecret(nil, secret.Name, m.Namespace, render.Host(m), secret, time.Now())
				if len(errs) > 0 {
					b.Fatal(errs)
				}
				m.TLS, ca = served, c
				p = run(b, m, secret)
			} else {
				p = run(b, m, nil)
			}
			connect := func() *memcachedtest.Conn {
				var c *memcachedtest.Conn
				if m.TLS != nil {
					c = p.dialTLS(b, ca)
				} else {
					c = p.dial(b, p.public)
				}
				if m.Auth != nil {
					if got, err := c.Auth(m.Auth.Username, m.Auth.Password); err != nil || got != "STORED" {
						b.Fatalf("auth: %q, %v", got, err)
					}
				}
				return c
			}
			c := connect()
			if got, err := c.Set("k", "value"); err != nil || got != "STORED" {
				b.Fatalf("set: %q, %v", got, err)
			}
			b.Run("RoundTrip", func(b *testing.B) {
				c.NoDeadline()
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
	}
}
