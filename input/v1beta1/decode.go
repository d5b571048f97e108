package v1beta1

import (
	"bytes"
	"encoding/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// APIVersion and Kind of the Input, as a Composition's pipeline step writes them.
const (
	APIVersion = "memcached.fn.example.com/v1beta1"
	Kind       = "Input"
)

// Decode reads an Input from JSON strictly: an unknown or mistyped field is the platform
// team's mistake and is reported with its path, rather than a policy silently not applied.
func Decode(b []byte) (*Input, error) {
	in := &Input{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(in); err != nil {
		return nil, errors.Wrap(err, "invalid function Input ("+APIVersion+")")
	}
	return in, nil
}
