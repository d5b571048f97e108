package crossplane

import (
	"compress/gzip"
	"os"
	"path/filepath"
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

func TestEmptyRevision(t *testing.T) {
	cases := map[string]struct {
		reason string
		rev    *unstructured.Unstructured
		want   bool
	}{
		"HealthyWithoutObjects": {reason: "Crossplane established nothing from a cut package: repair", rev: revision(0, "True"), want: true},
		"HealthyWithObjects":    {reason: "a revision that lists its objects needs nothing", rev: revision(5, "True"), want: false},
		"NotYetHealthy":         {reason: "a revision still waiting (for its TLS Secret, say) lists nothing yet and needs no repair", rev: revision(0, "False"), want: false},
		"NoConditions":          {reason: "a revision Crossplane has not reconciled yet needs no repair", rev: revision(0, ""), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := emptyRevision(tc.rev); got != tc.want {
				t.Errorf("%s\nemptyRevision(...) = %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
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

func TestClearPackageCache(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		z := gzip.NewWriter(f)
		if _, err := z.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A package cut after its metadata, and a whole one with two objects.
	write("a-provider.gz", "---\nkind: Provider\n")
	write("b-function.gz", "---\nkind: Function\n---\nkind: CustomResourceDefinition\n---\nkind: CustomResourceDefinition\n")
	if err := os.WriteFile(filepath.Join(dir, "c-broken.gz"), []byte("a cache file that is not gzip at all"), 0o600); err != nil {
		t.Fatal(err)
	}

	got, err := clearPackageCache(dir)
	if err != nil {
		t.Fatalf("clearPackageCache: %v", err)
	}
	want := "a-provider.gz: 1 document separators, b-function.gz: 3 document separators, c-broken.gz: gzip: invalid header"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clearPackageCache: -want, +got:\n%s", diff)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("clearPackageCache left %v in the cache", left)
	}
}
