package crossplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// revision is a ProviderRevision with refs objects listed and a RevisionHealthy condition of
// status healthy (none when empty).
func revision(refs int, healthy string) *unstructured.Unstructured {
	status := map[string]any{}
	if refs > 0 {
		l := make([]any, refs)
		for i := range l {
			l[i] = map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": "instances.memcached.example.com"}
		}
		status["objectRefs"] = l
	}
	if healthy != "" {
		status["conditions"] = []any{map[string]any{"type": "RevisionHealthy", "status": healthy, "reason": "HealthyPackageRevision"}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "ProviderRevision",
		"metadata":   map[string]any{"name": "provider-memcached-0123", "resourceVersion": "467"},
		"status":     status,
	}}
}

func TestRevisionState(t *testing.T) {
	rev := revision(0, "True")
	conds, _, _ := unstructured.NestedSlice(rev.Object, "status", "conditions")
	conds = append(conds, map[string]any{"type": "RuntimeHealthy", "status": "False", "reason": "UnhealthyPackageRevision", "message": "no TLS Secret"})
	_ = unstructured.SetNestedSlice(rev.Object, conds, "status", "conditions")

	want := `ProviderRevision provider-memcached-0123 (resourceVersion 467) lists 0 objects; RevisionHealthy=True HealthyPackageRevision; RuntimeHealthy=False UnhealthyPackageRevision "no TLS Secret"`
	if diff := cmp.Diff(want, RevisionState(rev)); diff != "" {
		t.Errorf("RevisionState(...): -want, +got:\n%s", diff)
	}
}
