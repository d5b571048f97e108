package fn

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestLogging runs every request fixture with a logger and checks what a busy control plane
// would write: nothing at info level per call, and at debug level one line per call that
// never carries the request, the spec or connection details.
func TestLogging(t *testing.T) {
	dirs := fixtures(t)
	for _, verbosity := range []int{0, 1} {
		var lines []string
		log := funcr.New(func(prefix, args string) { lines = append(lines, prefix+args) }, funcr.Options{Verbosity: verbosity})
		f := New(logging.NewLogrLogger(log))
		for _, d := range dirs {
			req := &fnv1.RunFunctionRequest{}
			readProtoYAML(t, d, req)
			if _, err := f.RunFunction(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		}
		switch verbosity {
		case 0:
			if len(lines) != 0 {
				t.Errorf("info level: want no per-call log lines, got %d, first: %s", len(lines), lines[0])
			}
		default:
			if len(lines) > len(dirs) {
				t.Errorf("debug level: want at most one line per call (%d calls), got %d", len(dirs), len(lines))
			}
			for _, l := range lines {
				for _, secret := range []string{"svc.cluster.local", "memoryLimitMB", "c2Vzc2lvbn", "observed", "\"spec\""} {
					if strings.Contains(l, secret) {
						t.Errorf("debug log line carries %q: %s", secret, l)
					}
				}
			}
		}
	}
}
