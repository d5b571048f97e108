package authproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// HealthPath is what the kubelet's liveness probe asks for on the health listener.
const HealthPath = "/healthz"

// ServeHealth answers the kubelet's HTTP liveness probe on l until ctx is done: GET HealthPath
// gets 200 while p accepts connections (Serve is running), 503 otherwise; anything else gets
// 404. The probe exists to restart a proxy that hangs: a stopped or wedged process never
// answers, although the kernel still completes a TCP handshake for it, which is why the probe
// is HTTP and not TCP. Heads are bounded in size and time, so a client that never finishes one
// holds neither memory nor a connection for long. It returns nil once ctx is done, or the
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
	if err := s.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
