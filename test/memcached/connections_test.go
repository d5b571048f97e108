package memcached_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// ownMinimum is the smallest --conn-limit Debian's memcached 1.6.18 starts with, as the pod
// runs it (two listening sockets), for threads worker threads: it sets its open-file limit to
// the conn limit, has 4 files per thread and 8 more open when it checks, and exits unless the
// limit is two more than the 5 files per thread it reserves plus its listening sockets.
func ownMinimum(threads int) int { return max(4*threads+8, 5*threads+4) }

// ownVersion is the memcached whose own minimum ownMinimum is.
const ownVersion = "memcached 1.6.18"

// TestConnectionLimits starts the real memcached, with the rendered arguments, at the
// smallest spec.maxConnections resolve accepts for 1, 4, 16 and 64 threads, plaintext and
// with TLS and authentication, and checks that it serves the pod's own connections (the
// exporter's or the auth proxy's, the kubelet's two probes) and a dozen clients at once. It
// then shows that resolve's minimum is above memcached's own: memcached 1.6.18 starts at
// ownMinimum and exits one below it, so a claim below resolve's minimum, were it accepted,
// would crash-loop or serve nobody.
func TestConnectionLimits(t *testing.T) {
	onlyStdio(t)
	for _, threads := range []int32{1, 4, 16, 64} {
		accepted := int32(resolve.MinConnectionsFor(threads))
		t.Run(strconv.Itoa(int(threads))+"Threads", func(t *testing.T) {
			t.Run("AcceptedMinimum", func(t *testing.T) {
				m := memcached()
				m.Threads, m.MaxConnections = threads, accepted
				p := run(t, m, nil)
				served(t, p.public, 15, nil, func(addr string) *memcachedtest.Conn { return p.dial(t, addr) })
			})
			t.Run("AcceptedMinimumAuthAndTLS", func(t *testing.T) {
				m := memcached()
				m.Threads, m.MaxConnections = threads, accepted
				m.Auth = credentials(t)
				secret, ca := tlsSecret(t, m)
				s, errs := resolve.TLSSecret(nil, secret.Name, m.Namespace, render.Host(m), secret, time.Now())
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				m.TLS = s
				p := run(t, m, secret)
				// The pod's own: the auth proxy's connection on the loopback port, the
				// probes' on the public one.
				served(t, p.loopback, 3, m.Auth, func(addr string) *memcachedtest.Conn { return p.dial(t, addr) })
				served(t, p.public, 12, m.Auth, func(string) *memcachedtest.Conn { return p.dialTLS(t, ca) })
			})
			t.Run("OwnMinimum", func(t *testing.T) {
				out, err := exec.Command(memcachedtest.Binary(t), "--version").Output() //nolint:gosec // The test's own binary.
				if err != nil || strings.TrimSpace(string(out)) != ownVersion {
					t.Skipf("memcached's own minimum was measured on %s; this is %q (%v)", ownVersion, strings.TrimSpace(string(out)), err)
				}
				own := ownMinimum(int(threads))
				if int(accepted) < own+int(threads)+16 {
					t.Errorf("resolve accepts %d connections with %d threads, less than memcached's own minimum %d plus room for the pod's own connections and a dozen clients", accepted, threads, own)
				}
				m := memcached()
				m.Threads, m.MaxConnections = threads, int32(own)
				run(t, m, nil)
				m.MaxConnections = int32(own - 1)
				if msg := exits(t, m); !strings.Contains(msg, "Too many open files") && !strings.Contains(msg, "Maxconns setting is too low") {
					t.Errorf("memcached with --conn-limit=%d and %d threads exited saying %q; want Too many open files or Maxconns setting is too low", own-1, threads, msg)
				}
			})
		})
	}
}

// served opens n connections to addr at once with dial and checks that memcached answers
// each (authenticated with auth, unless nil): beyond its limit it answers "ERROR Too many
// open connections" and closes, or leaves the connection unaccepted.
func served(t *testing.T, addr string, n int, auth *render.Auth, dial func(string) *memcachedtest.Conn) {
	t.Helper()
	conns := make([]*memcachedtest.Conn, n)
	for i := range conns {
		conns[i] = dial(addr)
	}
	var wg sync.WaitGroup
	got := make([]string, n)
	for i, c := range conns {
		wg.Go(func() {
			if auth != nil {
				if v, err := c.Auth(auth.Username, auth.Password); err != nil || v != "STORED" {
					got[i] = "authenticating: " + v
					return
				}
			}
			v, err := c.Line("version")
			if err != nil {
				v = err.Error()
			}
			got[i] = v
		})
	}
	wg.Wait()
	for i, v := range got {
		if !strings.HasPrefix(v, "VERSION ") {
			t.Errorf("connection %d of %d at once to %s: %q, want VERSION", i+1, n, addr, v)
		}
	}
}

// exits runs memcached with m's rendered arguments and returns what it said when it
// exited, failing the test if it is still running after five seconds.
func exits(t *testing.T, m render.Memcached) string {
	t.Helper()
	args := render.Deployment(m).Spec.Template.Spec.Containers[0].Args
	port := strconv.Itoa(memcachedtest.FreePort(t))
	for i, a := range args {
		if strings.HasPrefix(a, "--port=") {
			args[i] = "--port=" + port
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, memcachedtest.Binary(t), args...) //nolint:gosec // The test's own arguments.
	if os.Geteuid() == 0 {
		// As memcachedtest.Start runs it: memcached refuses to run as root.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: memcachedtest.UID, Gid: memcachedtest.UID}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("memcached %v still runs after 5s; want it to exit", args)
	}
	if err == nil {
		t.Fatalf("memcached %v exited successfully; want a failure", args)
	}
	return strings.TrimSpace(out.String())
}

// onlyStdio makes sure that the memcached this test starts has stdin, stdout and stderr open
// and nothing else, as in a container: every other descriptor the test binary inherited
// (a CI runner's, a shell's) is marked close-on-exec, since each would take one of
// memcached's open files and move its minimum.
func onlyStdio(t *testing.T) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list open files: %v", err)
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
