// Package memcachedload drives a running memcached as its clients do and measures what it
// serves: N connections for a fixed time, closed-loop or at a bounded rate, a mix of gets and
// sets over a fixed key space with values of a fixed size, in each way the product's replicas
// are reached — the text protocol plain or over TLS (with a client certificate when memcached
// asks for one), after the text protocol's password authentication (--auth-file), or SASL
// PLAIN over the binary protocol. It reports gets and sets a second and latency percentiles
// from a histogram of microseconds. Latency is measured from when a request was due, not when
// it was sent, so a server that falls behind a fixed rate shows it (no coordinated omission).
// Debian's memcaslap speaks neither TLS nor any authentication, hence this package.
package memcachedload

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Auth is how a connection authenticates after it is set up.
type Auth int

const (
	// AuthNone sends requests straight away, in the text protocol.
	AuthNone Auth = iota
	// AuthPassword sends memcached's text-protocol authentication, a "set" whose data is
	// "<username> <password>", then speaks the text protocol.
	AuthPassword
	// AuthSASL authenticates with SASL PLAIN and speaks the binary protocol, the only one
	// memcached speaks with SASL on.
	AuthSASL
)

// String names a for reports.
func (a Auth) String() string {
	switch a {
	case AuthPassword:
		return "password"
	case AuthSASL:
		return "sasl"
	}
	return "none"
}

// Config is one load run.
type Config struct {
	// Address of memcached, host:port.
	Address string
	// TLS, when set, wraps every connection; a client certificate goes in its Certificates.
	TLS *tls.Config
	// Auth, Username and Password: how each connection authenticates.
	Auth               Auth
	Username, Password string
	// Connections is how many connections run at once, each one request at a time.
	Connections int
	// Duration bounds the timed part of Run.
	Duration time.Duration
	// Rate is the requests a second over all connections; 0 runs closed-loop, each
	// connection sending its next request when the last one is answered.
	Rate float64
	// Keys is the size of the key space; ValueSize the bytes of every value set.
	Keys, ValueSize int
	// GetRatio is the share of gets among requests (0.9: nine gets for one set).
	GetRatio float64
	// Prefill sets every key once before the timed part, so that gets hit; not counted in
	// the report's sets.
	Prefill bool
	// KeyPrefix starts every key; "memcachedload:" when empty.
	KeyPrefix string
	// Seed makes the sequence of keys and operations repeatable.
	Seed uint64
}

// Report is what a run measured.
type Report struct {
	// Gets, Hits and Sets count the answered requests of the timed part; Prefilled the sets
	// before it.
	Gets, Hits, Sets, Prefilled int64
	// Errors counts requests that failed; a connection stops at its first. FirstError is it.
	Errors     int64
	FirstError error
	// Elapsed is how long the timed part ran.
	Elapsed time.Duration
	// Latency counts every answered request of the timed part, Get and Set each kind's.
	Latency, Get, Set Histogram
}

// GetsPerSecond is the rate of answered gets.
func (r *Report) GetsPerSecond() float64 { return perSecond(r.Gets, r.Elapsed) }

// SetsPerSecond is the rate of answered sets.
func (r *Report) SetsPerSecond() float64 { return perSecond(r.Sets, r.Elapsed) }

func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// String is the report in one line.
func (r *Report) String() string {
	return fmt.Sprintf("%.0f gets/s (%d hits of %d), %.0f sets/s, p50 %v p99 %v p99.9 %v max %v, %d errors in %.1fs",
		r.GetsPerSecond(), r.Hits, r.Gets, r.SetsPerSecond(), r.Latency.Quantile(0.5), r.Latency.Quantile(0.99),
		r.Latency.Quantile(0.999), r.Latency.Max(), r.Errors, r.Elapsed.Seconds())
}

func (c *Config) key(i int) string {
	p := c.KeyPrefix
	if p == "" {
		p = "memcachedload:"
	}
	return p + strconv.Itoa(i)
}

// Run connects and authenticates every connection, then prefills if asked, then sends the
// mix of gets and sets for cfg.Duration. It returns an error when a connection cannot be set
// up or authenticated (wrong credentials, a TLS handshake memcached refuses) or the
// configuration is unusable; request failures during the run are counted in the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	switch {
	case cfg.Connections < 1 || cfg.Keys < 1 || cfg.ValueSize < 0 || cfg.Duration <= 0:
		return Report{}, errors.Errorf("want at least one connection, one key and a duration, have %d, %d and %v", cfg.Connections, cfg.Keys, cfg.Duration)
	case cfg.GetRatio < 0 || cfg.GetRatio > 1:
		return Report{}, errors.Errorf("get ratio %v is not between 0 and 1", cfg.GetRatio)
	}
	conns, err := dialAll(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	defer closeAll(conns)
	value := make([]byte, cfg.ValueSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	var rep Report
	if cfg.Prefill {
		if err := each(conns, func(i int, c conn) error {
			for k := i; k < cfg.Keys; k += len(conns) {
				if err := c.set(cfg.key(k), value); err != nil {
					return errors.Wrap(err, "cannot prefill")
				}
			}
			return nil
		}); err != nil {
			return Report{}, err
		}
		rep.Prefilled = int64(cfg.Keys)
	}
	parts := make([]Report, len(conns))
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(len(conns)) / cfg.Rate * float64(time.Second))
	}
	start := time.Now()
	end := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			p := &parts[i]
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i))) //nolint:gosec // A load mix, not a secret.
			// Each connection starts its schedule at its own offset within the interval.
			due := start.Add(interval * time.Duration(i) / time.Duration(len(conns)))
			for n := 0; ; n++ {
				if interval > 0 {
					if due.After(end) {
						return
					}
					if wait := time.Until(due); wait > 0 {
						select {
						case <-ctx.Done():
							return
						case <-time.After(wait):
						}
					}
				} else {
					due = time.Now()
					if due.After(end) || ctx.Err() != nil {
						return
					}
				}
				k := cfg.key(rng.IntN(cfg.Keys))
				var err error
				if rng.Float64() < cfg.GetRatio {
					var hit bool
					if hit, err = c.get(k); err == nil {
						p.Gets++
						if hit {
							p.Hits++
						}
						p.Get.Record(time.Since(due))
					}
				} else if err = c.set(k, value); err == nil {
					p.Sets++
					p.Set.Record(time.Since(due))
				}
				if err != nil {
					p.Errors++
					p.FirstError = err
					return
				}
				due = due.Add(interval)
			}
		})
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)
	for i := range parts {
		p := &parts[i]
		rep.Gets += p.Gets
		rep.Hits += p.Hits
		rep.Sets += p.Sets
		rep.Errors += p.Errors
		if rep.FirstError == nil {
			rep.FirstError = p.FirstError
		}
		rep.Get.Merge(&p.Get)
		rep.Set.Merge(&p.Set)
	}
	rep.Latency.Merge(&rep.Get)
	rep.Latency.Merge(&rep.Set)
	return rep, nil
}

// Fill sets keys [from, to) in order, spread over cfg.Connections, at cfg.Rate sets a second
// (as fast as memcached answers when 0), and returns how many it set and how long it took:
// what fills a cache to find how many items it holds.
func Fill(ctx context.Context, cfg Config, from, to int) (int64, time.Duration, error) {
	conns, err := dialAll(ctx, cfg)
	if err != nil {
		return 0, 0, err
	}
	defer closeAll(conns)
	value := make([]byte, cfg.ValueSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	start := time.Now()
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(len(conns)) / cfg.Rate * float64(time.Second))
	}
	counts := make([]int64, len(conns))
	err = each(conns, func(i int, c conn) error {
		due := start
		for k := from + i; k < to; k += len(conns) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if interval > 0 {
				if wait := time.Until(due); wait > 0 {
					time.Sleep(wait)
				}
				due = due.Add(interval)
			}
			if err := c.set(cfg.key(k), value); err != nil {
				return errors.Wrapf(err, "cannot set key %d", k)
			}
			counts[i]++
		}
		return nil
	})
	var n int64
	for _, c := range counts {
		n += c
	}
	return n, time.Since(start), err
}

// Count gets keys [from, to), spread over cfg.Connections, and returns how many hit: the
// items a cache still holds after a Fill.
func Count(ctx context.Context, cfg Config, from, to int) (int64, error) {
	conns, err := dialAll(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer closeAll(conns)
	hits := make([]int64, len(conns))
	err = each(conns, func(i int, c conn) error {
		for k := from + i; k < to; k += len(conns) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			hit, err := c.get(cfg.key(k))
			if err != nil {
				return errors.Wrapf(err, "cannot get key %d", k)
			}
			if hit {
				hits[i]++
			}
		}
		return nil
	})
	var n int64
	for _, h := range hits {
		n += h
	}
	return n, err
}

// each runs f on every connection at once and returns the first error.
func each(conns []conn, f func(i int, c conn) error) error {
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { errs[i] = f(i, c) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func dialAll(ctx context.Context, cfg Config) ([]conn, error) {
	n := max(cfg.Connections, 1)
	conns := make([]conn, 0, n)
	for range n {
		c, err := dial(ctx, cfg)
		if err != nil {
			closeAll(conns)
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

func closeAll(conns []conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// conn is one connection in the protocol its Auth needs.
type conn interface {
	get(key string) (hit bool, err error)
	set(key string, value []byte) error
	Close() error
}

// ErrRefused is memcached refusing the credentials.
var ErrRefused = errors.New("memcached refused the credentials")

// dial sets up one connection: TCP, TLS with its handshake, authentication.
func dial(ctx context.Context, cfg Config) (conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", cfg.Address)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot connect to %s", cfg.Address)
	}
	if t, ok := nc.(*net.TCPConn); ok {
		_ = t.SetNoDelay(true)
	}
	if cfg.TLS != nil {
		tc := tls.Client(nc, cfg.TLS)
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = nc.Close()
			return nil, errors.Wrapf(err, "TLS handshake with %s", cfg.Address)
		}
		nc = tc
	}
	// A TLS 1.3 server refuses a client certificate after the handshake: the first read
	// fails. Authentication (or the first request) finds it, under a deadline.
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	var c conn
	switch cfg.Auth {
	case AuthSASL:
		b := &binaryConn{c: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}
		if err := b.saslPlain(cfg.Username, cfg.Password); err != nil {
			_ = nc.Close()
			return nil, err
		}
		c = b
	default:
		t := &textConn{c: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}
		if cfg.Auth == AuthPassword {
			data := cfg.Username + " " + cfg.Password
			line, err := t.storage("set", "auth", []byte(data))
			if err != nil {
				_ = nc.Close()
				return nil, errors.Wrap(err, "cannot authenticate")
			}
			if line != "STORED" {
				_ = nc.Close()
				return nil, errors.Wrapf(ErrRefused, "password: %s", line)
			}
		} else if _, err := t.version(); err != nil {
			_ = nc.Close()
			return nil, errors.Wrapf(err, "no answer to version from %s", cfg.Address)
		}
		c = t
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

// textConn speaks memcached's text protocol.
type textConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func (t *textConn) Close() error { return t.c.Close() }

func (t *textConn) line() (string, error) {
	l, err := t.r.ReadSlice('\n')
	if err != nil {
		return "", err
	}
	if len(l) < 2 || l[len(l)-2] != '\r' {
		return "", errors.Errorf("a line without CRLF: %q", l)
	}
	return string(l[:len(l)-2]), nil
}

func (t *textConn) version() (string, error) {
	if _, err := t.w.WriteString("version\r\n"); err != nil {
		return "", err
	}
	if err := t.w.Flush(); err != nil {
		return "", err
	}
	return t.line()
}

func (t *textConn) storage(cmd, key string, value []byte) (string, error) {
	t.w.WriteString(cmd)                      //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteByte(' ')                        //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteString(key)                      //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteString(" 0 0 ")                  //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteString(strconv.Itoa(len(value))) //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteString("\r\n")                   //nolint:errcheck // Flush returns the writer's error.
	t.w.Write(value)                          //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteString("\r\n")                   //nolint:errcheck // Flush returns the writer's error.
	if err := t.w.Flush(); err != nil {
		return "", err
	}
	return t.line()
}

func (t *textConn) set(key string, value []byte) error {
	l, err := t.storage("set", key, value)
	if err != nil {
		return err
	}
	if l != "STORED" {
		return errors.Errorf("set %s: %s", key, l)
	}
	return nil
}

func (t *textConn) get(key string) (bool, error) {
	t.w.WriteString("get ") //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteString(key)    //nolint:errcheck // Flush returns the writer's error.
	t.w.WriteString("\r\n") //nolint:errcheck // Flush returns the writer's error.
	if err := t.w.Flush(); err != nil {
		return false, err
	}
	head, err := t.line()
	if err != nil {
		return false, err
	}
	if head == "END" {
		return false, nil
	}
	// VALUE <key> <flags> <bytes>
	sp := strings.LastIndexByte(head, ' ')
	n, err := strconv.Atoi(head[sp+1:])
	if !strings.HasPrefix(head, "VALUE "+key+" ") || sp < 0 || err != nil || n < 0 {
		return false, errors.Errorf("get %s: %q", key, head)
	}
	if _, err := t.r.Discard(n + 2); err != nil {
		return false, err
	}
	if end, err := t.line(); err != nil || end != "END" {
		return false, errors.Errorf("get %s: want END, got %q (%v)", key, end, err)
	}
	return true, nil
}

// binaryConn speaks memcached's binary protocol.
type binaryConn struct {
	c      net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	opaque uint32
	hdr    [24]byte
}

func (b *binaryConn) Close() error { return b.c.Close() }

// Binary-protocol opcodes and statuses (memcached's protocol_binary.h).
const (
	opGet         = 0x00
	opSet         = 0x01
	opSASLAuth    = 0x21
	statusOK      = 0x00
	statusMissing = 0x01
	statusAuth    = 0x20
)

// do sends one request and reads its answer's status, discarding its body.
func (b *binaryConn) do(op byte, extras []byte, key string, value []byte) (uint16, error) {
	b.opaque++
	var h [24]byte
	h[0], h[1] = 0x80, op
	binary.BigEndian.PutUint16(h[2:], uint16(len(key))) //nolint:gosec // Keys are short.
	h[4] = byte(len(extras))
	binary.BigEndian.PutUint32(h[8:], uint32(len(extras)+len(key)+len(value))) //nolint:gosec // Bounded by memcached's item size.
	binary.BigEndian.PutUint32(h[12:], b.opaque)
	b.w.Write(h[:])      //nolint:errcheck // Flush returns the writer's error.
	b.w.Write(extras)    //nolint:errcheck // Flush returns the writer's error.
	b.w.WriteString(key) //nolint:errcheck // Flush returns the writer's error.
	b.w.Write(value)     //nolint:errcheck // Flush returns the writer's error.
	if err := b.w.Flush(); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(b.r, b.hdr[:]); err != nil {
		return 0, err
	}
	if b.hdr[0] != 0x81 || b.hdr[1] != op || binary.BigEndian.Uint32(b.hdr[12:]) != b.opaque {
		return 0, errors.Errorf("answer %#x to opcode %#x, request %d: not this request's", b.hdr[:2], op, b.opaque)
	}
	if _, err := b.r.Discard(int(binary.BigEndian.Uint32(b.hdr[8:]))); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint16(b.hdr[6:]), nil
}

func (b *binaryConn) saslPlain(user, password string) error {
	st, err := b.do(opSASLAuth, nil, "PLAIN", []byte("\x00"+user+"\x00"+password))
	switch {
	case err != nil:
		return errors.Wrap(err, "cannot authenticate with SASL PLAIN")
	case st == statusAuth:
		return errors.Wrap(ErrRefused, "SASL PLAIN")
	case st != statusOK:
		return errors.Errorf("SASL PLAIN: status %#x", st)
	}
	return nil
}

var setExtras = make([]byte, 8) // Flags and expiry, both zero.

func (b *binaryConn) set(key string, value []byte) error {
	st, err := b.do(opSet, setExtras, key, value)
	if err == nil && st != statusOK {
		err = errors.Errorf("set %s: status %#x", key, st)
	}
	return err
}

func (b *binaryConn) get(key string) (bool, error) {
	st, err := b.do(opGet, nil, key, nil)
	switch {
	case err != nil:
		return false, err
	case st == statusMissing:
		return false, nil
	case st != statusOK:
		return false, errors.Errorf("get %s: status %#x", key, st)
	}
	return true, nil
}
