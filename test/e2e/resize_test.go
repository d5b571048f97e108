//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Resizing 3 → 1 → 2 changes the Deployment, drops the PodDisruptionBudget at one replica
// (it would block every voluntary eviction) and brings it back at two.
func TestResize(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "resize")
	const name = "sessions"
	apply(t, newClaim(ns, name, 3))
	waitAvailable(t, claimGVK, ns, name, 3)
	if !exists(t, pdbGVK, ns, name) {
		t.Fatal("want a PodDisruptionBudget at 3 replicas")
	}

	resize(t, claimGVK, ns, name, 1)
	waitAvailable(t, claimGVK, ns, name, 1)
	if spec, _, _ := replicas(t, ns, name); spec != 1 {
		t.Errorf("Deployment replicas: got %d, want 1", spec)
	}
	waitExists(t, pdbGVK, ns, name, false)

	resize(t, claimGVK, ns, name, 2)
	waitAvailable(t, claimGVK, ns, name, 2)
	waitExists(t, pdbGVK, ns, name, true)
	pdb := get(t, pdbGVK, ns, name)
	if mu, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "maxUnavailable"); mu != int64(1) {
		t.Errorf("PodDisruptionBudget maxUnavailable: got %v, want 1", mu)
	}
}

// A resize past the platform's limit (size 9, limit 3) is refused on the claim, with the
// reason and the limit, and the running Deployment is left exactly as it was.
func TestInvalidResize(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "invalid")
	const name = "sessions"
	apply(t, newClaim(ns, name, 2))
	waitAvailable(t, claimGVK, ns, name, 2)
	spec, generation, _ := replicas(t, ns, name)

	resize(t, claimGVK, ns, name, 9)
	const wantMsg = "invalid spec, nothing was changed: spec.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"
	m := waitMemcached(t, claimGVK, ns, name, "Available=False/InvalidSpec", func(m memcached) error {
		if m.Available != "False" || m.AvailableReason != "InvalidSpec" {
			return errors.New("want Available=False/InvalidSpec")
		}
		return nil
	})
	if !strings.Contains(m.Message, wantMsg) {
		t.Errorf("Available message: got %q, want it to say %q", m.Message, wantMsg)
	}

	// Give Crossplane time for more reconciles (it polls and watches the Deployment), then
	// check that none of them touched the Deployment.
	time.Sleep(5 * time.Second)
	gotSpec, gotGeneration, gotAvailable := replicas(t, ns, name)
	if gotSpec != spec || gotGeneration != generation || gotAvailable != 2 {
		t.Errorf("Deployment after the invalid resize: replicas %d generation %d available %d, want %d %d 2 (unchanged)",
			gotSpec, gotGeneration, gotAvailable, spec, generation)
	}

	// Fixing the spec applies it.
	resize(t, claimGVK, ns, name, 3)
	waitAvailable(t, claimGVK, ns, name, 3)
}
