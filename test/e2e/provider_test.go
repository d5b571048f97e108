//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

var (
	instanceGVK              = schema.GroupVersionKind{Group: "memcached.example.com", Version: "v1alpha1", Kind: "Instance"}
	clusterProviderConfigGVK = schema.GroupVersionKind{Group: "memcached.example.com", Version: "v1alpha1", Kind: "ClusterProviderConfig"}
)

// A claim naming a ClusterProviderConfig runs in the workload cluster that config reaches:
// the function composes an Instance, the Memcached provider — running beside Crossplane in
// the control plane — applies the Deployment, Service and PodDisruptionBudget there, and the
// claim reports what runs there. Nothing runs in the control plane. Deleting the claim
// deletes what runs in the workload cluster.
//
// The workload cluster is a whole second cluster (API server, controller-manager, scheduler,
// kwok nodes) that the provider reaches only through the kubeconfig in a Secret.
func TestProviderInAnotherCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	workload, err := env.StartCluster(ctx, "workload")
	if err != nil {
		t.Fatalf("cannot start the workload cluster: %v", err)
	}
	t.Cleanup(func() { _ = workload.Stop() })
	wk, err := kube.New(workload.APIServer.Config)
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.StartProvider(ctx, 0)
	if err != nil {
		t.Fatalf("cannot start the provider: %v", err)
	}
	t.Cleanup(func() { _ = p.Stop() })

	// The application team's namespace, in both clusters: the claim lives in the control
	// plane, its Memcached runs in the workload cluster's namespace of the same name, under
	// the restricted Pod Security Standard there too.
	ns := newNamespace(t, "remote")
	if err := wk.EnsureNamespace(ctx, ns, restricted); err != nil {
		t.Fatal(err)
	}

	// The platform team's ClusterProviderConfig, with the workload cluster's kubeconfig.
	secret := ns + "-kubeconfig"
	apply(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": secret, "namespace": crossplane.Namespace},
		"stringData": map[string]any{"kubeconfig": string(workload.APIServer.KubeconfigBytes)},
	}})
	apply(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterProviderConfigGVK.GroupVersion().String(),
		"kind":       clusterProviderConfigGVK.Kind,
		"metadata":   map[string]any{"name": ns},
		"spec": map[string]any{"credentials": map[string]any{
			"source":    "Secret",
			"secretRef": map[string]any{"namespace": crossplane.Namespace, "name": secret, "key": "kubeconfig"},
		}},
	}})

	const name = "sessions"
	claim := newClaim(ns, name, 3)
	claim.Object["spec"].(map[string]any)["providerConfigRef"] = map[string]any{"name": ns, "kind": "ClusterProviderConfig"}
	start := time.Now()
	apply(t, claim)

	m := waitAvailable(t, claimGVK, ns, name, 3)
	t.Logf("claim %s/%s Available after %.1fs: %s", ns, name, time.Since(start).Seconds(), m)

	t.Run("the Memcached runs in the workload cluster", func(t *testing.T) {
		d, err := wk.Typed.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Deployment in the workload cluster: %v", err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 || d.Status.AvailableReplicas != 3 {
			t.Errorf("Deployment in the workload cluster: replicas %v, available %d; want 3 and 3", d.Spec.Replicas, d.Status.AvailableReplicas)
		}
		if _, err := wk.Typed.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("Service in the workload cluster: %v", err)
		}
		if _, err := wk.Typed.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("PodDisruptionBudget in the workload cluster: %v", err)
		}
	})

	t.Run("nothing runs in the control plane", func(t *testing.T) {
		for _, gvk := range []schema.GroupVersionKind{deploymentGVK, serviceGVK, pdbGVK} {
			r, err := env.Kube.Resource(gvk, ns)
			if err != nil {
				t.Fatal(err)
			}
			l, err := r.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Items {
				t.Errorf("%s %s/%s in the control plane, want none", gvk.Kind, ns, o.GetName())
			}
		}
		i := get(t, instanceGVK, ns, name)
		if s, reason, msg, _ := kube.Condition(i, "Ready"); s != "True" {
			t.Errorf("Instance %s/%s: Ready=%s (%s: %s), want True", ns, name, s, reason, msg)
		}
	})

	t.Run("connection secret holds endpoint, host and port", func(t *testing.T) {
		wantConnectionDetails(t, ns, name+"-memcached", name)
	})

	if err := env.Kube.Delete(ctx, claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitGone(t, gcTimeout, claimGVK, ns, name)
	waitGone(t, gcTimeout, instanceGVK, ns, name)
	waitGoneOn(t, wk, gcTimeout, deploymentGVK, ns, name)
	waitGoneOn(t, wk, gcTimeout, serviceGVK, ns, name)
	waitGoneOn(t, wk, gcTimeout, pdbGVK, ns, name)
	t.Logf("claim deleted: Instance and the workload cluster's objects gone after %.1fs", time.Since(start).Seconds())
}

// waitGoneOn waits until the object no longer exists in the cluster c reaches.
func waitGoneOn(t *testing.T, c *kube.Client, timeout time.Duration, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	err := kube.Wait(context.Background(), timeout, gvk.Kind+" "+namespace+"/"+name+" deleted", func(ctx context.Context) error {
		u, err := c.Get(ctx, gvk, namespace, name)
		switch {
		case isNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return errors.Errorf("still there (deletionTimestamp %v, finalizers %v)", u.GetDeletionTimestamp(), u.GetFinalizers())
	})
	if err != nil {
		t.Fatal(err)
	}
}
