package resolve

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
)

// schemas are the generated schemas of a Memcached's spec (`make generate` writes them from
// the kubebuilder markers of apis/): the XRDs' spec and the Instance CRD's forProvider, each
// at its path in its file.
var schemas = map[string][]string{
	"example/definition.yaml":                                    {"spec"},
	"example/namespaced/definition.yaml":                         {"spec"},
	"package-provider/crds/memcached.example.com_instances.yaml": {"spec", "forProvider"},
}

// TestSchemaBounds proves that the schemas' static bounds and resolve's built-in limits are
// one set of limits: at every minimum and maximum of an integer field in a generated schema,
// resolve accepts the bound and refuses one beyond it, so neither side refuses what the other
// accepts. A field the schema does not bound from above has no built-in maximum in resolve
// (only a policy one, which the platform may raise), so resolve accepts any int32 under the
// most permissive policy. A marker and a constant that disagree fail here: change one, and
// run `make generate`.
func TestSchemaBounds(t *testing.T) {
	builtIn := defaults(t)
	permissive, err := NewSettings(&v1beta1.Input{Policy: v1beta1.Policy{
		MaxSize: ptr.To[int32](math.MaxInt32), MaxMemoryLimitMB: ptr.To[int32](math.MaxInt32), MaxExternalStorageMB: ptr.To[int32](math.MaxInt32),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for file, at := range schemas {
		bounds := integerBounds(t, filepath.Join("..", "..", file), at)
		if len(bounds) < 5 {
			t.Fatalf("%s: found bounds of %d integer fields only: %v", file, len(bounds), bounds)
		}
		for _, path := range slices.Sorted(maps.Keys(bounds)) {
			b := bounds[path]
			t.Run(file+"/"+path, func(t *testing.T) {
				if b.min != nil {
					wantResolved(t, path, *b.min, builtIn, true)
					wantResolved(t, path, *b.min-1, builtIn, false)
				}
				if b.max != nil {
					wantResolved(t, path, *b.max, builtIn, true)
					wantResolved(t, path, *b.max+1, builtIn, false)
				} else {
					wantResolved(t, path, math.MaxInt32, permissive, true)
				}
			})
		}
	}
}

// wantResolved checks that resolve accepts value at the spec's field path under s, or, when
// accept is false, refuses it at that field. The cache is as large as the built-in policy
// allows, which bounds maxItemSizeMB from above, unless path is memoryLimitMB itself.
func wantResolved(t *testing.T, path string, value int64, s Settings, accept bool) {
	t.Helper()
	raw := map[string]any{"memoryLimitMB": DefaultMaxMemoryLimitMB}
	// A nested field (externalStorage.sizeMB) is set inside its object.
	at := raw
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next := map[string]any{}
		at[p] = next
		at = next
	}
	at[parts[len(parts)-1]] = value
	j, _ := json.Marshal(raw)
	var spec v1alpha1.MemcachedSpec
	if err := json.Unmarshal(j, &spec); err != nil {
		t.Fatalf("spec %s: %v", j, err)
	}
	_, errs := Memcached(field.NewPath("spec"), spec, "sessions", "team-a", s)
	refused := slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == "spec."+path })
	switch {
	case accept && len(errs) > 0:
		t.Errorf("the schema accepts %s: %d, and resolve refuses it: %v", path, value, errs)
	case !accept && !refused:
		t.Errorf("the schema refuses %s: %d, and resolve accepts it (errors: %v): the marker on apis/cache/v1alpha1 and resolve's limit disagree", path, value, errs)
	}
}

// bound is an integer field's minimum and maximum in a schema; nil when it has none.
type bound struct{ min, max *int64 }

// integerBounds are the bounds of every integer property of the schema at path at in file,
// by dotted path, for the fields that have one.
func integerBounds(t *testing.T, file string, at []string) map[string]bound {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schema `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Spec.Versions) != 1 {
		t.Fatalf("%s: %v, %d versions", file, err, len(doc.Spec.Versions))
	}
	s := doc.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, p := range at {
		next, ok := s.Properties[p]
		if !ok {
			t.Fatalf("%s: no property %s", file, p)
		}
		s = next
	}
	out := map[string]bound{}
	var walk func(s schema, prefix string)
	walk = func(s schema, prefix string) {
		for name, p := range s.Properties {
			path := prefix + name
			if p.Type == "integer" && (p.Minimum != nil || p.Maximum != nil) {
				out[path] = bound{min: p.Minimum, max: p.Maximum}
			}
			walk(p, path+".")
		}
	}
	walk(s, "")
	return out
}

// schema is the part of an OpenAPI schema the bounds are in.
type schema struct {
	Type       string            `json:"type"`
	Minimum    *int64            `json:"minimum"`
	Maximum    *int64            `json:"maximum"`
	Properties map[string]schema `json:"properties"`
}
