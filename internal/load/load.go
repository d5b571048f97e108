// Package load drives a running composition function over gRPC with a fixed request, at a
// given concurrency, for a given duration or number of calls, and measures what a control
// plane pays for it: latency percentiles and throughput from the client, CPU seconds and
// resident memory of the server process from /proc. It measures, it does not judge: the
// fnload command compares a function with the no-op floor measured in the same run.
package load

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// Config is one load run.
type Config struct {
	// Address of the function, host:port.
	Address string
	// Credentials for the connection: insecure or mTLS.
	Credentials credentials.TransportCredentials
	// Request is sent on every call.
	Request *fnv1.RunFunctionRequest
	// Concurrency is the number of calls in flight at once, all over one connection, as
	// Crossplane's reconcilers share one connection per function.
	Concurrency int
	// Duration bounds the run; Calls bounds it by count. The first bound reached ends it.
	Duration time.Duration
	Calls    int64
	// PID of the server process, whose CPU and memory are read from /proc; 0 skips them.
	PID int
	// Checkpoints are call counts at which the server's resident memory is sampled.
	Checkpoints []int64
}

// Report is what a run measured.
type Report struct {
	Calls, Errors int64
	Elapsed       time.Duration
	// P50, P90, P99 are latency percentiles of successful calls.
	P50, P90, P99 time.Duration
	// CPUSeconds is the server's user+system CPU time spent during the run.
	CPUSeconds float64
	// PeakRSS is the server's peak resident memory since it started (VmHWM), in bytes.
	PeakRSS uint64
	// RSSAt is the server's resident memory when the call count reached each checkpoint.
	RSSAt map[int64]uint64
	// FirstError is the first error seen, to tell a broken setup from a slow one.
	FirstError error
}

// CallsPerSecond is the throughput of the run.
func (r Report) CallsPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// CPUPerCall is the server's CPU time per call.
func (r Report) CPUPerCall() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return time.Duration(r.CPUSeconds / float64(r.Calls) * float64(time.Second))
}

// Run drives the function until the duration or call bound is reached, or ctx is done.
func Run(ctx context.Context, c Config) (Report, error) {
	if c.Concurrency < 1 {
		return Report{}, errors.New("concurrency must be at least 1")
	}
	if c.Duration <= 0 && c.Calls <= 0 {
		return Report{}, errors.New("a duration or a number of calls must bound the run")
	}
	conn, err := grpc.NewClient(c.Address, grpc.WithTransportCredentials(c.Credentials))
	if err != nil {
		return Report{}, errors.Wrapf(err, "cannot connect to %s", c.Address)
	}
	defer conn.Close() //nolint:errcheck // Nothing to do about it.
	client := fnv1.NewFunctionRunnerServiceClient(conn)

	var before procSample
	if c.PID > 0 {
		if before, err = sample(c.PID); err != nil {
			return Report{}, err
		}
	}

	var (
		issued, done, failed atomic.Int64
		mu                   sync.Mutex
		latencies            []time.Duration
		firstErr             error
		rssAt                = map[int64]uint64{}
		checkpoints          = slices.Clone(c.Checkpoints)
		wg                   sync.WaitGroup
	)
	slices.Sort(checkpoints)
	start := time.Now()
	// The run ends by the clock, not by a context deadline: gRPC fails calls whose deadline
	// has passed before the context itself reports it, which would count as errors.
	end := time.Time{}
	if c.Duration > 0 {
		end = start.Add(c.Duration)
	}
	for range c.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil && (end.IsZero() || time.Now().Before(end)) {
				if n := issued.Add(1); c.Calls > 0 && n > c.Calls {
					break
				}
				t := time.Now()
				_, err := client.RunFunction(ctx, c.Request)
				d := time.Since(t)
				if err != nil {
					if ctx.Err() != nil {
						break // The caller gave up during this call; it does not count.
					}
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				} else {
					local = append(local, d)
				}
				n := done.Add(1)
				if c.PID > 0 && slices.Contains(checkpoints, n) {
					if s, err := sample(c.PID); err == nil {
						mu.Lock()
						rssAt[n] = s.rss
						mu.Unlock()
					}
				}
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	r := Report{Calls: done.Load(), Errors: failed.Load(), Elapsed: time.Since(start), RSSAt: rssAt, FirstError: firstErr}
	slices.Sort(latencies)
	r.P50, r.P90, r.P99 = percentile(latencies, 50), percentile(latencies, 90), percentile(latencies, 99)
	if c.PID > 0 {
		after, err := sample(c.PID)
		if err != nil {
			return r, err
		}
		r.CPUSeconds = after.cpuSeconds - before.cpuSeconds
		r.PeakRSS = after.hwm
	}
	return r, nil
}

// percentile of sorted durations, nearest-rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
