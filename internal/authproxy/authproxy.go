// Package authproxy lets a client that cannot authenticate — the Prometheus memcached
// exporter — talk to a memcached that requires authentication. The proxy listens on the pod's
// loopback only, and for each connection it accepts it dials memcached and authenticates with
// the credentials the pod mounts, the way memcached asks (Protocol):
//
//   - text: memcached's text-protocol authentication (--auth-file) wants every connection to
//     start with a "set" whose data is "<username> <password>"; the exporter has no option for
//     that. The proxy sends it, then relays bytes both ways, unchanged.
//   - sasl: memcached with SASL (-S) speaks only the binary protocol, and the exporter speaks
//     only text. The proxy authenticates with SASL PLAIN, then answers the few text commands
//     the exporter sends (stats and its groups, version) by translating them into binary
//     requests, and refuses everything else: it reads statistics, never cache data.
//
// Anyone who can connect to the proxy is authenticated, so it must never listen beyond the
// pod: the renderer runs it on 127.0.0.1, where only the pod's own containers reach it.
//
// Unlike the rest of the repository, this package wraps errors with the standard library
// (fmt.Errorf with %w) rather than crossplane-runtime's errors package: the proxy's image runs
// in every pod with auth and metrics on, and crossplane-runtime's errors links apimachinery
// and klog, which make the binary ten times larger (32 MB instead of 3).
package authproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Credentials authenticate a connection to memcached.
type Credentials struct {
	Username, Password string
}

// LoadCredentials reads the files username and password of dir, where the pod mounts the
// auth Secret. Surrounding whitespace (a trailing newline a person typed) is not part of
// them.
func LoadCredentials(dir string) (Credentials, error) {
	var c Credentials
	for _, f := range []struct {
		name string
		to   *string
	}{{"username", &c.Username}, {"password", &c.Password}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name)) //nolint:gosec // The mounted Secret's files.
		if err != nil {
			return Credentials{}, fmt.Errorf("cannot read the %s: %w", f.name, err)
		}
		*f.to = strings.TrimSpace(string(b))
		if *f.to == "" || strings.ContainsAny(*f.to, " \t\r\n") {
			return Credentials{}, fmt.Errorf("%s in %s is empty or holds whitespace", f.name, dir)
		}
	}
	return c, nil
}

// ErrAuthentication is memcached refusing the credentials.
var ErrAuthentication = errors.New("memcached refused the credentials")

// Authenticate authenticates conn, a fresh connection to memcached, with c: it sends the
// "set" memcached's text-protocol authentication reads the credentials from and expects
// STORED. It reads nothing beyond the reply's line, so conn is ready for the client's
// commands afterwards. It honours conn's deadline.
func Authenticate(conn net.Conn, c Credentials) error {
	data := c.Username + " " + c.Password
	// The key and flags are ignored; memcached stores nothing.
	if _, err := io.WriteString(conn, "set auth 0 0 "+strconv.Itoa(len(data))+"\r\n"+data+"\r\n"); err != nil {
		return fmt.Errorf("cannot send the credentials: %w", err)
	}
	line, err := readLine(conn)
	if err != nil {
		return fmt.Errorf("cannot read memcached's answer to the credentials: %w", err)
	}
	if line != "STORED" {
		return fmt.Errorf("memcached answered %q: %w", line, ErrAuthentication)
	}
	return nil
}

// readLine reads one CRLF-terminated line a byte at a time, so that nothing after it is
// consumed from conn.
func readLine(conn net.Conn) (string, error) {
	var b strings.Builder
	one := make([]byte, 1)
	for b.Len() < 1024 {
		if _, err := conn.Read(one); err != nil {
			return b.String(), err
		}
		if one[0] == '\n' {
			return strings.TrimSuffix(b.String(), "\r"), nil
		}
		b.WriteByte(one[0])
	}
	return b.String(), errors.New("the answer is longer than 1024 bytes")
}

// A Proxy relays connections to Upstream, authenticating each with Credentials.
type Proxy struct {
	// Upstream is memcached's plaintext address, host:port.
	Upstream string
	// Protocol is how Upstream authenticates clients; empty is ProtocolText.
	Protocol Protocol
	// Credentials authenticate every connection to Upstream.
	Credentials Credentials
	// Timeout bounds dialing and authenticating one connection and, with ProtocolSASL,
	// answering one command.
	Timeout time.Duration
	// IdleTimeout is how long, with ProtocolSASL, a client's connection may wait between
	// commands before the proxy closes it and its connection to memcached: the exporter
	// opens a connection every scrape and leaves it open. Zero is one minute.
	IdleTimeout time.Duration
	// Log reports a connection that could not be relayed, or a command refused; nil logs
	// nothing.
	Log func(msg string, keysAndValues ...any)

	serving atomic.Bool
}

// Serving reports whether Serve is accepting connections; the health listener says so.
func (p *Proxy) Serving() bool { return p.serving.Load() }

// Serve accepts connections on l until ctx is done, then closes l and every connection it
// relays, and returns once they are all closed. A Protocol it does not know closes l and is
// an error at once.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	switch p.Protocol {
	case "", ProtocolText, ProtocolSASL:
	default:
		_ = l.Close()
		return fmt.Errorf("unknown upstream protocol %q: want %q or %q", p.Protocol, ProtocolText, ProtocolSASL)
	}
	var wg sync.WaitGroup
	conns := &connSet{m: map[net.Conn]struct{}{}}
	stop := context.AfterFunc(ctx, func() {
		_ = l.Close()
		conns.closeAll()
	})
	defer stop()
	p.serving.Store(true)
	defer p.serving.Store(false)
	for {
		c, err := l.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cannot accept connections: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.relay(c, conns)
		}()
	}
}

// relay authenticates a connection to Upstream for client, then copies bytes both ways until
// either side is done or, with ProtocolSASL, translates the client's commands. A client whose
// upstream connection cannot be authenticated is closed before it reads anything, so it sees
// memcached as unreachable, which is what it is to it.
func (p *Proxy) relay(client net.Conn, conns *connSet) {
	defer client.Close() //nolint:errcheck // Nothing to do about it.
	if !conns.add(client) {
		return
	}
	defer conns.remove(client)
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	up, err := net.DialTimeout("tcp", p.Upstream, timeout)
	if err != nil {
		p.log("Cannot reach memcached", "upstream", p.Upstream, "error", err.Error())
		return
	}
	defer up.Close() //nolint:errcheck // Nothing to do about it.
	if !conns.add(up) {
		return
	}
	defer conns.remove(up)
	_ = up.SetDeadline(time.Now().Add(timeout))
	if p.Protocol == ProtocolSASL {
		if err := AuthenticateSASL(up, p.Credentials); err != nil {
			p.log("Cannot authenticate to memcached", "upstream", p.Upstream, "protocol", "sasl", "error", err.Error())
			return
		}
		idle := p.IdleTimeout
		if idle <= 0 {
			idle = time.Minute
		}
		p.translate(client, up, timeout, idle)
		return
	}
	if err := Authenticate(up, p.Credentials); err != nil {
		p.log("Cannot authenticate to memcached", "upstream", p.Upstream, "error", err.Error())
		return
	}
	_ = up.SetDeadline(time.Time{})

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Pass the end of one direction on, and let the other finish.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(up, client)
	go pipe(client, up)
	<-done
	<-done
}

func (p *Proxy) log(msg string, kv ...any) {
	if p.Log != nil {
		p.Log(msg, kv...)
	}
}

// connSet tracks open connections, so that stopping closes them.
type connSet struct {
	mu     sync.Mutex
	m      map[net.Conn]struct{}
	closed bool
}

// add tracks c, or reports false when the set is closed already.
func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.m[c] = struct{}{}
	return true
}

func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.m {
		_ = c.Close()
	}
}

// Listen listens on addr, which must be a loopback address: the proxy authenticates whoever
// connects, so it must not be reachable from outside the pod.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("invalid listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listen address %q is not a loopback IP: the proxy must only be reachable from inside the pod", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", addr, err)
	}
	return l, nil
}
