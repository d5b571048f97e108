package fn

import (
	"maps"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
)

// TestStatusFieldsDeclared proves that every status field the function writes on an XR is a
// field of cachev1alpha1.XMemcachedStatus, and so of the XRDs generated from it
// (internal/xrd's TestXRDsAgreeWithGoTypes): Crossplane applies the desired status with
// server-side apply, which refuses an undeclared field, and every pipeline run of every XR
// would then fail. It reads the golden responses, which TestRunFunction keeps equal to what
// RunFunction returns.
func TestStatusFieldsDeclared(t *testing.T) {
	declared := jsonFields(reflect.TypeFor[cachev1alpha1.XMemcachedStatus]())
	written := map[string][]string{}
	for _, f := range fixtures(t) {
		name := filepath.Base(filepath.Dir(f))
		rsp := &fnv1.RunFunctionResponse{}
		readProtoYAML(t, filepath.Join("testdata", name, "response.yaml"), rsp)
		status := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue()
		for field := range status.GetFields() {
			written[field] = append(written[field], name)
		}
	}
	if len(written) == 0 {
		t.Fatal("no golden response writes a status field")
	}
	for field, cases := range written {
		if !declared[field] {
			sort.Strings(cases)
			t.Errorf("status.%s, written in %d cases (%s, ...), is not a field of XMemcachedStatus: add it to apis/cache/v1alpha1 and run make generate",
				field, len(cases), strings.Join(cases[:min(3, len(cases))], ", "))
		}
	}
}

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
