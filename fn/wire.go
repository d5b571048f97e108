package fn

import (
	"context"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// This file is the function's one fast path on the wire. Encoding the rendered objects is
// most of the cost of a response, and they only change when the spec does. So the render
// cache encodes each rendering once, and Wire's responses carry those bytes as the desired
// Resource's unknown fields: protobuf writes unknown fields out verbatim, and Crossplane,
// decoding the response, reads them as the resource field they are. RunFunction itself
// returns ordinary responses, which tests compare as they are.

// Wire returns the Function as the gRPC server should serve it: RunFunction's responses, with
// every cached rendering replaced by its encoding.
func (f *Function) Wire() fnv1.FunctionRunnerServiceServer {
	return &wireServer{f: f}
}

type wireServer struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
	f *Function
}

// RunFunction runs the Function and pre-encodes the response's cached renderings.
func (w *wireServer) RunFunction(ctx context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp, err := w.f.RunFunction(ctx, req)
	if err != nil || rsp.GetDesired() == nil {
		return rsp, err
	}
	w.f.renders.wire.swap(rsp.GetDesired().GetResources())
	return rsp, nil
}

// preEncoded holds the encoding of every cached rendering, by the identity of its Struct.
type preEncoded struct {
	mu sync.RWMutex
	m  map[*structpb.Struct][]byte
}

func newPreEncoded() *preEncoded {
	return &preEncoded{m: map[*structpb.Struct][]byte{}}
}

// add encodes the Structs of a new rendering.
func (p *preEncoded) add(objs map[string]*structpb.Struct) error {
	encoded := make(map[*structpb.Struct][]byte, len(objs))
	for k, s := range objs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
		if err != nil {
			return errors.Wrapf(err, "cannot encode %s", k)
		}
		encoded[s] = protowire.AppendBytes(protowire.AppendTag(nil, resourceField, protowire.BytesType), b)
	}
	p.mu.Lock()
	for s, b := range encoded {
		p.m[s] = b
	}
	p.mu.Unlock()
	return nil
}

// forget drops the encodings of an evicted rendering.
func (p *preEncoded) forget(objs map[string]*structpb.Struct) {
	p.mu.Lock()
	for _, s := range objs {
		delete(p.m, s)
	}
	p.mu.Unlock()
}

// swap replaces each resource whose Struct is a cached rendering with its encoding, as field
// 1 (resource) of the fnv1.Resource. Resources the function did not render (held objects,
// earlier steps' resources) are left as they are.
func (p *preEncoded) swap(resources map[string]*fnv1.Resource) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, r := range resources {
		if b, ok := p.m[r.GetResource()]; ok {
			r.Resource = nil
			r.ProtoReflect().SetUnknown(b)
		}
	}
}

// resourceField is the field number of fnv1.Resource's resource (a google.protobuf.Struct).
var resourceField = protowire.Number((&fnv1.Resource{}).ProtoReflect().Descriptor().Fields().ByName("resource").Number())
