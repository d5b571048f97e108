//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

var compositionGVK = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1", Kind: "Composition"}

// Instances created directly obey the platform's policy for claims, read from the Input of the
// Composition labelled memcached.example.com/instance-policy=true (the example Composition):
// an image from a registry the Input does not allow is refused naming the Input's field, and a
// policy.allowedProviderConfigs added to that Input refuses an Instance and a claim naming
// another ClusterProviderConfig alike. The policy fails closed: a second labelled Composition
// (even with the same Input) refuses Instances naming both, and without a labelled one they
// are refused too.
//
// Not parallel: it changes the example Composition, which every claim uses, for a while.
func TestProviderPolicy(t *testing.T) {
	ctx := context.Background()
	a, b := workloads(t)
	ns := team(t, "policy", a, b)

	apply(t, newInstance(ns, "quay", a.Config, 1, map[string]any{"image": "quay.io/memcached/memcached:1.6"}, nil))
	waitInstance(t, ns, "quay", "refused by the Composition's policy", func(i instance) error {
		if err := refused(`spec.forProvider.image: Invalid value: "quay.io/memcached/memcached:1.6": registry quay.io is not allowed; policy.allowedRegistries allows docker.io`)(i); err != nil {
			return err
		}
		return unavailable("InvalidSpec", "policy.allowedRegistries")(i)
	})

	// Allow only workload-b, in the Input claims and Instances obey.
	objs, err := env.Example("composition.yaml")
	if err != nil || len(objs) != 1 {
		t.Fatalf("cannot read example/composition.yaml: %v", err)
	}
	restricted := objs[0].DeepCopy()
	steps, _, _ := unstructured.NestedSlice(restricted.Object, "spec", "pipeline")
	in := steps[0].(map[string]any)["input"].(map[string]any)
	in["policy"].(map[string]any)["allowedProviderConfigs"] = []any{map[string]any{"name": b.Config}}
	if err := unstructured.SetNestedSlice(restricted.Object, steps, "spec", "pipeline"); err != nil {
		t.Fatal(err)
	}
	apply(t, restricted)
	t.Cleanup(func() {
		if err := env.ApplyExample(ctx, "composition.yaml"); err != nil {
			t.Errorf("cannot restore the example Composition: %v", err)
		}
	})

	apply(t, newInstance(ns, "elsewhere", a.Config, 1, nil, nil))
	waitInstance(t, ns, "elsewhere", "refused", refused(`spec.providerConfigRef: Invalid value: "ClusterProviderConfig/`+a.Config+`": is not allowed; policy.allowedProviderConfigs allows ClusterProviderConfig/`+b.Config))
	apply(t, newInstance(ns, "allowed", b.Config, 1, nil, nil))
	waitInstance(t, ns, "allowed", "Available", instanceAvailable(1))

	apply(t, remoteClaim(ns, "claimed", a.Config, 1))
	waitMemcached(t, claimGVK, ns, "claimed", "refused", func(m memcached) error {
		want := `invalid spec, nothing was changed: spec.providerConfigRef: Invalid value: "ClusterProviderConfig/` + a.Config + `": is not allowed; policy.allowedProviderConfigs allows ClusterProviderConfig/` + b.Config
		if m.Available != "False" || m.AvailableReason != "InvalidSpec" || m.Message != want {
			return errors.Errorf("want Available=False/InvalidSpec %q", want)
		}
		return nil
	})
	if getOn(t, a.Kube, deploymentGVK, ns, "claimed") != nil || exists(t, instanceGVK, ns, "claimed") {
		t.Error("a claim the policy refuses was placed anyway")
	}

	// A second labelled Composition, with the very same Input: Instances are refused, naming
	// both, rather than obeying whichever the provider read.
	twin := restricted.DeepCopy()
	twin.SetName("a-twin-" + suffix())
	woken := time.Now()
	apply(t, twin)
	t.Cleanup(func() { _ = env.Kube.Delete(ctx, compositionGVK, "", twin.GetName()) })
	both := "Compositions " + twin.GetName() + " and " + objs[0].GetName() + " are both labelled memcached.example.com/instance-policy=true, so Instances are refused"
	// An Instance that has settled (Available, its next poll --settled-poll away) is refused
	// at once too: a change of the policy wakes every Instance.
	waitInstance(t, ns, "allowed", "settled, refused naming both Compositions", refused(both))
	wokenIn(t, "a second labelled Composition refused a settled Instance", woken)
	apply(t, newInstance(ns, "twice", b.Config, 1, nil, nil))
	waitInstance(t, ns, "twice", "refused naming both Compositions", refused(both))
	if err := env.Kube.Delete(ctx, compositionGVK, "", twin.GetName()); err != nil {
		t.Fatal(err)
	}
	waitInstance(t, ns, "twice", "Available once one Composition is labelled", instanceAvailable(1))
	waitInstance(t, ns, "allowed", "Available again once one Composition is labelled", instanceAvailable(1))

	// No labelled Composition: the policy fails closed (the suite runs the provider without
	// --allow-builtin-policy), rather than allowing any registry and any ProviderConfig.
	if _, err := env.Kube.MergePatch(ctx, compositionGVK, "", objs[0].GetName(), []byte(`{"metadata":{"labels":{"memcached.example.com/instance-policy":null}}}`)); err != nil {
		t.Fatal(err)
	}
	apply(t, newInstance(ns, "unlabelled", b.Config, 1, map[string]any{"image": "quay.io/memcached/memcached:1.6"}, nil))
	waitInstance(t, ns, "unlabelled", "refused without a policy", refused("no Composition is labelled memcached.example.com/instance-policy=true, so Instances have no policy and are refused"))
	if getOn(t, b.Kube, deploymentGVK, ns, "unlabelled") != nil {
		t.Error("an Instance without a policy was placed anyway")
	}
}
