package fn

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestWire proves the pre-encoded fast path loses nothing: for every request fixture,
// Crossplane decodes what Wire sends into exactly the response RunFunction returns, and Wire
// does send some renderings pre-encoded.
func TestWire(t *testing.T) {
	f := New(logging.NewNopLogger())
	w := f.Wire()
	preEncoded := 0
	for _, path := range fixtures(t) {
		t.Run(path, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{}
			readProtoYAML(t, path, req)
			want, err := f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
			if err != nil {
				t.Fatal(err)
			}
			sent, err := w.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range sent.GetDesired().GetResources() {
				if len(r.ProtoReflect().GetUnknown()) > 0 {
					preEncoded++
				}
			}
			b, err := proto.Marshal(sent)
			if err != nil {
				t.Fatalf("cannot encode the response: %v", err)
			}
			got := &fnv1.RunFunctionResponse{}
			if err := proto.Unmarshal(b, got); err != nil {
				t.Fatalf("cannot decode the response: %v", err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("Wire().RunFunction(...) as Crossplane decodes it: -RunFunction(...), +got:\n%s", diff)
			}
		})
	}
	if preEncoded == 0 {
		t.Error("Wire sent no rendering pre-encoded")
	}
}

// BenchmarkWire measures what the pre-encoded fast path is for: a call and the encoding of
// its response, as the gRPC server sends it, with Wire ("pre-encoded") and without
// ("plain"). The fast path stays only while pre-encoded is the cheaper.
func BenchmarkWire(b *testing.B) {
	for _, fixture := range []string{"steady-state-ready", "steady-state-realistic", "create-claim-size-3"} {
		req := &fnv1.RunFunctionRequest{}
		readProtoYAML(b, filepath.Join("testdata", fixture, "request.yaml"), req)
		f := New(logging.NewNopLogger())
		for name, s := range map[string]fnv1.FunctionRunnerServiceServer{"plain": f, "pre-encoded": f.Wire()} {
			b.Run(fixture+"/"+name, func(b *testing.B) {
				reqs := make([]*fnv1.RunFunctionRequest, 64)
				for i := range reqs {
					reqs[i] = proto.Clone(req).(*fnv1.RunFunctionRequest)
				}
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					rsp, err := s.RunFunction(context.Background(), reqs[i%len(reqs)])
					if err != nil {
						b.Fatal(err)
					}
					if _, err := proto.Marshal(rsp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
