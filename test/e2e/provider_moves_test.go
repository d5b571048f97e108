//go:build e2e

package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// A claim moves between clusters, and between this cluster and another, in every direction,
// by changing its providerConfigRef: it becomes Available where it now runs, nothing of it is
// left where it ran (no Deployment, Service or PodDisruptionBudget, no Instance), and nothing
// of anyone else's is deleted (an application beside it in each place keeps running).
//
// An Instance's providerConfigRef is immutable: the function composes a new Instance for the
// new placement and Crossplane deletes the old one, whose deletion makes the provider delete
// what it ran in the old cluster.
func TestProviderMovesBetweenClusters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := workloads(t)
	ns := team(t, "moving", a, b)
	const name = "sessions"

	// Someone else's application in each place the claim will run.
	here := env.Kube
	bystanders := map[string]*unstructured.Unstructured{
		"a":    appDeployment(t, a.Kube, ns, "shop", 1),
		"b":    appDeployment(t, b.Kube, ns, "shop", 1),
		"here": appDeployment(t, here, ns, "shop", 1),
	}

	place := func(where string) {
		t.Helper()
		switch where {
		case "here":
			if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, name, []byte(`{"spec":{"providerConfigRef":null}}`)); err != nil {
				t.Fatal(err)
			}
		default:
			c := map[string]*workloadCluster{"a": a, "b": b}[where]
			if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, name, []byte(`{"spec":{"providerConfigRef":{"kind":"ClusterProviderConfig","name":"`+c.Config+`"}}}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	clusters := map[string]*kube.Client{"a": a.Kube, "b": b.Kube, "here": here}
	runsOnlyIn := func(t *testing.T, where string) {
		t.Helper()
		waitAvailable(t, claimGVK, ns, name, 2)
		for w, c := range clusters {
			for _, gvk := range []schema.GroupVersionKind{deploymentGVK, serviceGVK, pdbGVK} {
				if w == where {
					waitOn(t, c, gvk, ns, name, "exists in "+w, present)
				} else {
					waitGoneOn(t, c, gcTimeout, gvk, ns, name)
				}
			}
		}
		l, err := env.Kube.Resource(instanceGVK, ns)
		if err != nil {
			t.Fatal(err)
		}
		is, err := l.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if where == "here" {
			want = 0
		}
		err = kube.Wait(ctx, gcTimeout, "the claim's Instances", func(ctx context.Context) error {
			is, err = l.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(is.Items) != want {
				return errors.Errorf("%d Instances, want %d", len(is.Items), want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for w, before := range bystanders {
			if now := getOn(t, clusters[w], deploymentGVK, ns, "shop"); now == nil || now.GetUID() != before.GetUID() {
				t.Errorf("the application beside the claim in %s: %v, want it untouched (UID %s)", w, now, before.GetUID())
			}
		}
	}

	apply(t, remoteClaim(ns, name, a.Config, 2))
	runsOnlyIn(t, "a")
	// Three moves cover every direction: remote to remote, remote to here, here to remote.
	// More, in a row, would trip Crossplane's circuit breaker of the claim's XR (100 watch
	// events, then one reconcile per 30 s for 5 minutes), which a claim moved over and over
	// within a minute would meet too.
	for _, step := range []struct{ from, to string }{{"a", "b"}, {"b", "here"}, {"here", "a"}} {
		t.Run(step.from+" to "+step.to, func(t *testing.T) {
			place(step.to)
			runsOnlyIn(t, step.to)
		})
	}

	if err := env.Kube.Delete(ctx, claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gcTimeout, claimGVK, ns, name)
	for _, c := range clusters {
		waitGoneOn(t, c, gcTimeout, deploymentGVK, ns, name)
	}
}

// present accepts an object that exists.
func present(u *unstructured.Unstructured) error {
	if u == nil {
		return errors.New("absent")
	}
	return nil
}
