//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A claim naming a providerConfigRef where the kind Instance is not served: Crossplane answers
// the step's declared `instance` schema with an empty one, and the claim is
// Available=False/InvalidSpec naming spec.providerConfigRef and saying the kind is not served,
// Synced (no apply that cannot succeed), with no Instance composed. This lane installs
// provider-memcached, so the kind is always served here: the Composition declares the schema
// at a version the API server does not serve (v1alpha9), which Crossplane answers exactly as
// it answers a cluster without the provider (an empty schema); the production-shaped lane has
// a provider whose ManagedResourceDefinition is not active. Without the providerConfigRef the
// same claim runs here, Available.
func TestInstanceKindNotServed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	comp, err := exampleCompositionNamed("unserved-instance.cache.example.com")
	if err != nil {
		t.Fatal(err)
	}
	steps, _, _ := unstructured.NestedSlice(comp.Object, "spec", "pipeline")
	schemas := []any{map[string]any{"requirementName": "instance", "apiVersion": "memcached.example.com/v1alpha9", "kind": "Instance"}}
	_ = unstructured.SetNestedSlice(steps[0].(map[string]any), schemas, "requirements", "requiredSchemas")
	_ = unstructured.SetNestedSlice(comp.Object, steps, "spec", "pipeline")
	apply(t, comp)
	t.Cleanup(func() { _ = env.Kube.Delete(ctx, comp.GroupVersionKind(), "", comp.GetName()) })

	ns := newNamespace(t, "unserved")
	claim := remoteClaim(ns, "sessions", "workload-a", 1)
	_ = unstructured.SetNestedField(claim.Object, comp.GetName(), "spec", "compositionRef", "name")
	apply(t, claim)
	waitMemcached(t, claimGVK, ns, "sessions", "InvalidSpec naming providerConfigRef", func(m memcached) error {
		switch {
		case m.Synced != "True" || m.Available != "False" || m.AvailableReason != "InvalidSpec":
			return errors.New("want Synced=True and Available=False/InvalidSpec")
		case !strings.Contains(m.Message, "spec.providerConfigRef") || !strings.Contains(m.Message, "Instance.memcached.example.com is not served") ||
			!strings.Contains(m.Message, "provider-memcached"):
			return errors.New("want the message to name spec.providerConfigRef, the kind not served and provider-memcached")
		}
		return nil
	})
	if exists(t, instanceGVK, ns, "sessions") {
		t.Errorf("an Instance %s/sessions was composed although its kind is not served", ns)
	}

	if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, "sessions", []byte(`{"spec":{"providerConfigRef":null}}`)); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, claimGVK, ns, "sessions", 1)
}
