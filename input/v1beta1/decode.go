package v1beta1

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/function-sdk-go/resource"
)

// Decode reads an Input from JSON strictly, exactly as function-sdk-go's request.GetInput
// reads a pipeline step's Input for the function: an unknown or mistyped field is the
// platform team's mistake and is reported with its path, rather than a policy silently not
// applied. The provider reads a Composition's Input with it, so both accept the same Inputs.
func Decode(b []byte) (*Input, error) {
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, errors.Wrap(err, "invalid function Input ("+APIVersion+")")
	}
	in := &Input{}
	if err := resource.AsObject(s, in); err != nil {
		return nil, Refused(b)
	}
	return in, nil
}

// Refused says why the Input b, which function-sdk-go's decoder refused, is invalid: in the
// same words every time, naming the field. That decoder's own messages alternate between two
// wordings from one process to the next ("cannot" and "unable to" unmarshal) and, at the
// pinned version, do not name the field's path; encoding/json's strict decoder names it.
func Refused(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&Input{}); err != nil {
		return errors.Wrap(err, "invalid function Input ("+APIVersion+")")
	}
	// encoding/json matches a field's name whatever its case; function-sdk-go does not.
	return errors.New("invalid function Input (" + APIVersion + "): a field's name differs from the Input's in case (field names are case-sensitive)")
}
