//go:build e2e

package e2e

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Deleting a claim deletes its XR and, through owner references, everything composed, and
// the connection Secret.
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

	if err := env.Kube.Delete(context.Background(), claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gcTimeout, claimGVK, ns, name)
	waitGone(t, gcTimeout, xrGVK, "", xr)
	waitGone(t, gcTimeout, deploymentGVK, ns, name)
	waitGone(t, gcTimeout, serviceGVK, ns, name)
	waitGone(t, gcTimeout, pdbGVK, ns, name)
	waitGone(t, gcTimeout, secretGVK, ns, name+"-memcached")
}
