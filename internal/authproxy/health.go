package authproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// HealthPath is what the kubelet's liveness probe asks for on the health listener.
const HealthPath = "/healthz"

// maxHealthConns bounds the connections the health listener serves at once: the kubelet
// opens one a period, and whoever else reaches the port (no one, under the NetworkPolicy)
// waits for a slot rather than growing the proxy's memory toward its limit.
const maxHealthConns = 4

// ServeHealth answers the kubelet's HTTP liveness probe on l until ctx is done: GET HealthPath
// gets 200 while p accepts connections (Serve is running), 503 otherwise; anything else gets
// 404. The probe exists to restart a proxy that hangs: a stopped or wedged process never
// answers, although the kernel still completes a TCP handshake for it, which is why the probe
// is HTTP and not TCP. Heads are bounded in size and time, and connections in number, so a
// client that never finishes one holds neither memory nor a connection for long. It returns nil once ctx is done, or the
// error that stopped it serving.
func ServeHealth(ctx context.Context, l net.Listener, p *Proxy) error {
	s := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method != http.MethodGet || r.URL.Path != HealthPath:
				http.Error(w, "not found", http.StatusNotFound)
			case p.Serving():
				_, _ = w.Write([]byte("ok\n"))
			default:
				http.Error(w, "not accepting connections", http.StatusServiceUnavailable)
			}
		}),
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       2 * time.Second,
		WriteTimeout:      2 * time.Second,
		IdleTimeout:       2 * time.Second,
		MaxHeaderBytes:    4096,
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	if err := s.Serve(netutil.LimitListener(l, maxHealthConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
