package authproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/google/go-cmp/cmp"

	"github.com/example/function-memcached/internal/memcachedtest"
)

// The credentials the SASL tests' memcached knows. The user name carries its realm: without
// one, Cyrus SASL appends the host name, which differs per pod.
const (
	saslUser     = "memcached@memcached"
	saslPassword = "s3cret"
)

// fakeMemcached answers the binary protocol as memcached with SASL does, with what a test
// sets, and records the requests it gets.
type fakeMemcached struct {
	// mechs answers SASL_LIST_MECHS; empty is "PLAIN", "-" is an unknown command (no -S).
	mechs string
	// stats answers STAT, per group; a nil group is memcached's for an unknown one.
	stats map[string][][2]string
	// statStatus, when set, answers every STAT with that status.
	statStatus uint16
	// silent leaves STAT unanswered.
	silent bool

	mu   sync.Mutex
	seen []string
}

// requests names the requests the fake got, in order.
func (f *fakeMemcached) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// start serves the fake on loopback until the test ends and returns its address.
func (f *fakeMemcached) start(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close() //nolint:errcheck // A test connection.
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				f.serve(c)
			}()
		}
	}()
	return l.Addr().String()
}

func (f *fakeMemcached) serve(c net.Conn) {
	authenticated := false
	for {
		var h [24]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(h[8:]))
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		op, opaque := h[1], binary.BigEndian.Uint32(h[12:])
		key := string(body[h[4] : int(h[4])+int(binary.BigEndian.Uint16(h[2:]))])
		value := string(body[int(h[4])+len(key):])
		answer := func(status uint16, key, value string) {
			_, _ = c.Write(binPacket(binResponse, op, status, opaque, key, value))
		}
		f.mu.Lock()
		switch op {
		case opSASLList:
			f.seen = append(f.seen, "SASL_LIST_MECHS")
		case opSASLAuth:
			f.seen = append(f.seen, "SASL_AUTH "+key)
		case opStat:
			f.seen = append(f.seen, "STAT "+strconv.Quote(key))
		case opVersion:
			f.seen = append(f.seen, "VERSION")
		default:
			f.seen = append(f.seen, fmt.Sprintf("opcode %#x", op))
		}
		f.mu.Unlock()
		switch {
		case op == opSASLList && f.mechs == "-":
			answer(statusUnknownCommand, "", "Unknown command")
		case op == opSASLList && f.mechs == "":
			answer(statusOK, "", "PLAIN")
		case op == opSASLList:
			answer(statusOK, "", f.mechs)
		case op == opSASLAuth && key == "PLAIN" && value == "\x00"+saslUser+"\x00"+saslPassword:
			authenticated = true
			answer(statusOK, "", "Authenticated")
		case op == opSASLAuth:
			answer(statusAuthError, "", "Auth failure.")
		case op == opVersion:
			answer(statusOK, "", "1.6.18")
		case !authenticated:
			answer(statusAuthError, "", "")
			return
		case op == opStat && f.silent:
		case op == opStat && f.statStatus != 0:
			answer(f.statStatus, "", "Not found")
		case op == opStat && f.stats[key] == nil:
			answer(0x01, "", "Not found")
		case op == opStat:
			for _, kv := range f.stats[key] {
				answer(statusOK, kv[0], kv[1])
			}
			answer(statusOK, "", "")
		default:
			answer(statusUnknownCommand, "", "Unknown command")
		}
	}
}

// binPacket is one binary-protocol packet without extras.
func binPacket(magic, op byte, status uint16, opaque uint32, key, value string) []byte {
	p := make([]byte, 24, 24+len(key)+len(value))
	p[0], p[1] = magic, op
	binary.BigEndian.PutUint16(p[2:], uint16(len(key))) //nolint:gosec // Test keys are short.
	binary.BigEndian.PutUint16(p[6:], status)
	binary.BigEndian.PutUint32(p[8:], uint32(len(key)+len(value))) //nolint:gosec // Test values are small.
	binary.BigEndian.PutUint32(p[12:], opaque)
	return append(append(p, key...), value...)
}

// logBuffer collects what a Proxy logs.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) log(msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(&l.b, append([]any{msg}, kv...)...)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveSASL runs p in SASL mode on loopback until the test ends (checking that it then
// returns promptly, every connection closed) and returns its address and its log.
func serveSASL(t *testing.T, p *Proxy) (string, *logBuffer) {
	t.Helper()
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	p.Protocol, p.Log = ProtocolSASL, logs.log
	if p.Timeout == 0 {
		p.Timeout = 2 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve returned %v after its context ended, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return within 5s of its context ending: a connection is still being served")
		}
	})
	return l.Addr().String(), logs
}

// exchange sends what to addr and returns everything read until the proxy closes the
// connection, failing the test if it does not within 5 seconds.
func exchange(t *testing.T, addr, what string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck // A test connection.
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, what); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("the proxy did not close the connection after %q: %v (read %q)", what, err, got)
	}
	return string(got)
}

var (
	generalStats = [][2]string{{"pid", "7"}, {"version", "1.6.18"}, {"curr_connections", "3"}}
	exporterFake = map[string][][2]string{
		"":         generalStats,
		"settings": {{"maxconns", "1024"}, {"lru_crawler", "yes"}},
		"slabs":    {{"1:chunk_size", "96"}, {"active_slabs", "1"}},
		"items":    {{"items:1:number", "2"}},
	}
	saslHandshake = []string{"SASL_LIST_MECHS", "SASL_AUTH PLAIN"}
)

const refused = "CLIENT_ERROR the memcached auth proxy answers only stats and version\r\n"

// TestSASLTranslation checks, against a fake memcached, what a text-protocol client sees
// through the proxy in SASL mode and what reaches memcached.
func TestSASLTranslation(t *testing.T) {
	type args struct {
		fake        *fakeMemcached
		creds       Credentials
		timeout     time.Duration
		idleTimeout time.Duration
		send        string
	}
	type want struct {
		answer   string
		upstream []string
		log      string
	}
	right := Credentials{saslUser, saslPassword}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Stats": {
			reason: "stats becomes a binary STAT, its responses STAT lines and END.",
			args:   args{fake: &fakeMemcached{stats: exporterFake}, creds: right, send: "stats\r\nquit\r\n"},
			want: want{
				answer:   "STAT pid 7\r\nSTAT version 1.6.18\r\nSTAT curr_connections 3\r\nEND\r\n",
				upstream: append(saslHandshake, `STAT ""`),
			},
		},
		"ExporterScrape": {
			reason: "Every command memcached_exporter sends in a scrape, on one connection as gomemcache does, is answered.",
			args:   args{fake: &fakeMemcached{stats: exporterFake}, creds: right, send: "stats\r\nstats slabs\r\nstats items\r\nstats settings\r\nquit\r\n"},
			want: want{
				answer: "STAT pid 7\r\nSTAT version 1.6.18\r\nSTAT curr_connections 3\r\nEND\r\n" +
					"STAT 1:chunk_size 96\r\nSTAT active_slabs 1\r\nEND\r\n" +
					"STAT items:1:number 2\r\nEND\r\n" +
					"STAT maxconns 1024\r\nSTAT lru_crawler yes\r\nEND\r\n",
				upstream: append(saslHandshake, `STAT ""`, `STAT "slabs"`, `STAT "items"`, `STAT "settings"`),
			},
		},
		"Version": {
			reason: "version becomes a binary VERSION.",
			args:   args{fake: &fakeMemcached{}, creds: right, send: "version\r\nquit\r\n"},
			want:   want{answer: "VERSION 1.6.18\r\n", upstream: append(saslHandshake, "VERSION")},
		},
		"Get": {
			reason: "Reading cache data is refused, never forwarded, and the connection closed: the stats after it are not answered.",
			args:   args{fake: &fakeMemcached{stats: exporterFake}, creds: right, send: "get session:42\r\nstats\r\n"},
			want:   want{answer: refused, upstream: saslHandshake, log: `command "get"`},
		},
		"Set": {
			reason: "Writing cache data is refused and its data never read as a command.",
			args:   args{fake: &fakeMemcached{stats: exporterFake}, creds: right, send: "set k 0 0 5\r\nstats\r\n"},
			want:   want{answer: refused, upstream: saslHandshake, log: `command "set"`},
		},
		"StatsReset": {
			reason: "stats reset would clear memcached's counters: refused.",
			args:   args{fake: &fakeMemcached{stats: exporterFake}, creds: right, send: "stats reset\r\n"},
			want:   want{answer: refused, upstream: saslHandshake},
		},
		"StatsCachedump": {
			reason: "stats cachedump lists keys: refused.",
			args:   args{fake: &fakeMemcached{stats: exporterFake}, creds: right, send: "stats cachedump 1 0\r\n"},
			want:   want{answer: refused, upstream: saslHandshake},
		},
		"LongLine": {
			reason: "A line longer than any command is not buffered without bound.",
			args:   args{fake: &fakeMemcached{}, creds: right, send: "stats " + strings.Repeat("x", 4096) + "\r\n"},
			want:   want{answer: "CLIENT_ERROR line too long\r\n", upstream: saslHandshake},
		},
		"StatError": {
			reason: "memcached failing a STAT is a SERVER_ERROR and a closed connection, never a partial answer.",
			args:   args{fake: &fakeMemcached{statStatus: 0x84}, creds: right, send: "stats\r\nstats\r\n"},
			want: want{
				answer:   "SERVER_ERROR the memcached auth proxy cannot answer from memcached\r\n",
				upstream: append(saslHandshake, `STAT ""`), log: "status 0x84",
			},
		},
		"StatWithLineBreak": {
			reason: "A statistic that holds CR LF cannot smuggle a line into the client's answer.",
			args: args{fake: &fakeMemcached{stats: map[string][][2]string{"": {{"pid", "7\r\nSTAT evil 1"}}}}, creds: right,
				send: "stats\r\n"},
			want: want{
				answer:   "SERVER_ERROR the memcached auth proxy cannot answer from memcached\r\n",
				upstream: append(saslHandshake, `STAT ""`), log: "not one line of text",
			},
		},
		"HugeAnswer": {
			reason: "An answer past the proxy's bound is refused instead of held in memory.",
			args: args{fake: &fakeMemcached{stats: map[string][][2]string{"": manyStats(20000)}}, creds: right,
				send: "stats\r\n"},
			want: want{
				answer:   "SERVER_ERROR the memcached auth proxy cannot answer from memcached\r\n",
				upstream: append(saslHandshake, `STAT ""`), log: "longer than",
			},
		},
		"HugeStatistic": {
			reason: "A response past the proxy's bound per packet is not read.",
			args: args{fake: &fakeMemcached{stats: map[string][][2]string{"": {{"big", strings.Repeat("9", 70000)}}}}, creds: right,
				send: "stats\r\n"},
			want: want{
				answer:   "SERVER_ERROR the memcached auth proxy cannot answer from memcached\r\n",
				upstream: append(saslHandshake, `STAT ""`), log: "more than the 65536 the proxy reads",
			},
		},
		"SilentMemcached": {
			reason: "memcached not answering within the timeout ends the connection.",
			args:   args{fake: &fakeMemcached{stats: exporterFake, silent: true}, creds: right, timeout: 300 * time.Millisecond, send: "stats\r\n"},
			want: want{
				answer:   "SERVER_ERROR the memcached auth proxy cannot answer from memcached\r\n",
				upstream: append(saslHandshake, `STAT ""`), log: "timeout",
			},
		},
		"IdleClient": {
			reason: "A connection the exporter left open is closed after the idle timeout.",
			args:   args{fake: &fakeMemcached{}, creds: right, idleTimeout: 200 * time.Millisecond},
			want:   want{upstream: saslHandshake},
		},
		"WrongPassword": {
			reason: "memcached refusing the credentials closes the client before it reads anything; the log says why, without the password.",
			args:   args{fake: &fakeMemcached{stats: exporterFake}, creds: Credentials{saslUser, "guess"}, send: "stats\r\n"},
			want:   want{upstream: saslHandshake, log: `memcached answered "Auth failure." to user "memcached@memcached": memcached refused the credentials`},
		},
		"NoPlain": {
			reason: "A memcached without PLAIN is never sent the password, and the log names the setting.",
			args:   args{fake: &fakeMemcached{mechs: "SCRAM-SHA-1"}, creds: right, send: "stats\r\n"},
			want:   want{upstream: []string{"SASL_LIST_MECHS"}, log: "mech_list: plain"},
		},
		"NotSASL": {
			reason: "A memcached without -S is told apart from wrong credentials.",
			args:   args{fake: &fakeMemcached{mechs: "-"}, creds: right, send: "stats\r\n"},
			want:   want{upstream: []string{"SASL_LIST_MECHS"}, log: "is it running with -S?"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			upstream := tc.args.fake.start(t)
			addr, logs := serveSASL(t, &Proxy{Upstream: upstream, Credentials: tc.args.creds, Timeout: tc.args.timeout, IdleTimeout: tc.args.idleTimeout})
			got := exchange(t, addr, tc.args.send)
			if diff := cmp.Diff(tc.want.answer, got); diff != "" {
				t.Errorf("%s\nanswer to %q: -want, +got:\n%s", tc.reason, tc.args.send, diff)
			}
			if diff := cmp.Diff(tc.want.upstream, tc.args.fake.requests()); diff != "" {
				t.Errorf("%s\nrequests memcached got: -want, +got:\n%s", tc.reason, diff)
			}
			if log := logs.String(); !strings.Contains(log, tc.want.log) || strings.Contains(log, tc.args.creds.Password) {
				t.Errorf("%s\nthe proxy logged %q; want it to hold %q and never the password", tc.reason, log, tc.want.log)
			}
		})
	}
}

func manyStats(n int) [][2]string {
	s := make([][2]string, n)
	for i := range s {
		s[i] = [2]string{"stat_" + strconv.Itoa(i), strings.Repeat("9", 60)}
	}
	return s
}

// TestServeUnknownProtocol checks that a proxy told a protocol it does not know refuses to
// serve rather than guess.
func TestServeUnknownProtocol(t *testing.T) {
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = (&Proxy{Upstream: "127.0.0.1:1", Protocol: "binary"}).Serve(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), `unknown upstream protocol "binary"`) {
		t.Fatalf("Serve with protocol binary: %v, want an error naming it", err)
	}
}

// TestSASLConnectionsApart checks that one client's refused command does not disturb
// another client's connection.
func TestSASLConnectionsApart(t *testing.T) {
	fake := &fakeMemcached{stats: exporterFake}
	addr, _ := serveSASL(t, &Proxy{Upstream: fake.start(t), Credentials: Credentials{saslUser, saslPassword}})
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close() //nolint:errcheck // A test connection.
	mc := memcachedtest.NewConn(held)
	if _, err := mc.Stats(""); err != nil {
		t.Fatalf("stats before another client was refused: %v", err)
	}
	if got := exchange(t, addr, "get k\r\n"); got != refused {
		t.Fatalf("get through the proxy: %q, want %q", got, refused)
	}
	if got, err := mc.Stats("settings"); err != nil || got["maxconns"] != "1024" {
		t.Errorf("stats settings on the first connection after another client was refused: %v, %v", got, err)
	}
}

// TestAuthenticateSASL authenticates against the real memcached with SASL, as the official
// image runs it.
func TestAuthenticateSASL(t *testing.T) {
	sasl := memcachedtest.StartSASL(t, map[string]string{saslUser: saslPassword})
	plain := "127.0.0.1:" + strconv.Itoa(memcachedtest.FreePort(t))
	memcachedtest.Start(t, []string{"--listen=127.0.0.1", "--port=" + strings.TrimPrefix(plain, "127.0.0.1:")}, plain)
	type args struct {
		server string
		creds  Credentials
	}
	type want struct {
		err   error
		error string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Right":         {reason: "The mounted credentials authenticate.", args: args{sasl, Credentials{saslUser, saslPassword}}},
		"WrongPassword": {reason: "memcached refuses another password.", args: args{sasl, Credentials{saslUser, "guess"}}, want: want{err: ErrAuthentication, error: "memcached refused the credentials"}},
		"WrongUser":     {reason: "memcached refuses another user.", args: args{sasl, Credentials{"admin@memcached", saslPassword}}, want: want{err: ErrAuthentication, error: "memcached refused the credentials"}},
		"NoRealm":       {reason: "A user name without its realm gets the host's, which the password file does not hold.", args: args{sasl, Credentials{"memcached", saslPassword}}, want: want{err: ErrAuthentication, error: "memcached refused the credentials"}},
		"NotSASL":       {reason: "A memcached without -S is told apart from wrong credentials.", args: args{plain, Credentials{saslUser, saslPassword}}, want: want{err: errNoSASL, error: "is it running with -S?"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := net.Dial("tcp", tc.args.server)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close() //nolint:errcheck // A test connection.
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			err = AuthenticateSASL(c, tc.args.creds)
			if !errors.Is(err, tc.want.err) || (err != nil && !strings.Contains(err.Error(), tc.want.error)) {
				t.Fatalf("%s\nAuthenticateSASL(...) = %v, want %v (%q)", tc.reason, err, tc.want.err, tc.want.error)
			}
			if err != nil {
				if strings.Contains(err.Error(), tc.args.creds.Password) {
					t.Errorf("%s\nthe error %q holds the password", tc.reason, err)
				}
				return
			}
			// The connection is ready for binary requests, nothing of the answer left unread.
			if got, err := stats(&binConn{w: c, r: c}, ""); err != nil || !strings.Contains(string(got), "STAT version 1.6.") {
				t.Errorf("%s\nstats after AuthenticateSASL: %q, %v", tc.reason, got, err)
			}
		})
	}
}

// TestProxySASL serves the real memcached_exporter through the proxy from the real memcached
// with SASL on, which speaks no text protocol.
func TestProxySASL(t *testing.T) {
	addr := memcachedtest.StartSASL(t, map[string]string{saslUser: saslPassword}, "-c", "321")

	// Without the proxy, the exporter's protocol gets no answer at all.
	direct, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	dc := memcachedtest.NewConn(direct)
	_ = direct.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if got, err := dc.Line("version"); err == nil {
		t.Fatalf("memcached with -S answered the text protocol's version with %q: it is not running with SASL", got)
	}
	_ = dc.Close()
	// An item for the slab and item statistics, stored as a client with SASL does.
	setSASL(t, addr, "greeting", "hello")

	t.Run("Exporter", func(t *testing.T) {
		p, _ := serveSASL(t, &Proxy{Upstream: addr, Credentials: Credentials{saslUser, saslPassword}})
		metrics := scrape(t, p, "1")
		for _, want := range []string{
			`memcached_version{version="1.6.`,          // stats
			"memcached_current_connections ",           // stats
			"memcached_current_items 1\n",              // stats
			"memcached_max_connections 321\n",          // stats settings
			`memcached_slab_chunk_size_bytes{slab="`,   // stats slabs
			`memcached_slab_current_items{slab="1"} 1`, // stats items
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("the exporter's metrics through the proxy lack %q:\n%s", want, grep([]byte(metrics), "memcached_"))
			}
		}
	})

	t.Run("WrongPassword", func(t *testing.T) {
		p, logs := serveSASL(t, &Proxy{Upstream: addr, Credentials: Credentials{saslUser, "not-the-password"}})
		scrape(t, p, "0")
		log := logs.String()
		if !strings.Contains(log, "Cannot authenticate to memcached") || !strings.Contains(log, "memcached refused the credentials") {
			t.Errorf("the proxy's log does not say why it refused the exporter:\n%s", log)
		}
		if strings.Contains(log, "not-the-password") {
			t.Errorf("the proxy logged the password:\n%s", log)
		}
	})

	t.Run("CacheCommandsRefused", func(t *testing.T) {
		p, _ := serveSASL(t, &Proxy{Upstream: addr, Credentials: Credentials{saslUser, saslPassword}})
		c := memcache.New(p)
		c.Timeout = 2 * time.Second
		if err := c.Set(&memcache.Item{Key: "planted", Value: []byte("x")}); err == nil {
			t.Error("set through the proxy in SASL mode succeeded")
		}
		if it, err := c.Get("greeting"); err == nil || errors.Is(err, memcache.ErrCacheMiss) {
			t.Errorf("get through the proxy in SASL mode: %v, %v; want the command refused", it, err)
		}
		for _, cmd := range []string{"get greeting", "stats cachedump 1 0", "flush_all", "stats reset"} {
			if got := exchange(t, p, cmd+"\r\n"); got != refused {
				t.Errorf("%s through the proxy: %q, want %q", cmd, got, refused)
			}
		}
		// None of it reached memcached: one set (setSASL's), no get, no flush, the item there.
		conn, err := net.Dial("tcp", p)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close() //nolint:errcheck // A test connection.
		s, err := memcachedtest.NewConn(conn).Stats("")
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]string{"cmd_set": "1", "cmd_get": "0", "cmd_flush": "0", "curr_items": "1"} {
			if s[k] != want {
				t.Errorf("after refused commands memcached's %s is %q, want %q", k, s[k], want)
			}
		}
	})
}

// setSASL stores key as a client with SASL does: authenticated, over the binary protocol.
func setSASL(t *testing.T, addr, key, value string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck // A test connection.
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := AuthenticateSASL(c, Credentials{saslUser, saslPassword}); err != nil {
		t.Fatal(err)
	}
	// SET (0x01) with 8 bytes of extras: flags and expiry, both zero.
	p := binPacket(binRequest, 0x01, 0, 1, "", "")
	p[2], p[3], p[4] = 0, byte(len(key)), 8
	binary.BigEndian.PutUint32(p[8:], uint32(8+len(key)+len(value))) //nolint:gosec // Short.
	p = append(append(append(p, make([]byte, 8)...), key...), value...)
	if _, err := c.Write(p); err != nil {
		t.Fatal(err)
	}
	r, err := (&binConn{w: c, r: c, opaque: 1}).receive(0x01)
	if err != nil || r.status != statusOK {
		t.Fatalf("set %s with SASL: status %#x %q, %v", key, r.status, r.value, err)
	}
}

// exporterBinary is the memcached_exporter the lanes build (make bin/memcached_exporter), or
// $MEMCACHED_EXPORTER. Missing, it skips the test outside CI and fails it under CI.
func exporterBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("MEMCACHED_EXPORTER")
	if bin == "" {
		bin, _ = filepath.Abs("../../bin/memcached_exporter")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no memcached_exporter at %s: `make test` builds it", bin)
		}
		t.Skipf("no memcached_exporter at %s: run `make bin/memcached_exporter` to run this test", bin)
	}
	return bin
}

// scrape runs the exporter against addr until it reports memcached_up up, and returns its
// metrics, failing the test if it does not within 10 seconds.
func scrape(t *testing.T, addr, up string) string {
	t.Helper()
	listen := "127.0.0.1:" + strconv.Itoa(memcachedtest.FreePort(t))
	cmd := exec.Command(exporterBinary(t), "--memcached.address="+addr, "--web.listen-address="+listen) //nolint:gosec // The test's own binary.
	var logs logBuffer
	cmd.Stdout, cmd.Stderr = writerFunc(logs.log), writerFunc(logs.log)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rsp, err := http.Get("http://" + listen + "/metrics") //nolint:noctx // A loopback test server.
		if err != nil {
			continue
		}
		body, _ = io.ReadAll(rsp.Body)
		_ = rsp.Body.Close()
		if regexp.MustCompile(`(?m)^memcached_up ` + up + `$`).Match(body) {
			return string(body)
		}
	}
	t.Fatalf("the exporter, scraping %s, does not report memcached_up %s:\n%s\n%s", addr, up, grep(body, "memcached_up"), logs.String())
	return ""
}

// writerFunc logs what a process writes.
type writerFunc func(msg string, kv ...any)

func (w writerFunc) Write(b []byte) (int, error) { w(string(b)); return len(b), nil }

func grep(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
