//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Deployment deleted by hand comes back, and the claim is Available again.
func TestDeploymentDeletedByHand(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "deleted")
	const name = "sessions"
	apply(t, newClaim(ns, name, 2))
	waitAvailable(t, claimGVK, ns, name, 2)
	old := get(t, deploymentGVK, ns, name).GetUID()

	if err := env.Kube.Typed.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMemcached(t, claimGVK, ns, name, "a new Deployment, Available again", func(m memcached) error {
		d, err := env.Kube.Typed.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.UID == old {
			return errors.New("the Deployment has not been deleted yet")
		}
		return available(ns, name, 2)(m)
	})
}

// The function killed mid-run (SIGKILL, as in an OOM kill), while a resize waits for it:
// nothing composed is lost or changed while it is down, and once it is back the resize is
// applied and the claim recovers.
//
// Not parallel: every other scenario's claims depend on the function too.
func TestFunctionKilledAndRestarted(t *testing.T) {
	ns := newNamespace(t, "restart")
	const name = "sessions"
	apply(t, newClaim(ns, name, 3))
	before := waitAvailable(t, claimGVK, ns, name, 3)
	deployment := get(t, deploymentGVK, ns, name).GetUID()
	service := get(t, serviceGVK, ns, name).GetUID()

	if err := env.Function.Kill(); err != nil {
		t.Fatal(err)
	}
	// Whatever happens below, leave the function running for the other scenarios.
	t.Cleanup(func() {
		if !env.Function.Running() {
			if err := env.Function.Start(context.Background()); err != nil {
				t.Errorf("cannot start the function again: %v", err)
			}
		}
	})
	resize(t, claimGVK, ns, name, 2)
	// Crossplane now calls the function for the resize; the call waits for a connection (up to
	// the XR's two-minute reconcile timeout) rather than failing at once.
	time.Sleep(5 * time.Second)

	// While it is down, what runs and what the claim reports stay as they were.
	if spec, _, avail := replicas(t, ns, name); spec != 3 || avail != 3 {
		t.Errorf("Deployment while the function is down: replicas %d available %d, want 3 3", spec, avail)
	}
	during, err := getMemcached(context.Background(), claimGVK, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if during.Endpoint != before.Endpoint || during.Available != "True" {
		t.Errorf("claim while the function is down: %s, want endpoint %q and Available=True kept", during, before.Endpoint)
	}
	t.Logf("claim while the function is down: %s", during)
	wantConnectionDetails(t, ns, name+"-memcached", name)

	if err := env.Function.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, claimGVK, ns, name, 2)
	if got := get(t, deploymentGVK, ns, name).GetUID(); got != deployment {
		t.Errorf("the Deployment was replaced (uid %s, was %s), want it kept", got, deployment)
	}
	if got := get(t, serviceGVK, ns, name).GetUID(); got != service {
		t.Errorf("the Service was replaced (uid %s, was %s), want it kept", got, service)
	}
	if !exists(t, pdbGVK, ns, name) {
		t.Error("want the PodDisruptionBudget kept at 2 replicas")
	}
	wantConnectionDetails(t, ns, name+"-memcached", name)
}
