package fn

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// BenchmarkRunFunction measures one call in process, without gRPC, for the three shapes of
// request a busy control plane sends: `make bench` runs it with -benchmem.
func BenchmarkRunFunction(b *testing.B) {
	read := func(name string) *fnv1.RunFunctionRequest {
		req := &fnv1.RunFunctionRequest{}
		readProtoYAML(b, filepath.Join("testdata", name, "request.yaml"), req)
		return req
	}
	passThrough := read("steady-state-ready")
	passThrough.Desired = &fnv1.State{Resources: map[string]*fnv1.Resource{}}
	for i := range 50 {
		cm, _ := structpb.NewStruct(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("settings-%d", i), "namespace": "team-a"},
			"data":     map[string]any{"owner": "team-a", "index": fmt.Sprint(i)},
		})
		passThrough.Desired.Resources[fmt.Sprintf("earlier-%d", i)] = &fnv1.Resource{Resource: cm, Ready: fnv1.Ready_READY_TRUE}
	}
	cases := map[string]*fnv1.RunFunctionRequest{
		"FirstCreate":     read("create-claim-size-3"),
		"SteadyState":     read("steady-state-ready"),
		"SteadyStateReal": read("steady-state-realistic"),
		"PassThrough50":   passThrough,
		"InvalidHoldsAll": read("invalid-repeated-no-event"),
		"SteadyStateTLS":  read("tls-steady"),
	}
	f := New(logging.NewNopLogger())
	for name, req := range cases {
		b.Run(name, func(b *testing.B) {
			// Each call gets its own copy, as each gRPC call unmarshals its own request.
			reqs := make([]*fnv1.RunFunctionRequest, 64)
			for i := range reqs {
				reqs[i] = proto.Clone(req).(*fnv1.RunFunctionRequest)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := f.RunFunction(context.Background(), reqs[i%len(reqs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
