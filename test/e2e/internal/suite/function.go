package suite

import (
	"context"
	"time"
)

// A Function is the running function as the scenarios see it, wherever the suite runs it: a
// process on the host (crossplane.Runtime, when the node lane is off) or a pod on the real
// node started from the package's runtime image (crossplane.PodRuntime).
type Function interface {
	// Kill kills the function's process with SIGKILL and returns once it is down. A host
	// process stays down until Start; in a pod, the kubelet brings it back after its
	// crash-loop back-off (about ten seconds).
	Kill() error
	// Start brings a killed function back (on the host) or waits until the kubelet has (in a
	// pod), returning once Crossplane can reach it again.
	Start(ctx context.Context) error
	// Running reports whether the function runs (and, in a pod, is ready).
	Running() bool
	// CPUTime is the CPU time the function used since it last started.
	CPUTime() (time.Duration, error)
	// PeakRSS is the most resident memory the function's process has had, in bytes.
	PeakRSS() (int64, error)
	// RunFunctionCalls is how many RunFunction calls it answered since it last started.
	RunFunctionCalls(ctx context.Context) (int64, error)
	// Stop stops what the suite runs for the function.
	Stop() error
}
