package fn

import (
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"

	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/resolve"
)

// settings returns the Settings of the request's Input, or the error that makes it a Fatal
// result.
func settings(req *fnv1.RunFunctionRequest) (resolve.Settings, error) {
	in, err := input(req)
	if err != nil {
		return resolve.Settings{}, err
	}
	return resolve.NewSettings(in)
}

// input decodes the step's Input strictly, with function-sdk-go's request.GetInput: an
// unknown or mistyped field is the platform team's mistake and is reported with its path,
// rather than silently ignored. A step without Input gets every default.
func input(req *fnv1.RunFunctionRequest) (*v1beta1.Input, error) {
	in := &v1beta1.Input{}
	if req.GetInput() == nil {
		return in, nil
	}
	// Another function's Input would decode into an empty one and silently apply every
	// default: name what the step points at instead.
	if av, k := str(req.GetInput(), "apiVersion"), str(req.GetInput(), "kind"); av != v1beta1.APIVersion || k != v1beta1.Kind {
		return nil, errors.Errorf("the step's input is apiVersion %q, kind %q: function-memcached takes apiVersion %q, kind %q",
			av, k, v1beta1.APIVersion, v1beta1.Kind)
	}
	if err := request.GetInput(req, in); err != nil {
		b, err := protojson.Marshal(req.GetInput())
		if err != nil {
			return nil, errors.Wrap(err, "cannot read the function's Input")
		}
		return nil, v1beta1.Refused(b)
	}
	return in, nil
}
