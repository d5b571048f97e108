package load

import (
	"context"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Process is a function server started by the load tool, so that its PID (and so its CPU and
// memory) is known.
type Process struct {
	// Address the function listens on.
	Address string
	cmd     *exec.Cmd
}

// PID of the server.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Start runs a function binary on a free loopback port with the supplied extra arguments
// (for example --insecure, or --tls-server-certs-dir=...), and waits until it accepts
// connections.
func Start(ctx context.Context, binary string, args ...string) (*Process, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Wrap(err, "cannot find a free port")
	}
	addr := l.Addr().String()
	_ = l.Close()

	// Every target's binary is read from disk alike: how much of a file one page fault maps
	// depends on how its pages came into the page cache (the same bytes just linked mapped
	// 2 MiB more than when read back), which made one target's resident memory seem heavier
	// than another's for nothing it does (docs/performance.md).
	dropPageCache(binary)

	cmd := exec.Command(binary, append([]string{"--address=" + addr, "--metrics-address="}, args...)...) //nolint:gosec // The operator names the binary.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, errors.Wrapf(err, "cannot start %s", binary)
	}
	p := &Process{Address: addr, cmd: cmd}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop()
			return nil, errors.Wrapf(err, "%s did not listen on %s", binary, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dropPageCache asks the kernel to drop path's pages from the page cache, so that running it
// reads it from disk. Best effort: pages a running process maps stay, and an error changes
// nothing but the measurement's fairness.
func dropPageCache(path string) {
	f, err := os.Open(path) //nolint:gosec // The operator names the binary.
	if err != nil {
		return
	}
	defer f.Close() //nolint:errcheck // Read-only.
	_ = f.Sync()    // Dirty pages (a binary just written) are not dropped.
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// Stop terminates the server and waits for it to exit.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
