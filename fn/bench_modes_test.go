package fn

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// BenchmarkSteadyModes: a steady-state call per mode, the function's CPU per
// reconcile of a claim that changes nothing.
func BenchmarkSteadyModes(b *testing.B) {
	for _, fixture := range []string{"auth-steady", "auth-client-certificate-steady", "tls-steady"} {
		b.Run(fixture, func(b *testing.B) {
			req := &fnv1.RunFunctionRequest{}
			readProtoYAML(b, filepath.Join("testdata", fixture, "request.yaml"), req)
			f := New(logging.NewNopLogger())
			f.now = func() time.Time { return fixtureTime }
			for b.Loop() {
				if _, err := f.RunFunction(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
