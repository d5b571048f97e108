package fn

import (
	"math"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"

	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/resolve"
)

// maxCachedInputs bounds the Input cache: a control plane has one Input per Composition
// revision, so a handful of entries serve every call.
const maxCachedInputs = 64

// settingsCache remembers the Settings of each Input it has seen. The Input is the same on
// every call of a Composition, so decoding and checking it once is enough.
type settingsCache struct {
	mu sync.RWMutex
	m  map[string]settingsEntry
}

type settingsEntry struct {
	s   resolve.Settings
	err error
}

// settings returns the Settings of the request's Input, or the error that makes it a Fatal
// result.
func (c *settingsCache) settings(req *fnv1.RunFunctionRequest) (resolve.Settings, error) {
	buf := keyBuffers.Get().(*[]byte)
	defer keyBuffers.Put(buf)
	key := appendCanonicalStruct((*buf)[:0], req.GetInput())
	*buf = key
	c.mu.RLock()
	e, ok := c.m[string(key)] // A lookup by a converted []byte copies nothing.
	c.mu.RUnlock()
	if ok {
		return e.s, e.err
	}
	in, err := input(req)
	if err == nil {
		e.s, e.err = resolve.NewSettings(in)
	} else {
		e.err = err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedInputs {
		clear(c.m)
	}
	c.m[string(key)] = e
	c.mu.Unlock()
	return e.s, e.err
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

// appendCanonical appends an encoding of v in which equal values encode equally whatever the
// order of their maps. It keys the Input cache without the reflection that deterministic
// protobuf marshaling costs on every call, and without allocating: each token is
// self-delimiting (strings and keys length-prefixed, numbers terminated), so the encoding is
// unambiguous.
func appendCanonical(b []byte, v *structpb.Value) []byte {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return appendCanonicalStruct(b, k.StructValue)
	case *structpb.Value_ListValue:
		b = append(b, '[')
		for _, e := range k.ListValue.GetValues() {
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case *structpb.Value_StringValue:
		return appendCanonicalString(append(b, 's'), k.StringValue)
	case *structpb.Value_NumberValue:
		return append(strconv.AppendUint(append(b, 'f'), math.Float64bits(k.NumberValue), 16), ';')
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(append(b, 'b'), k.BoolValue)
	default:
		return append(b, 'n')
	}
}

// appendCanonicalStruct appends appendCanonical's encoding of s, its fields in key order.
func appendCanonicalStruct(b []byte, s *structpb.Struct) []byte {
	if s == nil {
		return append(b, 'n')
	}
	return appendCanonicalFields(b, s.GetFields(), nil)
}

// appendCanonicalFields appends the encoding of the object of fields, in key order, only the
// fields whose names keep holds when keep is not nil.
func appendCanonicalFields(b []byte, fields map[string]*structpb.Value, keep map[string]bool) []byte {
	var scratch [16]string // The objects of an Input or a spec have a handful of fields: sorted in place.
	keys := scratch[:0]
	for key := range fields {
		if keep == nil || keep[key] {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	b = append(b, '{')
	for _, key := range keys {
		b = appendCanonical(appendCanonicalString(b, key), fields[key])
	}
	return append(b, '}')
}

// appendCanonicalString appends s with its length first.
func appendCanonicalString(b []byte, s string) []byte {
	return append(append(strconv.AppendInt(b, int64(len(s)), 10), ':'), s...)
}
