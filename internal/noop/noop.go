// Package noop is a composition function that does nothing: it returns the desired state it
// was sent. It is served by the same SDK and server package as function-memcached, so the load
// tool can measure the floor that any function pays (gRPC, TLS, protobuf) next to ours, in
// the same run on the same machine.
package noop

import (
	"context"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"
)

// Function answers every call with the desired state it was sent.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

// RunFunction returns the request's desired state unchanged.
func (Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	return response.To(req, response.DefaultTTL), nil
}
