package fn

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
)

// TestSpecCacheCopies checks what the spec cache must keep: a spec decodes the same from the
// cache as it did the first time, whatever the order of its fields and Crossplane's fields
// beside them, and each call gets a spec of its own, so that nothing a call does to its spec
// reaches the next.
func TestSpecCacheCopies(t *testing.T) {
	spec := func(extra string) *structpb.Struct {
		s, err := structpb.NewStruct(map[string]any{"size": 3, "memoryLimitMB": 128, "threads": 4, "claimRef": map[string]any{"name": extra},
			"resources": map[string]any{"requests": map[string]any{"cpu": "250m"}}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first, ok := decodedSpecs.decode(spec("a"))
	if !ok {
		t.Fatal("a valid spec does not decode")
	}
	*first.Size = 9
	first.Resources.Requests.CPU = "9"
	again, ok := decodedSpecs.decode(spec("b"))
	if !ok {
		t.Fatal("a valid spec does not decode from the cache")
	}
	if *again.Size != 3 || again.Resources.Requests.CPU != "250m" {
		t.Errorf("a change to a decoded spec reached the cache: size %d, CPU request %q", *again.Size, again.Resources.Requests.CPU)
	}
	fresh := &cachev1alpha1.XMemcachedSpec{}
	if err := json.Unmarshal(appendAPIFields(nil, spec("c")), fresh); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh, again); diff != "" {
		t.Errorf("the cached spec differs from a decoded one: -decoded, +cached:\n%s", diff)
	}
	if _, ok := decodedSpecs.decode(&structpb.Struct{Fields: map[string]*structpb.Value{"size": structpb.NewStringValue("three")}}); ok {
		t.Error("a spec with a value of the wrong type decodes")
	}
}
