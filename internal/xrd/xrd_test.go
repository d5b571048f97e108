package xrd

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
)

// TestXRDsAgreeWithGoTypes proves that the XRDs users install describe exactly the Go types
// in apis/cache/v1alpha1: the same fields, with the same JSON names and types, at every depth of
// spec and status. `make generate` derives the XRDs from the types; this test fails when
// someone changes one side without regenerating the other.
func TestXRDsAgreeWithGoTypes(t *testing.T) {
	for _, path := range []string{"../../example/definition.yaml", "../../example/namespaced/definition.yaml"} {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			xrd := readYAML(t, path)
			versions := nested(xrd, "spec", "versions").([]any)
			props := nested(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties").(map[string]any)
			for field, typ := range map[string]reflect.Type{
				"spec":   reflect.TypeFor[v1alpha1.XMemcachedSpec](),
				"status": reflect.TypeFor[v1alpha1.XMemcachedStatus](),
			} {
				if diff := cmp.Diff(shape(typ), schemaShape(props[field].(map[string]any))); diff != "" {
					t.Errorf("%s: %s: XRD schema (+) and Go type %s (-) disagree; run make generate:\n%s", path, field, typ, diff)
				}
			}
		})
	}
}

// TestNoSchemaDefaultsTheInputCouldSet proves that the API server fills in no field of a
// claim that the platform's Input, through package resolve, gives a default: a schema default
// would reach the function as if the user had written it, and the Input's default could never
// apply. Only size, which the Input has no default for, keeps one (the scale subresource needs
// it).
func TestNoSchemaDefaultsTheInputCouldSet(t *testing.T) {
	for _, path := range []string{"../../example/definition.yaml", "../../example/namespaced/definition.yaml"} {
		xrd := readYAML(t, path)
		versions, _, _ := unstructured.NestedSlice(xrd, "spec", "versions")
		spec, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec")
		var got []string
		var walk func(path string, schema map[string]any)
		walk = func(path string, schema map[string]any) {
			if d, ok := schema["default"]; ok {
				got = append(got, fmt.Sprintf("%s=%v", path, d))
			}
			props, _ := schema["properties"].(map[string]any)
			for k, v := range props {
				walk(path+"."+k, v.(map[string]any))
			}
		}
		walk("spec", spec)
		sort.Strings(got)
		if diff := cmp.Diff([]string{"spec.size=1"}, got); diff != "" {
			t.Errorf("%s: schema defaults: -want, +got:\n%s", path, diff)
		}
	}
}

// TestGenerate checks what the XRD adds beside the schema: the claim, the printer columns
// users see in `kubectl get memcached`, and the scope of each variant.
func TestGenerate(t *testing.T) {
	crd := []byte(`
spec:
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object}
    subresources:
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.replicas, labelSelectorPath: .status.selector}
`)
	cases := map[string]struct {
		reason string
		v      Variant
		want   map[string]any
	}{
		"Legacy": {
			reason: "Claims need the v1 XRD API with scope LegacyCluster, claimNames and connection secret keys; the CRD's scale subresource carries over; the claim shares the category memcached with the namespaced XR, and every kind has a short name of its own.",
			v:      Legacy,
			want: map[string]any{
				"apiVersion": "apiextensions.crossplane.io/v1", "scope": "LegacyCluster", "claim": "Memcached",
				"columns": "SIZE,AVAILABLE,ENDPOINT", "keys": "ca.crt,endpoint,host,password,port,srv,tls,tls.crt,tls.key,username", "size": "integer",
				"scale": ".spec.size .status.replicas .status.selector",
				"names": map[string]any{"kind": "XMemcached", "plural": "xmemcacheds", "shortNames": []any{"xmc"}},
				"claimNames": map[string]any{"kind": "Memcached", "plural": "memcacheds", "shortNames": []any{"mc"},
					"categories": []any{"memcached"}},
			},
		},
		"Namespaced": {
			reason: "The v2 variant is namespaced, in its own group, without claims, with the same scale subresource, in the category memcached with its own short name.",
			v:      Namespaced,
			want: map[string]any{
				"apiVersion": "apiextensions.crossplane.io/v2", "scope": "Namespaced", "claim": nil,
				"columns": "SIZE,AVAILABLE,ENDPOINT", "keys": "", "size": "integer",
				"scale": ".spec.size .status.replicas .status.selector",
				"names": map[string]any{"kind": "Memcached", "plural": "memcacheds", "shortNames": []any{"nmc"},
					"categories": []any{"memcached"}},
				"claimNames": nil,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Generate(crd, tc.v)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]any{}
			if err := yaml.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			ver := nested(out, "spec", "versions").([]any)[0].(map[string]any)
			var cols, keys []string
			for _, c := range ver["additionalPrinterColumns"].([]any) {
				cols = append(cols, c.(map[string]any)["name"].(string))
			}
			if ks, ok := nested(out, "spec", "connectionSecretKeys").([]any); ok {
				for _, k := range ks {
					keys = append(keys, k.(string))
				}
			}
			got := map[string]any{
				"apiVersion": out["apiVersion"], "scope": nested(out, "spec", "scope"), "claim": nested(out, "spec", "claimNames", "kind"),
				"columns": strings.Join(cols, ","), "keys": strings.Join(keys, ","),
				"size": nested(ver, "schema", "openAPIV3Schema", "properties", "spec", "properties", "size", "type"),
				"scale": fmt.Sprint(nested(ver, "subresources", "scale", "specReplicasPath"), " ",
					nested(ver, "subresources", "scale", "statusReplicasPath"), " ", nested(ver, "subresources", "scale", "labelSelectorPath")),
				"names": nested(out, "spec", "names"), "claimNames": nested(out, "spec", "claimNames"),
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nGenerate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if _, err := Generate([]byte("spec: {versions: []}"), Legacy); err == nil {
		t.Error("Generate(CRD without versions): want an error, got none")
	}
}

// shape describes a Go type as "field: type" lines, recursively, with JSON names.
func shape(t reflect.Type) []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := range t.NumField() {
			f := t.Field(i)
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			jsonName := strings.Split(f.Tag.Get("json"), ",")[0]
			if jsonName == "" && f.Anonymous {
				walk(ft, prefix) // An inline struct's fields are its parent's.
				continue
			}
			name := prefix + jsonName
			switch ft.Kind() {
			case reflect.Struct:
				out = append(out, name+": object")
				walk(ft, name+".")
			case reflect.Int32, reflect.Int64, reflect.Int:
				out = append(out, name+": integer")
			case reflect.Bool:
				out = append(out, name+": boolean")
			case reflect.Slice:
				out = append(out, name+": array")
			case reflect.Map:
				out = append(out, name+": object")
			case reflect.String:
				out = append(out, name+": string")
			default:
				out = append(out, name+": "+ft.Kind().String())
			}
		}
	}
	walk(t, "")
	sort.Strings(out)
	return out
}

// schemaShape describes an OpenAPI schema the same way.
func schemaShape(s map[string]any) []string {
	var out []string
	var walk func(s map[string]any, prefix string)
	walk = func(s map[string]any, prefix string) {
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			ps := p.(map[string]any)
			out = append(out, prefix+name+": "+ps["type"].(string))
			if ps["type"] == "object" {
				walk(ps, prefix+name+".")
			}
		}
	}
	walk(s, "")
	sort.Strings(out)
	return out
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// nested is the value at path in m, or nil.
func nested(m map[string]any, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(m, path...)
	return v
}
