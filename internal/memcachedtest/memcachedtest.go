// Package memcachedtest runs the real memcached — built by `make bin/memcached` from Debian's
// source package with the official image's configure flags, so that SASL from a password file
// works as in production — for tests, the way a rendered pod runs it: as UID and GID 11211
// when the test runs as root, reading files only that group may read. It also speaks just
// enough of memcached's text protocol to check what a client would see.
package memcachedtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// DefaultBinary is where Debian's memcached package installs memcached: the fallback outside
// make only, as it lacks SASL from a password file (MEMCACHED_SASL_PWDB).
const DefaultBinary = "/usr/bin/memcached"

// Binary is the memcached to run: $MEMCACHED_BIN (make test sets it to bin/memcached), or
// else, outside CI only, Debian's. Missing, it skips the test outside CI and fails it under CI
// (CI=true), where make must have built it.
func Binary(t testing.TB) string {
	t.Helper()
	p := os.Getenv("MEMCACHED_BIN")
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("MEMCACHED_BIN is not set: under CI the tests run bin/memcached, which make test builds and passes")
		}
		p = DefaultBinary
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("memcached not found at %s: `make test` builds it (make bin/memcached; its Debian build packages need root once)", p)
		}
		t.Skipf("memcached not found at %s: run `make bin/memcached` and set MEMCACHED_BIN to it (make test does both) to run this test", p)
	}
	return p
}

// UID is the user and group memcached runs as, as in the rendered pods (render.UID).
const UID = 11211

// Dir returns a new directory, removed when the test ends, that memcached's user may enter
// (t.TempDir's are for their owner only): where the test lays out the files a pod mounts.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "memcachedtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// WriteFile writes a file the way the kubelet projects a Secret into a pod with fsGroup UID
// and defaultMode 0440: owned by root (when the test is root) and group UID, readable by that
// group only.
func WriteFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o440); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(path, 0, UID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(path, 0o440); err != nil {
		t.Fatal(err)
	}
}

// FreePort returns a TCP port on 127.0.0.1 nobody listens on.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() //nolint:errcheck // Only its port was wanted.
	return l.Addr().(*net.TCPAddr).Port
}

// Start runs memcached with args until the test ends and waits until every address in
// waitFor accepts connections. As root it runs as UID:UID (memcached refuses to run as root
// without -u, and the pods never run it as root). It fails the test, with memcached's output,
// if memcached exits or does not listen within 10 seconds.
func Start(t testing.TB, args []string, waitFor ...string) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...) //nolint:gosec // The test's own arguments.
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: UID}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start memcached %v: %v", args, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for _, addr := range waitFor {
		for {
			select {
			case err := <-exited:
				exited <- err
				t.Fatalf("memcached %v exited: %v\n%s", args, err, out.String())
			default:
			}
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				_ = c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("memcached %v does not listen on %s after 10s: %v\n%s", args, addr, err, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Conn is a connection speaking memcached's text protocol.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// NewConn wraps c (a net.Conn or a *tls.Conn), with a deadline of 5 seconds for everything
// done on it.
func NewConn(c net.Conn) *Conn {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return &Conn{c: c, r: bufio.NewReader(c)}
}

// NoDeadline lifts the connection's deadline, for a benchmark that uses it longer.
func (c *Conn) NoDeadline() { _ = c.c.SetDeadline(time.Time{}) }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Line sends one command line and returns the first line of the answer, without CRLF. An
// error means the connection failed or was closed: a TLS listener does that to plaintext.
func (c *Conn) Line(cmd string) (string, error) {
	if _, err := io.WriteString(c.c, cmd+"\r\n"); err != nil {
		return "", err
	}
	return c.readLine()
}

func (c *Conn) readLine() (string, error) {
	l, err := c.r.ReadString('\n')
	return strings.TrimRight(l, "\r\n"), err
}

// Auth sends memcached's text-protocol authentication and returns its answer: STORED, or
// CLIENT_ERROR authentication failure.
func (c *Conn) Auth(user, password string) (string, error) {
	return c.Set("auth", user+" "+password)
}

// Set stores value under key and returns memcached's answer.
func (c *Conn) Set(key, value string) (string, error) {
	if _, err := fmt.Fprintf(c.c, "set %s 0 0 %d\r\n%s\r\n", key, len(value), value); err != nil {
		return "", err
	}
	return c.readLine()
}

// Get returns the value under key, or the first line of memcached's answer as an error when
// it holds none.
func (c *Conn) Get(key string) (string, error) {
	if _, err := io.WriteString(c.c, "get "+key+"\r\n"); err != nil {
		return "", err
	}
	head, err := c.readLine()
	if err != nil {
		return "", err
	}
	f := strings.Fields(head)
	if len(f) != 4 || f[0] != "VALUE" {
		return "", fmt.Errorf("get %s: %s", key, head)
	}
	n, err := strconv.Atoi(f[3])
	if err != nil {
		return "", err
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return "", err
	}
	if end, err := c.readLine(); err != nil || end != "END" {
		return "", fmt.Errorf("get %s: want END, got %q (%v)", key, end, err)
	}
	return string(buf[:n]), nil
}

// Stats returns the answer of "stats settings" (or "stats" when what is empty) as a map.
func (c *Conn) Stats(what string) (map[string]string, error) {
	cmd := "stats"
	if what != "" {
		cmd += " " + what
	}
	if _, err := io.WriteString(c.c, cmd+"\r\n"); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for {
		l, err := c.readLine()
		if err != nil {
			return nil, err
		}
		if l == "END" {
			return out, nil
		}
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 || f[0] != "STAT" {
			return nil, fmt.Errorf("%s: %s", cmd, l)
		}
		out[f[1]] = f[2]
	}
}
