//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Adoption never steals another tenant's Memcached. In a target namespace two teams share,
// under a ClusterProviderConfig that allows adoption (the most the platform can allow), team
// b's Instance named like team a's and asking to adopt gets a conflict naming team a's
// Instance, with no suggestion to adopt; team a's Deployment, Service and PodDisruptionBudget
// keep their label, image, size and generation, and team a stays Available; deleting team b's
// Instance deletes nothing of team a's. Each team acts as its tenant (example/tenant-rbac.yaml,
// by impersonation).
func TestProviderAdoptionCannotSteal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)
	teamA := team(t, "steal-a", a)
	teamB := team(t, "steal-b", a)
	tenantA, tenantB := newTenant(t, teamA), newTenant(t, teamB)
	shared := "steal-" + suffix()
	grant(t, a, shared)
	config := "steal-" + suffix()
	apply(t, clusterProviderConfig(config, a.Config, map[string]any{
		"placement": map[string]any{"allowedNamespaces": []any{shared}},
		"adoption":  "Allowed",
	}))
	t.Cleanup(func() { _ = env.Kube.Delete(ctx, clusterProviderConfigGVK, "", config) })

	applyAsTenant(t, tenantA, newInstance(teamA, "sessions", config, 2, map[string]any{"namespace": shared}, nil))
	first := waitInstance(t, teamA, "sessions", "Available", instanceAvailable(2))
	uidA := string(first.Object.GetUID())
	kinds := []schema.GroupVersionKind{deploymentGVK, serviceGVK, pdbGVK}
	before := map[string]*unstructured.Unstructured{}
	for _, gvk := range kinds {
		u := getOn(t, a.Kube, gvk, shared, "sessions")
		if u == nil || u.GetLabels()[labelInstanceUID] != uidA {
			t.Fatalf("team a's %s %s/sessions: %v; want it labelled with team a's Instance's UID %s", gvk.Kind, shared, u, uidA)
		}
		before[gvk.Kind] = u
	}

	applyAsTenant(t, tenantB, newInstance(teamB, "sessions", config, 1, map[string]any{"namespace": shared, "image": "memcached:1.6.38-alpine"}, map[string]any{"adoptionPolicy": "Adopt"}))
	waitInstance(t, teamB, "sessions", "a conflict naming team a's Instance, suggesting nothing", func(i instance) error {
		if err := refused("Deployment " + shared + "/sessions exists and is not this Instance's: it belongs to Instance " + teamA + "/sessions (" + labelInstanceUID + "=" + uidA + ")")(i); err != nil {
			return err
		}
		if err := unavailable("Conflict", teamA+"/sessions")(i); err != nil {
			return err
		}
		if strings.Contains(i.SyncedMessage, "Adopt") || strings.Contains(i.Message, "Adopt") {
			return errors.New("want no suggestion to adopt another live Instance's objects")
		}
		return nil
	})

	untouched := func(when string) {
		t.Helper()
		for _, gvk := range kinds {
			was, now := before[gvk.Kind], getOn(t, a.Kube, gvk, shared, "sessions")
			switch {
			case now == nil:
				t.Errorf("%s: team a's %s was deleted", when, gvk.Kind)
			case now.GetUID() != was.GetUID() || now.GetGeneration() != was.GetGeneration() || now.GetLabels()[labelInstanceUID] != uidA:
				t.Errorf("%s: team a's %s changed: UID %s generation %d label %q; was %s, %d, %q",
					when, gvk.Kind, now.GetUID(), now.GetGeneration(), now.GetLabels()[labelInstanceUID], was.GetUID(), was.GetGeneration(), uidA)
			case gvk == deploymentGVK && (image(now) != image(was) || specReplicas(now) != 2):
				t.Errorf("%s: team a's Deployment runs %s with %d replicas; want %s with 2", when, image(now), specReplicas(now), image(was))
			}
		}
	}
	untouched("after team b's Instance asked to adopt")
	waitInstance(t, teamA, "sessions", "still Available", instanceAvailable(2))

	if err := tenantB.Delete(ctx, instanceGVK, teamB, "sessions"); err != nil {
		t.Fatal(err)
	}
	waitGone(t, defaultTimeout, instanceGVK, teamB, "sessions")
	untouched("after team b's Instance was deleted")
	waitInstance(t, teamA, "sessions", "still Available", instanceAvailable(2))
}

// specReplicas is a Deployment's spec.replicas.
func specReplicas(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return n
}
