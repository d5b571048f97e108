package memcachedload

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/memcachedtest"
)

// stats reads memcached's counters the way the mode allows: over the text protocol (after
// the password, over TLS) or, with SASL, over the binary protocol.
type stats func(t *testing.T) map[string]int64

// target is a real memcached in one mode: how a run reaches it with the right credentials,
// the same with wrong ones, and how to read its counters.
type target struct {
	good Config
	// bad, when set, must be refused; with refused, as memcached refusing credentials
	// (ErrRefused), not a failed handshake.
	bad     *Config
	refused bool
	stats   stats
}

// TestRunModes runs the real memcached in each way the product runs it and drives it with
// the generator: with the right credentials every connection authenticates and memcached's own
// counters (cmd_get, get_hits, cmd_set) grow by exactly what the report counts; with a wrong
// password the run is refused as memcached refusing the credentials, and without a client
// certificate by the TLS handshake, before it starts. Plain has nothing to refuse.
func TestRunModes(t *testing.T) {
	modes := map[string]func(t *testing.T) target{
		"plain":                         plainTarget,
		"tls with a client certificate": clientCertificateTarget,
		"password":                      passwordTarget,
		"sasl":                          saslTarget,
	}
	for name, start := range modes {
		t.Run(name, func(t *testing.T) {
			tg := start(t)
			before := tg.stats(t)
			cfg := tg.good
			cfg.Connections, cfg.Duration, cfg.Keys, cfg.ValueSize, cfg.GetRatio, cfg.Prefill = 4, 300*time.Millisecond, 500, 100, 0.9, true
			r, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("run with the right credentials: %v", err)
			}
			after := tg.stats(t)
			t.Logf("%s: %s", name, &r)
			if r.Errors != 0 || r.Gets == 0 || r.Sets == 0 {
				t.Fatalf("want gets and sets without errors, got %d gets, %d sets, %d errors (%v)", r.Gets, r.Sets, r.Errors, r.FirstError)
			}
			if r.Hits != r.Gets {
				t.Errorf("%d of %d gets hit, want every one: the key space was prefilled", r.Hits, r.Gets)
			}
			for stat, want := range map[string]int64{"cmd_get": r.Gets, "get_hits": r.Hits, "cmd_set": r.Sets + r.Prefilled} {
				if got := after[stat] - before[stat]; got != want {
					t.Errorf("memcached's %s grew by %d, want the %d the report counts", stat, got, want)
				}
			}
			if n := r.Latency.Count(); n != r.Gets+r.Sets {
				t.Errorf("the histogram holds %d latencies, want one per answered request (%d)", n, r.Gets+r.Sets)
			}
			if p50, p99 := r.Latency.Quantile(0.5), r.Latency.Quantile(0.99); p50 <= 0 || p99 < p50 || p99 > time.Second {
				t.Errorf("p50 %v, p99 %v: want 0 < p50 ≤ p99 < 1s on loopback", p50, p99)
			}

			if tg.bad == nil {
				return
			}
			bad := *tg.bad
			bad.Connections, bad.Duration, bad.Keys = 1, 100*time.Millisecond, 10
			if r, err := Run(context.Background(), bad); err == nil {
				t.Errorf("a run with wrong credentials was not refused: %s", &r)
			} else if tg.refused && !errors.Is(err, ErrRefused) {
				t.Errorf("a run with a wrong password failed with %v, want ErrRefused", err)
			} else {
				t.Logf("wrong credentials: %v", err)
			}
		})
	}
}

// TestRunRate checks that a run at a bounded rate sends that rate, not more, and that
// Fill and Count see every item a small cache holds.
func TestRunRate(t *testing.T) {
	tg := plainTarget(t)
	cfg := tg.good
	cfg.Connections, cfg.Duration, cfg.Keys, cfg.ValueSize, cfg.GetRatio, cfg.Rate = 2, time.Second, 100, 10, 0.5, 500
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Gets + r.Sets; got < 450 || got > 510 {
		t.Errorf("%d requests in a second at 500 a second: %s", got, &r)
	}

	cfg.Rate, cfg.KeyPrefix = 0, "fill:"
	n, _, err := Fill(context.Background(), cfg, 0, 1000)
	if err != nil || n != 1000 {
		t.Fatalf("fill set %d of 1000: %v", n, err)
	}
	if hits, err := Count(context.Background(), cfg, 0, 1100); err != nil || hits != 1000 {
		t.Errorf("count: %d hits of the 1,000 filled and 100 never set, %v; want 1000", hits, err)
	}
}

func plainTarget(t *testing.T) target {
	port := strconv.Itoa(memcachedtest.FreePort(t))
	memcachedtest.Start(t, []string{"--listen=127.0.0.1", "--port=" + port, "--memory-limit=64"}, "127.0.0.1:"+port)
	addr := "127.0.0.1:" + port
	cfg := Config{Address: addr}
	return target{good: cfg, stats: textStats(addr, nil, "", "")}
}

func passwordTarget(t *testing.T) target {
	dir := memcachedtest.Dir(t)
	memcachedtest.WriteFile(t, filepath.Join(dir, "auth-file"), []byte("loader:s3cret\n"))
	port := strconv.Itoa(memcachedtest.FreePort(t))
	memcachedtest.Start(t, []string{"--listen=127.0.0.1", "--port=" + port, "--auth-file=" + filepath.Join(dir, "auth-file")}, "127.0.0.1:"+port)
	addr := "127.0.0.1:" + port
	good := Config{Address: addr, Auth: AuthPassword, Username: "loader", Password: "s3cret"}
	bad := good
	bad.Password = "s3creT"
	return target{good: good, bad: &bad, refused: true, stats: textStats(addr, nil, "loader", "s3cret")}
}

func clientCertificateTarget(t *testing.T) target {
	dir := memcachedtest.Dir(t)
	ca, caKey := newCert(t, nil, nil, "load CA", 0)
	server, serverKey := newCert(t, ca, caKey, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	client, clientKey := newCert(t, ca, caKey, "loader", x509.ExtKeyUsageClientAuth)
	memcachedtest.WriteFile(t, filepath.Join(dir, "tls.crt"), pemCert(server))
	memcachedtest.WriteFile(t, filepath.Join(dir, "tls.key"), pemKey(t, serverKey))
	memcachedtest.WriteFile(t, filepath.Join(dir, "ca.crt"), pemCert(ca))
	port := strconv.Itoa(memcachedtest.FreePort(t))
	memcachedtest.Start(t, []string{"--listen=127.0.0.1", "--port=" + port, "--enable-ssl",
		"--extended=ssl_chain_cert=" + filepath.Join(dir, "tls.crt"), "--extended=ssl_key=" + filepath.Join(dir, "tls.key"),
		"--extended=ssl_ca_cert=" + filepath.Join(dir, "ca.crt"), "--extended=ssl_verify_mode=2"}, "127.0.0.1:"+port)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	good := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{client.Raw}, PrivateKey: clientKey}}}
	bad := good.Clone()
	bad.Certificates = nil
	addr := "127.0.0.1:" + port
	return target{good: Config{Address: addr, TLS: good}, bad: &Config{Address: addr, TLS: bad}, stats: textStats(addr, good, "", "")}
}

func saslTarget(t *testing.T) target {
	addr := memcachedtest.StartSASL(t, map[string]string{"loader@memcached": "s3cret"})
	good := Config{Address: addr, Auth: AuthSASL, Username: "loader@memcached", Password: "s3cret"}
	bad := good
	bad.Password = "s3creT"
	return target{good: good, bad: &bad, refused: true, stats: func(t *testing.T) map[string]int64 {
		t.Helper()
		c, err := dial(context.Background(), good)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() //nolint:errcheck // Read-only.
		return binaryStats(t, c.(*binaryConn))
	}}
}

// textStats reads `stats` over the text protocol, after TLS and the password when given.
func textStats(addr string, cfg *tls.Config, user, password string) stats {
	return func(t *testing.T) map[string]int64 {
		t.Helper()
		nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if cfg != nil {
			nc = tls.Client(nc, cfg)
		}
		c := memcachedtest.NewConn(nc)
		defer c.Close() //nolint:errcheck // Read-only.
		if user != "" {
			if got, err := c.Auth(user, password); err != nil || got != "STORED" {
				t.Fatalf("authenticating to read stats: %q, %v", got, err)
			}
		}
		s, err := c.Stats("")
		if err != nil {
			t.Fatal(err)
		}
		return numbers(s)
	}
}

// binaryStats sends the binary protocol's stat request (opcode 0x10), whose answer is one
// packet a statistic and an empty one last.
func binaryStats(t *testing.T, b *binaryConn) map[string]int64 {
	t.Helper()
	_ = b.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := b.c.Write([]byte{0x80, 0x10, 23: 0}); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for {
		var h [24]byte
		if _, err := io.ReadFull(b.r, h[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(h[8:]))
		if _, err := io.ReadFull(b.r, body); err != nil {
			t.Fatal(err)
		}
		k := binary.BigEndian.Uint16(h[2:])
		if k == 0 {
			return numbers(out)
		}
		out[string(body[h[4]:int(h[4])+int(k)])] = string(body[int(h[4])+int(k):])
	}
}

func numbers(s map[string]string) map[string]int64 {
	out := map[string]int64{}
	for k, v := range s {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// newCert makes a certificate for name, signed by parent (self-signed, a CA, without one).
func newCert(t *testing.T, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, name string, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		if ip := net.ParseIP(name); ip != nil {
			tmpl.IPAddresses = []net.IP{ip}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		t.Fatal(errors.Wrap(err, "cannot make a certificate"))
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func pemKey(t *testing.T, k *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
