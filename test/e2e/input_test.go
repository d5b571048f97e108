//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A platform whose policy allows caches of at most 32 MB, with a default of 32 MB, serves a
// claim that names no cache size with that default: the real API server fills in no schema
// default before the function runs, so the Input's default is the one that applies.
func TestInputDefaultsApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	objs, err := env.Example("composition.yaml")
	if err != nil || len(objs) != 1 {
		t.Fatalf("cannot read example/composition.yaml: %v", err)
	}
	comp := objs[0]
	comp.SetName("small-caches.cache.example.com")
	steps, _, _ := unstructured.NestedSlice(comp.Object, "spec", "pipeline")
	in := steps[0].(map[string]any)["input"].(map[string]any)
	_ = unstructured.SetNestedField(in, int64(32), "defaults", "memoryLimitMB")
	_ = unstructured.SetNestedField(in, int64(32), "policy", "maxMemoryLimitMB")
	_ = unstructured.SetNestedSlice(comp.Object, steps, "spec", "pipeline")
	apply(t, comp)
	t.Cleanup(func() { _ = env.Kube.Delete(ctx, comp.GroupVersionKind(), "", comp.GetName()) })

	ns := newNamespace(t, "small")
	claim := newClaim(ns, "sessions", 1)
	_ = unstructured.SetNestedField(claim.Object, comp.GetName(), "spec", "compositionRef", "name")
	apply(t, claim)
	waitAvailable(t, claimGVK, ns, "sessions", 1)

	if got, _, _ := unstructured.NestedFieldNoCopy(get(t, claimGVK, ns, "sessions").Object, "spec", "memoryLimitMB"); got != nil {
		t.Errorf("claim spec.memoryLimitMB: the API server filled in %v; want it left unset", got)
	}
	d, err := env.Kube.Typed.AppsV1().Deployments(ns).Get(ctx, "sessions", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--memory-limit=32") {
		t.Errorf("memcached args %v: want --memory-limit=32, the Input's default", args)
	}
}
