package authproxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeHealth asks the health listener what the kubelet's HTTP prober asks (Go's own HTTP
// client, as the kubelet's is): a proxy that accepts connections is healthy, one that does not
// is not, and nothing else is served.
func TestServeHealth(t *testing.T) {
	type args struct {
		serving bool
		method  string
		path    string
	}
	type want struct {
		status int
		body   string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Serving": {
			reason: "A proxy that accepts connections answers the liveness probe 200.",
			args:   args{serving: true, method: http.MethodGet, path: HealthPath},
			want:   want{status: http.StatusOK, body: "ok\n"},
		},
		"ServingWithQuery": {
			reason: "A query string does not change the answer.",
			args:   args{serving: true, method: http.MethodGet, path: HealthPath + "?verbose=1"},
			want:   want{status: http.StatusOK, body: "ok\n"},
		},
		"NotServing": {
			reason: "A proxy that has stopped accepting connections fails the probe, so the kubelet restarts it.",
			args:   args{serving: false, method: http.MethodGet, path: HealthPath},
			want:   want{status: http.StatusServiceUnavailable, body: "not accepting connections\n"},
		},
		"OtherPath": {
			reason: "The health listener serves nothing but its one path.",
			args:   args{serving: true, method: http.MethodGet, path: "/metrics"},
			want:   want{status: http.StatusNotFound, body: "not found\n"},
		},
		"OtherMethod": {
			reason: "The health listener answers only GET.",
			args:   args{serving: true, method: http.MethodPost, path: HealthPath},
			want:   want{status: http.StatusNotFound, body: "not found\n"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &Proxy{Upstream: "127.0.0.1:1", Credentials: Credentials{"a", "b"}}
			if tc.args.serving {
				serveProxy(t, p)
			}
			addr := serveHealth(t, p)
			req, err := http.NewRequestWithContext(context.Background(), tc.args.method, "http://"+addr+tc.args.path, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			rsp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
			if err != nil {
				t.Fatalf("%s\n%s %s: %v", tc.reason, tc.args.method, tc.args.path, err)
			}
			defer rsp.Body.Close() //nolint:errcheck // A test response.
			body, err := io.ReadAll(rsp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if rsp.StatusCode != tc.want.status || string(body) != tc.want.body {
				t.Errorf("%s\n%s %s: %d %q, want %d %q", tc.reason, tc.args.method, tc.args.path, rsp.StatusCode, body, tc.want.status, tc.want.body)
			}
		})
	}
}

// TestServeHealthBoundsRequests: a client that sends an endless head, or never finishes one,
// is refused and gets its connection closed rather than holding the proxy's memory for good.
func TestServeHealthBoundsRequests(t *testing.T) {
	cases := map[string]struct {
		reason string
		head   string
	}{
		"Oversized": {
			reason: "A head far over the limit is refused and its connection closed.",
			head:   "GET " + HealthPath + " HTTP/1.1\r\nX: " + strings.Repeat("a", 64<<10),
		},
		"Unfinished": {
			reason: "A head that never ends has its connection closed after the read timeout.",
			head:   "GET " + HealthPath + " HTTP/1.1\r\nHost: x\r\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &Proxy{}
			serveProxy(t, p)
			addr := serveHealth(t, p)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close() //nolint:errcheck // A test connection.
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write([]byte(tc.head))
			got, err := io.ReadAll(c)
			if err != nil && !isReset(err) {
				t.Fatalf("%s\nreading: %v (the connection was not closed)", tc.reason, err)
			}
			if strings.Contains(string(got), " 200 ") {
				t.Errorf("%s\ngot %q, want no 200", tc.reason, got)
			}
		})
	}
}

func isReset(err error) bool {
	return strings.Contains(err.Error(), "reset by peer")
}

// serveProxy runs p on loopback until the test ends.
func serveProxy(t *testing.T, p *Proxy) {
	t.Helper()
	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(5 * time.Second)
	for !p.Serving() {
		if time.Now().After(deadline) {
			t.Fatal("Serve did not start accepting within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// serveHealth runs ServeHealth for p until the test ends and returns its address; it checks
// that ServeHealth returns nil once its context ends.
func serveHealth(t *testing.T, p *Proxy) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHealth(ctx, l, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHealth returned %v after its context ended, want nil", err)
		}
	})
	return l.Addr().String()
}
