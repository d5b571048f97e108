//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Deleting a claim deletes its XR and, through owner references, everything composed, and
// the connection Secret. Each of them is first seen to exist, so that "gone" means deleted.
func TestClaimDeletion(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "delete")
	const name = "sessions"
	apply(t, newClaim(ns, name, 2))
	m := waitAvailable(t, claimGVK, ns, name, 2)
	xr, _, _ := unstructured.NestedString(m.Object.Object, "spec", "resourceRef", "name")
	if xr == "" {
		t.Fatal("the claim names no XR in spec.resourceRef")
	}
	wantConnectionDetails(t, ns, name+"-memcached", name)

	type object struct {
		gvk             schema.GroupVersionKind
		namespace, name string
	}
	objects := []object{
		{claimGVK, ns, name},
		{xrGVK, "", xr},
		{deploymentGVK, ns, name},
		{serviceGVK, ns, name},
		// Size 2 is highly available: a PodDisruptionBudget keeps one pod up.
		{pdbGVK, ns, name},
		{secretGVK, ns, name + "-memcached"},
	}
	// Whatever else the XR composed (the auth Secret, the NetworkPolicy) goes too.
	refs, _, _ := unstructured.NestedSlice(get(t, xrGVK, "", xr).Object, "spec", "resourceRefs")
	if len(refs) == 0 {
		t.Fatalf("XR %s names no composed resource in spec.resourceRefs", xr)
	}
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		field := func(k string) string { s, _ := ref[k].(string); return s }
		o := object{schema.FromAPIVersionAndKind(field("apiVersion"), field("kind")), field("namespace"), field("name")}
		if o.name == "" {
			t.Fatalf("the XR's spec.resourceRefs holds a reference without a name: %v", ref)
		}
		if o.namespace == "" {
			o.namespace = ns
		}
		if !slices.Contains(objects, o) {
			objects = append(objects, o)
		}
	}
	for _, o := range objects {
		if !exists(t, o.gvk, o.namespace, o.name) {
			t.Fatalf("before deleting the claim: want %s %s/%s, there is none", o.gvk.Kind, o.namespace, o.name)
		}
	}
	t.Logf("before deleting the claim: %d objects exist: %v", len(objects), objects)

	if err := env.Kube.Delete(context.Background(), claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	for _, o := range objects {
		waitGone(t, gcTimeout, o.gvk, o.namespace, o.name)
	}
}
