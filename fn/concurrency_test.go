package fn

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestRunFunctionConcurrently runs every request fixture from many goroutines at once on one
// Function, as the gRPC server does, and compares each response with the fixture's golden
// one: no call may see another's state half-made, nor change what another returns (a cached
// rendering, a remembered TLS verdict, the credentials store). `make test` runs it under the
// race detector, which fails it on any unsynchronised access.
func TestRunFunctionConcurrently(t *testing.T) {
	type call struct {
		name string
		req  *fnv1.RunFunctionRequest
		rsp  *fnv1.RunFunctionResponse
	}
	var calls []call
	for _, path := range fixtures(t) {
		dir := filepath.Dir(path)
		c := call{name: filepath.Base(dir), req: &fnv1.RunFunctionRequest{}, rsp: &fnv1.RunFunctionResponse{}}
		readProtoYAML(t, path, c.req)
		readProtoYAML(t, filepath.Join(dir, "response.yaml"), c.rsp)
		calls = append(calls, c)
	}

	f := New(logging.NewNopLogger())
	f.credentials.Random = func() io.Reader { return strings.NewReader(strings.Repeat("a fixed source of test bytes, ", 8)) }
	f.now = func() time.Time { return fixtureTime }
	// Certificates come from crypto/rand, which cryptotest makes repeatable for one call at a
	// time only: a first pass issues them as TestRunFunction does, and the concurrent calls
	// must then get them from the credentials store, unchanged.
	for _, c := range calls {
		t.Run("first/"+c.name, func(t *testing.T) {
			fixedRandom(t, c.name)
			if _, err := f.RunFunction(context.Background(), proto.CloneOf(c.req)); err != nil {
				t.Fatalf("RunFunction(...): unexpected gRPC error: %v", err)
			}
		})
	}

	const goroutines, rounds = 8, 2
	var wg sync.WaitGroup
	errs := make(chan string, 2*goroutines*rounds*len(calls))
	type answer struct {
		c   call
		rsp *fnv1.RunFunctionResponse
	}
	answers := make(chan answer, goroutines*rounds*len(calls))
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds * len(calls) {
				// Each goroutine starts at another fixture, so that different requests run at
				// the same moment, and each sends its own copy, as gRPC decodes one per call.
				c := calls[(g*len(calls)/goroutines+i)%len(calls)]
				got, err := f.RunFunction(context.Background(), proto.CloneOf(c.req))
				if err != nil {
					errs <- fmt.Sprintf("%s: RunFunction(...): unexpected gRPC error: %v", c.name, err)
					continue
				}
				// gRPC encodes the response after RunFunction returns, while other calls run.
				if _, err := proto.Marshal(got); err != nil {
					errs <- fmt.Sprintf("%s: cannot encode the response: %v", c.name, err)
				}
				if !proto.Equal(c.rsp, got) { // cmp.Diff only to say how: it costs ten times more.
					errs <- fmt.Sprintf("%s: RunFunction(...) called concurrently: -want (golden), +got:\n%s", c.name, cmp.Diff(c.rsp, got, protocmp.Transform()))
				}
				answers <- answer{c: c, rsp: got}
			}
		})
	}
	wg.Wait()
	// A later call that changed what an earlier response holds (a shared rendering) shows now.
	close(answers)
	for a := range answers {
		if !proto.Equal(a.c.rsp, a.rsp) {
			errs <- fmt.Sprintf("%s: a response changed after RunFunction returned it: -want (golden), +got:\n%s", a.c.name, cmp.Diff(a.c.rsp, a.rsp, protocmp.Transform()))
		}
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
