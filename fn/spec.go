package fn

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
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
	if b, err := json.Marshal(st.StructValue.AsMap()); err == nil && json.Unmarshal(b, spec) == nil {
		return spec, nil
	}
	spec = &cachev1alpha1.XMemcachedSpec{}

	// Some field is of the wrong type: decode each field alone, keeping the good ones.
	var errs field.ErrorList
	fields := st.StructValue.GetFields()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, err := json.Marshal(map[string]any{k: fields[k].AsInterface()})
		if err == nil {
			err = json.Unmarshal(b, &cachev1alpha1.XMemcachedSpec{})
		}
		if err != nil {
			errs = append(errs, typeError(st.StructValue, k, err, s))
			continue
		}
		_ = json.Unmarshal(b, spec) // Decoded without error just above.
	}
	return spec, errs
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
		b, err := json.Marshal(v.AsInterface())
		if err != nil || json.Unmarshal(b, &cachev1alpha1.XMemcachedSpec{}) != nil {
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
