//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// A footprint is what a claim's user relies on staying put through a fault: the XR, the
// composed objects (by UID: the same object, not one recreated under the same name), the
// endpoint in the claim's status and the connection Secret.
type footprint struct {
	XR                               string
	Deployment, Service, PDB, Secret types.UID
	Endpoint                         string
}

// uidOf returns the object's UID, or "" when there is none.
func uidOf(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) types.UID {
	t.Helper()
	u, err := env.Kube.Get(context.Background(), gvk, namespace, name)
	if isNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("cannot get %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	return u.GetUID()
}

// footprintOf records the footprint of the claim name in namespace, whose connection Secret
// is <name>-memcached.
func footprintOf(t *testing.T, namespace, name string) footprint {
	t.Helper()
	m, err := getMemcached(context.Background(), claimGVK, namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	xr, _, _ := unstructured.NestedString(m.Object.Object, "spec", "resourceRef", "name")
	return footprint{
		XR:         xr,
		Deployment: uidOf(t, deploymentGVK, namespace, name),
		Service:    uidOf(t, serviceGVK, namespace, name),
		PDB:        uidOf(t, pdbGVK, namespace, name),
		Secret:     uidOf(t, secretGVK, namespace, name+"-memcached"),
		Endpoint:   m.Endpoint,
	}
}

// wantKept fails the test unless the claim's footprint is what it was before the fault, but
// for the fields named in replaced ("Service" for a Service deleted by hand), which must
// hold a new object; and unless the connection Secret still holds the connection details.
func wantKept(t *testing.T, before footprint, namespace, name string, replaced ...string) {
	t.Helper()
	after := footprintOf(t, namespace, name)
	for _, f := range []struct{ field, before, after string }{
		{"XR", before.XR, after.XR},
		{"Deployment", string(before.Deployment), string(after.Deployment)},
		{"Service", string(before.Service), string(after.Service)},
		{"PDB", string(before.PDB), string(after.PDB)},
		{"Secret", string(before.Secret), string(after.Secret)},
		{"Endpoint", before.Endpoint, after.Endpoint},
	} {
		want := !slices.Contains(replaced, f.field)
		switch {
		case want && f.after != f.before:
			t.Errorf("%s: got %q, want it kept: %q", f.field, f.after, f.before)
		case !want && (f.after == "" || f.after == f.before):
			t.Errorf("%s: got %q, want a new one (was %q)", f.field, f.after, f.before)
		}
	}
	wantConnectionDetails(t, namespace, name+"-memcached", name)
}

// A Deployment deleted by hand comes back, and the claim is Available again.
func TestDeploymentDeletedByHand(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "deleted")
	const name = "sessions"
	apply(t, newClaim(ns, name, 2))
	waitAvailable(t, claimGVK, ns, name, 2)
	before := footprintOf(t, ns, name)

	if err := env.Kube.Typed.AppsV1().Deployments(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMemcached(t, claimGVK, ns, name, "a new Deployment, Available again", func(m memcached) error {
		d, err := env.Kube.Typed.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.UID == before.Deployment {
			return errors.New("the Deployment has not been deleted yet")
		}
		return available(ns, name, 2)(m)
	})
	wantKept(t, before, ns, name, "Deployment")
}

// A Service deleted by hand comes back under the same name, so the endpoint holds; the
// claim is Available again and nothing else was touched.
func TestServiceDeletedByHand(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "svc-deleted")
	const name = "sessions"
	apply(t, newClaim(ns, name, 2))
	waitAvailable(t, claimGVK, ns, name, 2)
	before := footprintOf(t, ns, name)

	if err := env.Kube.Typed.CoreV1().Services(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitMemcached(t, claimGVK, ns, name, "a new Service, Available", func(m memcached) error {
		s, err := env.Kube.Typed.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.UID == before.Service {
			return errors.New("the Service has not been deleted yet")
		}
		if s.Spec.ClusterIP != "None" {
			return errors.Errorf("the new Service has clusterIP %q, want None (headless)", s.Spec.ClusterIP)
		}
		return available(ns, name, 2)(m)
	})
	t.Logf("Service recreated within %.1fs", time.Since(deleted).Seconds())
	wantKept(t, before, ns, name, "Service")
}

// A Deployment scaled by hand (`kubectl scale`, through the scale subresource) is scaled
// back to the claim's size: the claim's spec is the truth, and the same Deployment carries
// on.
func TestDeploymentScaledByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "scaled")
	const name = "sessions"
	apply(t, newClaim(ns, name, 3))
	waitAvailable(t, claimGVK, ns, name, 3)
	before := footprintOf(t, ns, name)
	_, generation, _ := replicas(t, ns, name)

	deployments := env.Kube.Typed.AppsV1().Deployments(ns)
	scale, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if _, err := deployments.UpdateScale(ctx, name, scale, metav1.UpdateOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
	scaled := time.Now()
	waitMemcached(t, claimGVK, ns, name, "the Deployment back at 3 replicas, Available", func(m memcached) error {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		// Two new generations at least: the scale to 1 and the way back to 3.
		if d.Generation < generation+2 || d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
			return errors.Errorf("Deployment generation %d (was %d), replicas %v", d.Generation, generation, d.Spec.Replicas)
		}
		return available(ns, name, 3)(m)
	})
	t.Logf("scaled back to 3 and Available within %.1fs", time.Since(scaled).Seconds())
	wantKept(t, before, ns, name)
}

// The API server restarted during a resize (an upgrade, a crash): every client —
// Crossplane, the controller-manager, the scheduler, kwok — loses its connections and
// watches at once. The resize still lands, and nothing else changes.
//
// Not parallel: every other scenario needs the API server.
func TestAPIServerRestartedDuringResize(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "apiserver")
	const name = "sessions"
	apply(t, newClaim(ns, name, 2))
	waitAvailable(t, claimGVK, ns, name, 2)
	before := footprintOf(t, ns, name)

	// Growing takes a pod scheduled and made ready: the restart lands in the middle of it.
	resize(t, claimGVK, ns, name, 3)
	spec, _, avail := replicas(t, ns, name)
	t.Logf("restarting the API server; the Deployment has replicas %d, %d available", spec, avail)
	start := time.Now()
	if err := env.ControlPlane.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server restarted in %.1fs", time.Since(start).Seconds())
	m := waitAvailable(t, claimGVK, ns, name, 3)
	t.Logf("claim Available at the new size %.1fs after the restart began: %s", time.Since(start).Seconds(), m)
	if spec, _, avail = replicas(t, ns, name); spec != 3 || avail != 3 {
		t.Errorf("Deployment: replicas %d available %d, want 3 3", spec, avail)
	}
	wantKept(t, before, ns, name)
}

// The function killed mid-run (SIGKILL, as in an OOM kill), while a resize waits for it:
// nothing composed is lost or changed while it is down, and once it is back the resize is
// applied and the claim recovers, with the same objects. With the node lane on, the function
// is a pod on the real node: Kill crashes it twice, and the kubelet holds it in
// CrashLoopBackOff for its first back-off (10 s) before it comes back on its own.
//
// Not parallel: every other scenario's claims depend on the function too.
func TestFunctionKilledAndRestarted(t *testing.T) {
	ns := newNamespace(t, "restart")
	const name = "sessions"
	apply(t, newClaim(ns, name, 3))
	waitAvailable(t, claimGVK, ns, name, 3)
	before := footprintOf(t, ns, name)

	// Killed between calls, as the host process was: a call in flight would fail and show on
	// the claim (FatalError), which is another scenario.
	waitFunctionIdle(t, 2*time.Second)
	killed := time.Now()
	if err := env.Function.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("function killed in %.1fs", time.Since(killed).Seconds())
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
	wantKept(t, before, ns, name)
	if env.Function.Running() {
		t.Fatalf("the function was back %.1fs after it was killed, before the checks above ran: they proved nothing", time.Since(killed).Seconds())
	}
	t.Logf("the function was still down %.1fs after it was killed", time.Since(killed).Seconds())

	if err := env.Function.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, claimGVK, ns, name, 2)
	// Size 2 keeps the PodDisruptionBudget: the same one.
	wantKept(t, before, ns, name)
}

// waitFunctionIdle waits until the function has answered no call for quiet.
func waitFunctionIdle(t *testing.T, quiet time.Duration) {
	t.Helper()
	last, since := int64(-1), time.Now()
	err := kube.Wait(context.Background(), defaultTimeout, "the function idle for "+quiet.String(), func(ctx context.Context) error {
		n, err := env.Function.RunFunctionCalls(ctx)
		if err != nil {
			return err
		}
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) < quiet {
			return errors.Errorf("%d calls, the last less than %s ago", n, quiet)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
