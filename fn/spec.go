package fn

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/resolve"
)

// decodeSpec decodes the XR's spec into the API's typed spec, which is what resolve takes.
// The XRD's schema keeps values of the wrong type out, but a function must not trust that
// (an XRD edited by hand, a fixture, a fuzzer): a value of the wrong type is a field error
// naming the field, the value as written and, in resolve's words, what the field accepts, and
// every other field is still read, so that all problems are reported at once. A spec that is
// not an object at all decodes to nil.
func decodeSpec(xr *structpb.Struct, s resolve.Settings) (*cachev1alpha1.XMemcachedSpec, field.ErrorList) {
	spec := &cachev1alpha1.XMemcachedSpec{}
	v, ok := xr.GetFields()["spec"]
	if !ok {
		return spec, nil
	}
	st, ok := v.GetKind().(*structpb.Value_StructValue)
	if !ok {
		return nil, field.ErrorList{field.Invalid(specPath, written(v), "must be an object")}
	}
	if spec, ok := decodedSpecs.decode(st.StructValue); ok {
		return spec, nil
	}

	// Some field is of the wrong type: decode each field alone, keeping the good ones.
	var errs field.ErrorList
	fields := st.StructValue.GetFields()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b := appendJSON(nil, structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{k: fields[k]}}))
		if err := json.Unmarshal(b, &cachev1alpha1.XMemcachedSpec{}); err != nil {
			errs = append(errs, typeError(st.StructValue, k, err, s))
			continue
		}
		_ = json.Unmarshal(b, spec) // Decoded without error just above.
	}
	return spec, errs
}

// maxCachedSpecs bounds the spec cache, like the render cache: a control plane with more
// distinct specs decodes some of them again, which is correct, only slower.
const maxCachedSpecs = 1024

// specCache remembers what each distinct spec decodes to. A claim's spec rarely changes, yet
// the function reads it on every reconcile, and encoding/json's decoding (reflection over the
// API's types) was the largest part of reading it.
type specCache struct {
	mu sync.RWMutex
	m  map[string]*cachev1alpha1.XMemcachedSpec
}

// decodedSpecs are the specs decoded so far. Decoding is a function of the spec alone, so one
// cache serves every Function.
var decodedSpecs = specCache{m: map[string]*cachev1alpha1.XMemcachedSpec{}}

// decode decodes the API's fields of spec (Crossplane's, like claimRef and resourceRefs, are
// most of a running XR's spec, and the API ignores them) into a typed spec of the caller's
// own; false when some field is of the wrong type, which decodeSpec then reports.
func (c *specCache) decode(spec *structpb.Struct) (*cachev1alpha1.XMemcachedSpec, bool) {
	buf := keyBuffers.Get().(*[]byte)
	defer keyBuffers.Put(buf)
	key := appendCanonicalFields((*buf)[:0], spec.GetFields(), specFields)
	*buf = key
	c.mu.RLock()
	decoded, ok := c.m[string(key)] // A lookup by a converted []byte copies nothing.
	c.mu.RUnlock()
	if ok {
		// The cached spec stays as it was decoded: each call gets a copy.
		return decoded.DeepCopy(), true
	}
	decoded = &cachev1alpha1.XMemcachedSpec{}
	if json.Unmarshal(appendAPIFields(nil, spec), decoded) != nil {
		return nil, false
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedSpecs {
		for old := range c.m { // Evict one entry at random.
			delete(c.m, old)
			break
		}
	}
	c.m[string(key)] = decoded
	c.mu.Unlock()
	return decoded.DeepCopy(), true
}

// specFields are the JSON names of XMemcachedSpec's fields, those of its inlined structs
// included: what decodeSpec encodes of an XR's spec.
var specFields = jsonFields(reflect.TypeFor[cachev1alpha1.XMemcachedSpec]())

// jsonFields returns the JSON names of t's fields, as encoding/json names them, descending
// into embedded structs without a name of their own.
func jsonFields(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
			maps.Copy(names, jsonFields(f.Type))
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
	return names
}

// appendAPIFields appends the JSON encoding of the fields of spec that the API defines (see
// specFields), leaving out the rest.
func appendAPIFields(b []byte, spec *structpb.Struct) []byte {
	return appendObject(b, spec.GetFields(), specFields)
}

// appendObject appends the JSON object of fields, only those whose names keep holds when keep
// is not nil.
func appendObject(b []byte, fields map[string]*structpb.Value, keep map[string]bool) []byte {
	b = append(b, '{')
	first := true
	for key, f := range fields {
		if keep != nil && !keep[key] {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONString(b, key)
		b = append(b, ':')
		b = appendJSON(b, f)
	}
	return append(b, '}')
}

// typeError turns a decoding error of the spec's field key into a field error at the field
// that failed, with the value as written there.
func typeError(spec *structpb.Struct, key string, err error, s resolve.Settings) *field.Error {
	path := []string{key}
	want := "a value of the field's type"
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Field is the dotted path of JSON names, with the Go names of embedded structs
		// (MemcachedSpec) among them.
		path = slices.DeleteFunc(strings.Split(te.Field, "."), func(p string) bool {
			return p == "" || unicode.IsUpper(rune(p[0]))
		})
		want = describe(te.Type)
	}
	if r := s.Rule(strings.Join(path, ".")); r != "" {
		want = r
	}
	fp := specPath
	v := structpb.NewStructValue(spec)
	for i, p := range path {
		v = v.GetStructValue().GetFields()[p]
		fp = fp.Child(p)
		// A field inside a list (a toleration's): name the element that is wrong.
		if l := v.GetListValue(); l != nil && i < len(path)-1 {
			j := wrongElement(path[:i+1], l)
			if j < 0 {
				break
			}
			fp, v = fp.Index(j), l.GetValues()[j]
		}
	}
	return field.Invalid(fp, written(v), "must be "+want)
}

// wrongElement is the index of the first element of the list at path (JSON names under the
// spec) that does not decode into the spec's type, or -1.
func wrongElement(path []string, l *structpb.ListValue) int {
	for j, e := range l.GetValues() {
		v := structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{e}})
		for k := len(path) - 1; k >= 0; k-- {
			v = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{path[k]: v}})
		}
		if json.Unmarshal(appendJSON(nil, v), &cachev1alpha1.XMemcachedSpec{}) != nil {
			return j
		}
	}
	return -1
}

// describe words what a Go type of the API accepts.
func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Slice:
		return "a list"
	default:
		return "an object"
	}
}

// written is a value as the user wrote it, for an error message: an integral number as an
// integer (9, 1000000, never 1e+06), anything else as it came.
func written(v *structpb.Value) any {
	if n, ok := v.GetKind().(*structpb.Value_NumberValue); ok {
		f := n.NumberValue
		if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return int64(f)
		}
		return f
	}
	return v.AsInterface()
}

// appendJSON appends v as JSON. It is what protojson.Marshal writes for a Struct, without its
// reflection, which made it the largest cost of a call: an integral number is written without
// an exponent (so that it decodes into an integer field), a number JSON cannot hold (NaN,
// infinities) as null.
func appendJSON(b []byte, v *structpb.Value) []byte {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		return appendObject(b, k.StructValue.GetFields(), nil)
	case *structpb.Value_ListValue:
		b = append(b, '[')
		for i, e := range k.ListValue.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case *structpb.Value_StringValue:
		return appendJSONString(b, k.StringValue)
	case *structpb.Value_NumberValue:
		f := k.NumberValue
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0):
			return append(b, "null"...)
		case math.Abs(f) < 1e21:
			return strconv.AppendFloat(b, f, 'f', -1, 64)
		default:
			return strconv.AppendFloat(b, f, 'e', -1, 64)
		}
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue)
	default:
		return append(b, "null"...)
	}
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, everything else (valid UTF-8, as protobuf strings are) as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
