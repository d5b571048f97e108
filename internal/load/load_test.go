package load

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/credentials/insecure"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/internal/noop"
	"github.com/example/function-memcached/internal/server"
)

// TestRun drives an in-process no-op function and checks that the report accounts for every
// call, bounded by count, and reads this process's CPU and memory from /proc.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan string, 1)
	go func() {
		_ = server.Serve(ctx, noop.Function{}, server.Options{
			Network: "tcp", Address: "127.0.0.1:0", Insecure: true, MaxRecvMessageSize: 4 << 20, GracePeriod: time.Second,
			Listening: func(a net.Addr) { addrs <- a.String() },
		})
	}()
	addr := <-addrs

	r, err := Run(ctx, Config{
		Address: addr, Credentials: insecure.NewCredentials(), Request: &fnv1.RunFunctionRequest{},
		Concurrency: 4, Calls: 400, PID: os.Getpid(), Checkpoints: []int64{200, 400},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Calls != 400 || r.Errors != 0 {
		t.Errorf("Run: want 400 calls and no errors, got %d calls, %d errors (first: %v)", r.Calls, r.Errors, r.FirstError)
	}
	if !(r.P50 > 0 && r.P50 <= r.P90 && r.P90 <= r.P99) {
		t.Errorf("Run: percentiles must be positive and ordered, got p50 %s p90 %s p99 %s", r.P50, r.P90, r.P99)
	}
	if r.PeakRSS == 0 || r.RSSAt[200] == 0 || r.RSSAt[400] == 0 {
		t.Errorf("Run: want memory read from /proc, got peak %d, at checkpoints %v", r.PeakRSS, r.RSSAt)
	}
	if r.CPUSeconds < 0 {
		t.Errorf("Run: CPU seconds cannot be negative, got %f", r.CPUSeconds)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[int]time.Duration{50: 50, 90: 90, 99: 99} {
		if got := percentile(d, p); got != want {
			t.Errorf("percentile(1..100, %d): want %d, got %d", p, want, got)
		}
	}
	if percentile(nil, 99) != 0 {
		t.Error("percentile of nothing must be 0")
	}
}
