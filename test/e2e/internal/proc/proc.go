// Package proc runs the end-to-end suite's components as local processes: each one logs to
// its own file, can be restarted in place (to play a crash), and is stopped by its PID.
//
// Every process is started in its own process group with a parent-death signal, and its PID
// is recorded in a file that `make e2e` reads after the tests, so that nothing outlives the
// suite: not a failed test, not a timed-out `go test`, not a Ctrl-C.
package proc

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// stopGrace is how long a process has to exit on SIGTERM before it is killed: long enough for
// an API server to drain, short enough that a hung one does not hold the suite.
const stopGrace = 10 * time.Second

// A Spec says how to start a process.
type Spec struct {
	// Name identifies the process in logs and errors; its log is <LogDir>/<Name>.log.
	Name string
	// Path is the binary, Args its arguments, Env extra variables on top of os.Environ.
	Path string
	Args []string
	Env  []string
	// Dir is the working directory; empty means the caller's.
	Dir string
}

// A Process is a running (or stopped) component. Start, Stop and Restart may be called from
// any goroutine.
type Process struct {
	spec    Spec
	logPath string
	pids    *PIDFile

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts spec, appending its stdout and stderr to <logDir>/<name>.log and recording its
// PID in pids.
func Start(spec Spec, logDir string, pids *PIDFile) (*Process, error) {
	p := &Process{spec: spec, logPath: filepath.Join(logDir, spec.Name+".log"), pids: pids}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Name is the process's name.
func (p *Process) Name() string { return p.spec.Name }

// LogPath is the file the process writes to, across restarts.
func (p *Process) LogPath() string { return p.logPath }

// PID is the current process's ID, or 0 when it is stopped.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Exited returns a channel closed when the current process exits, and the error it exited
// with once it has.
func (p *Process) Exited() (<-chan struct{}, func() error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := p.done
	return done, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	}
}

func (p *Process) start() error {
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return errors.Wrapf(err, "cannot open the log of %s", p.spec.Name)
	}
	fmt.Fprintf(log, "==== %s: starting %s %s\n", time.Now().Format(time.RFC3339Nano), p.spec.Path, strings.Join(p.spec.Args, " "))

	cmd := exec.Command(p.spec.Path, p.spec.Args...) //nolint:gosec // The suite runs its own binaries.
	cmd.Dir = p.spec.Dir
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Own process group, so that Stop reaches any children; SIGKILL when the suite dies
	// without cleaning up (a go test timeout panics past every deferred call).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return errors.Wrapf(err, "cannot start %s", p.spec.Name)
	}
	if err := p.pids.Add(cmd.Process.Pid, p.spec.Name, p.spec.Path); err != nil {
		_ = cmd.Process.Kill()
		_ = log.Close()
		return err
	}

	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(log, "==== %s: %s exited: %v\n", time.Now().Format(time.RFC3339Nano), p.spec.Name, exitText(err))
		_ = log.Close()
		_ = p.pids.Remove(cmd.Process.Pid)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Stop sends SIGTERM to the process group, waits up to ten seconds, then sends SIGKILL. It
// is a no-op on a stopped process.
func (p *Process) Stop() error {
	return p.signalAndWait(syscall.SIGTERM, stopGrace)
}

// Kill kills the process group at once, the way a node failure or an OOM kill would.
func (p *Process) Kill() error {
	return p.signalAndWait(syscall.SIGKILL, stopGrace)
}

func (p *Process) signalAndWait(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	pid := cmd.Process.Pid
	_ = syscall.Kill(-pid, sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
	return nil
}

// Restart stops the process (SIGTERM) and starts it again with the same spec, appending to
// the same log.
func (p *Process) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.start()
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	return Tail(p.logPath, n)
}

// WaitReady polls ready every 200ms until it returns nil, ctx ends, or the process exits; the
// error names the process and carries the last error of ready and the tail of its log.
func (p *Process) WaitReady(ctx context.Context, ready func(context.Context) error) error {
	done, exitErr := p.Exited()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Errorf("%s not ready: %v; last lines of %s:\n%s", p.spec.Name, last, p.logPath, p.Tail(20))
		case <-done:
			return errors.Errorf("%s exited (%s) before it was ready; last lines of %s:\n%s", p.spec.Name, exitText(exitErr()), p.logPath, p.Tail(20))
		case <-t.C:
		}
	}
}

// WaitHealthy waits, for at most timeout, until GET url answers 200 OK through c
// (http.DefaultClient when nil), while the process runs: the one way the suite waits for a
// component's health or readiness endpoint.
func (p *Process) WaitHealthy(ctx context.Context, timeout time.Duration, c *http.Client, url string) error {
	if c == nil {
		c = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p.WaitReady(ctx, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		rsp, err := c.Do(req)
		if err != nil {
			return err
		}
		_ = rsp.Body.Close()
		if rsp.StatusCode != http.StatusOK {
			return errors.Errorf("GET %s: %s", url, rsp.Status)
		}
		return nil
	})
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Tail returns the last n lines of the file at path, or a note saying it cannot be read.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path) //nolint:gosec // The suite's own log files.
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A PIDFile records the PIDs of the processes that run, one "<pid> <name> <binary>" a line, so
// that a wrapper can kill what a crashed suite left behind: a PID whose command line still
// holds the binary's path, which a reused PID's would not.
type PIDFile struct {
	mu   sync.Mutex
	path string
	pids map[int]string
}

// NewPIDFile returns a PIDFile at path, replacing any file there.
func NewPIDFile(path string) (*PIDFile, error) {
	f := &PIDFile{path: path, pids: map[int]string{}}
	return f, f.write()
}

// Add records pid, the process's name and the path of its binary.
func (f *PIDFile) Add(pid int, name, binary string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pids[pid] = name + " " + binary
	return f.write()
}

// Remove forgets pid.
func (f *PIDFile) Remove(pid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pids, pid)
	return f.write()
}

func (f *PIDFile) write() error {
	var b strings.Builder
	for pid, name := range f.pids {
		b.WriteString(strconv.Itoa(pid) + " " + name + "\n")
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return errors.Wrap(err, "cannot write the PID file")
	}
	return errors.Wrap(os.Rename(tmp, f.path), "cannot write the PID file")
}

// userHZ is the kernel's clock-tick rate for /proc times, fixed at 100 on Linux.
const userHZ = 100

// CPUTime returns the user plus system CPU time the current process has used: what a
// scale scenario divides by the number of reconciles to cost each one.
func (p *Process) CPUTime() (time.Duration, error) {
	pid := p.PID()
	if pid == 0 {
		return 0, errors.Errorf("%s is not running", p.spec.Name)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, errors.Wrapf(err, "cannot read the CPU time of %s", p.spec.Name)
	}
	// Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, errors.Errorf("cannot parse /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.Errorf("cannot parse the CPU times in /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// PeakRSS returns the most resident memory the current process has had (VmHWM), in bytes:
// what a scale scenario reports as each component's memory at 1,000 claims.
func (p *Process) PeakRSS() (int64, error) {
	pid := p.PID()
	if pid == 0 {
		return 0, errors.Errorf("%s is not running", p.spec.Name)
	}
	return PeakRSSOf(pid)
}

// PeakRSSOf returns the VmHWM of process pid, in bytes.
func PeakRSSOf(pid int) (int64, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	b, err := os.ReadFile(path) //nolint:gosec // procfs.
	if err != nil {
		return 0, errors.Wrapf(err, "cannot read %s", path)
	}
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, errors.Wrapf(err, "cannot parse %s's VmHWM", path)
		}
	}
	return 0, errors.Errorf("no VmHWM in %s", path)
}
