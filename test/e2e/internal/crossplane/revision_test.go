package crossplane

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRevisionState(t *testing.T) {
	// What CI saw for a provider package built without its CRDs.
	rev := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "ProviderRevision",
		"metadata":   map[string]any{"name": "provider-memcached-0123", "resourceVersion": "467"},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "RevisionHealthy", "status": "True", "reason": "HealthyPackageRevision"},
			map[string]any{"type": "RuntimeHealthy", "status": "False", "reason": "UnhealthyPackageRevision", "message": "no TLS Secret"},
		}},
	}}
	want := `ProviderRevision provider-memcached-0123 (resourceVersion 467) lists 0 objects; RevisionHealthy=True HealthyPackageRevision; RuntimeHealthy=False UnhealthyPackageRevision "no TLS Secret"`
	if diff := cmp.Diff(want, RevisionState(rev)); diff != "" {
		t.Errorf("RevisionState(...): -want, +got:\n%s", diff)
	}
}
