package authproxy

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/example/function-memcached/internal/memcachedtest"
)

// memcachedWithAuth runs the real memcached requiring user:password and returns its address.
func memcachedWithAuth(t *testing.T, user, password string) string {
	t.Helper()
	file := filepath.Join(memcachedtest.Dir(t), "auth", "auth-file")
	memcachedtest.WriteFile(t, file, []byte(user+":"+password+"\n"))
	addr := "127.0.0.1:" + strconv.Itoa(memcachedtest.FreePort(t))
	memcachedtest.Start(t, []string{"--listen=127.0.0.1", "--port=" + addr[len("127.0.0.1:"):], "--auth-file=" + file}, addr)
	return addr
}

func TestAuthenticate(t *testing.T) {
	addr := memcachedWithAuth(t, "memcached", "s3cret")
	cases := map[string]struct {
		reason string
		creds  Credentials
		want   error
	}{
		"Right":         {reason: "The mounted credentials authenticate.", creds: Credentials{"memcached", "s3cret"}},
		"WrongPassword": {reason: "memcached refuses another password.", creds: Credentials{"memcached", "guess"}, want: ErrAuthentication},
		"WrongUser":     {reason: "memcached refuses another user.", creds: Credentials{"admin", "s3cret"}, want: ErrAuthentication},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close() //nolint:errcheck // A test connection.
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if err := Authenticate(c, tc.creds); !errors.Is(err, tc.want) {
				t.Fatalf("%s\nAuthenticate(...) = %v, want %v", tc.reason, err, tc.want)
			}
			if tc.want != nil {
				return
			}
			// The connection is ready for commands, nothing of the answer left unread.
			mc := memcachedtest.NewConn(c)
			if got, err := mc.Line("version"); err != nil || got[:8] != "VERSION " {
				t.Errorf("%s\nversion after Authenticate: %q, %v", tc.reason, got, err)
			}
		})
	}
}

// TestProxy relays a client that cannot authenticate — gomemcache, like the exporter — to
// the real memcached requiring authentication.
func TestProxy(t *testing.T) {
	addr := memcachedWithAuth(t, "memcached", "s3cret")

	// Without the proxy, memcached refuses the client.
	direct := memcache.New(addr)
	if err := direct.Set(&memcache.Item{Key: "k", Value: []byte("v")}); err == nil {
		t.Fatal("a client without credentials could set a key directly: memcached is not requiring authentication")
	}

	proxied := func(t *testing.T, creds Credentials) (string, func()) {
		t.Helper()
		l, err := Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- (&Proxy{Upstream: addr, Credentials: creds, Timeout: 2 * time.Second}).Serve(ctx, l) }()
		return l.Addr().String(), func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve returned %v after its context ended, want nil", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Serve did not return within 5s of its context ending")
			}
		}
	}

	t.Run("RightCredentials", func(t *testing.T) {
		p, stop := proxied(t, Credentials{"memcached", "s3cret"})
		c := memcache.New(p)
		c.Timeout = 2 * time.Second
		if err := c.Set(&memcache.Item{Key: "greeting", Value: []byte("hello")}); err != nil {
			t.Fatalf("set through the proxy: %v", err)
		}
		it, err := c.Get("greeting")
		if err != nil || string(it.Value) != "hello" {
			t.Fatalf("get through the proxy: %v, %v", it, err)
		}
		// What the exporter asks for.
		conn, err := net.Dial("tcp", p)
		if err != nil {
			t.Fatal(err)
		}
		stats, err := memcachedtest.NewConn(conn).Stats("")
		_ = conn.Close()
		if err != nil || stats["curr_items"] != "1" {
			t.Errorf("stats through the proxy: curr_items %q, %v", stats["curr_items"], err)
		}
		// A held-open connection does not keep the proxy from stopping.
		held, err := net.Dial("tcp", p)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close() //nolint:errcheck // A test connection.
		stop()
	})

	t.Run("WrongCredentials", func(t *testing.T) {
		p, stop := proxied(t, Credentials{"memcached", "guess"})
		defer stop()
		c := memcache.New(p)
		c.Timeout = 2 * time.Second
		if err := c.Set(&memcache.Item{Key: "k", Value: []byte("v")}); err == nil {
			t.Fatal("set through a proxy with the wrong credentials succeeded")
		}
	})

	t.Run("NoMemcached", func(t *testing.T) {
		l, err := Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		down := "127.0.0.1:" + strconv.Itoa(memcachedtest.FreePort(t))
		go func() {
			_ = (&Proxy{Upstream: down, Credentials: Credentials{"a", "b"}, Timeout: time.Second}).Serve(ctx, l)
		}()
		c := memcache.New(l.Addr().String())
		c.Timeout = 2 * time.Second
		if _, err := c.Get("k"); err == nil || errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("get through a proxy whose memcached is down: %v, want a connection error", err)
		}
	})
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:0", "localhost:0"} {
		if l, err := Listen(addr); err == nil {
			_ = l.Close()
			t.Errorf("Listen(%q) succeeded: the proxy authenticates whoever connects, so it must listen on a loopback IP only", addr)
		}
	}
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen(127.0.0.1:0): %v", err)
	}
	_ = l.Close()
}

func TestLoadCredentials(t *testing.T) {
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	cases := map[string]struct {
		files map[string]string
		want  Credentials
		err   bool
	}{
		"Mounted":         {files: map[string]string{"username": "memcached", "password": "abc"}, want: Credentials{"memcached", "abc"}},
		"TrailingNewline": {files: map[string]string{"username": "memcached\n", "password": "abc\n"}, want: Credentials{"memcached", "abc"}},
		"NoPassword":      {files: map[string]string{"username": "memcached"}, err: true},
		"Empty":           {files: map[string]string{"username": "memcached", "password": ""}, err: true},
		"Space":           {files: map[string]string{"username": "memcached", "password": "a b"}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := LoadCredentials(write(t, tc.files))
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("LoadCredentials(...) = %+v, %v; want %+v, error %t", got, err, tc.want, tc.err)
			}
		})
	}
}
