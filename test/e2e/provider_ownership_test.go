//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// The provider never touches what it did not create. An Instance named like an application
// that already runs in the target namespace reports a conflict naming the application's
// Deployment (and, under a config that does not allow adoption, which is the default, says
// so), and neither changes it nor deletes it with the Instance; adoption takes over an
// unlabelled Deployment only when the Instance asks for it and its ClusterProviderConfig
// allows it; and what an earlier provider made (one field manager for every Instance, no
// label) migrates to the Instance's own field manager and label, keeping the same objects.
func TestProviderOwnership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)
	ns := team(t, "owner", a)
	adoptable := "adoptable-" + suffix()
	apply(t, clusterProviderConfig(adoptable, a.Config, map[string]any{"adoption": "Allowed"}))
	t.Cleanup(func() { _ = env.Kube.Delete(ctx, clusterProviderConfigGVK, "", adoptable) })

	t.Run("an application under the Instance's name is a conflict, and is left alone", func(t *testing.T) {
		app := appDeployment(t, a.Kube, ns, "shop", 2)
		apply(t, newInstance(ns, "shop", a.Config, 1, nil, nil))
		waitInstance(t, ns, "shop", "a conflict naming the application's Deployment", func(i instance) error {
			if err := refused("Deployment " + ns + "/shop exists and is not this Instance's: it has no label " + labelInstanceUID)(i); err != nil {
				return err
			}
			return unavailable("Conflict", "ClusterProviderConfig "+a.Config+" does not allow adoption (its spec.adoption is not Allowed)")(i)
		})
		wantUntouched(t, a.Kube, app)
		if getOn(t, a.Kube, serviceGVK, ns, "shop") != nil {
			t.Error("a Service shop was created beside the application's Deployment")
		}
		if err := env.Kube.Delete(ctx, instanceGVK, ns, "shop"); err != nil {
			t.Fatal(err)
		}
		waitGone(t, defaultTimeout, instanceGVK, ns, "shop")
		wantUntouched(t, a.Kube, app)
	})

	t.Run("adoption takes over an unlabelled Deployment when asked and allowed", func(t *testing.T) {
		// A Memcached someone ran by hand under the names (and so the selector) the
		// Instance renders: without adoption a conflict, with it the Instance's.
		const name = "by-hand"
		before := handMade(t, a.Kube, ns, name, "kubectl")
		apply(t, newInstance(ns, name, adoptable, 1, nil, nil))
		waitInstance(t, ns, name, "a conflict", refused("Deployment "+ns+"/"+name+" exists and is not this Instance's: it has no label "+labelInstanceUID+"; set spec.adoptionPolicy: Adopt to take it over"))
		if _, err := env.Kube.MergePatch(ctx, instanceGVK, ns, name, []byte(`{"spec":{"adoptionPolicy":"Adopt"}}`)); err != nil {
			t.Fatal(err)
		}
		i := waitInstance(t, ns, name, "Available once adopted", instanceAvailable(1))
		for _, gvk := range []schema.GroupVersionKind{deploymentGVK, serviceGVK} {
			u := getOn(t, a.Kube, gvk, ns, name)
			if u == nil || string(u.GetUID()) != before[gvk.Kind] || u.GetLabels()[labelInstanceUID] != string(i.Object.GetUID()) {
				t.Errorf("the adopted %s: %v; want the same object (UID %s) labelled with the Instance's UID %s", gvk.Kind, u, before[gvk.Kind], i.Object.GetUID())
			}
		}
	})

	t.Run("what an earlier provider made migrates to the Instance's own field manager", func(t *testing.T) {
		const name = "migrated"
		earlier := handMade(t, a.Kube, ns, name, "memcached-provider")
		apply(t, newInstance(ns, name, a.Config, 1, nil, nil))
		i := waitInstance(t, ns, name, "Available", instanceAvailable(1))
		for _, gvk := range []schema.GroupVersionKind{deploymentGVK, serviceGVK} {
			u := waitOn(t, a.Kube, gvk, ns, name, "migrated", func(u *unstructured.Unstructured) error {
				if u == nil || slices.Contains(managers(u), "memcached-provider/Apply") || u.GetLabels()[labelInstanceUID] == "" {
					return errors.Errorf("field managers %v, labels %v", managers(u), u.GetLabels())
				}
				return nil
			})
			if string(u.GetUID()) != earlier[gvk.Kind] || u.GetLabels()[labelInstanceUID] != string(i.Object.GetUID()) ||
				!slices.Contains(managers(u), "memcached-provider/"+ns+"/"+name+"/Apply") {
				t.Errorf("%s: UID %s (was %s), label %q, managers %v; want the same object, labelled with the Instance's UID, its fields the Instance's",
					gvk.Kind, u.GetUID(), earlier[gvk.Kind], u.GetLabels()[labelInstanceUID], managers(u))
			}
		}
	})
}

// image is the first container's image of a Deployment.
func image(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return ""
	}
	img, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image")
	return img
}

// handMade applies, under field manager manager, a size-1 Memcached's Deployment and Service
// named name, without the ownership label: with manager memcached-provider what a provider
// made before per-Instance field managers and ownership labels, with kubectl a Memcached run
// by hand. It returns their UIDs by kind.
func handMade(t *testing.T, c *kube.Client, ns, name, manager string) map[string]string {
	t.Helper()
	labels := map[string]any{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": name}
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
			"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{
					"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{
						"automountServiceAccountToken": false,
						"securityContext":              map[string]any{"runAsNonRoot": true, "runAsUser": int64(11211), "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
						"containers": []any{map[string]any{
							"name": "memcached", "image": "memcached:1.6.39-alpine",
							"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
						}},
					},
				},
			},
		}},
		{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
			"spec":     map[string]any{"clusterIP": "None", "selector": labels, "ports": []any{map[string]any{"name": "memcached", "port": int64(11211)}}},
		}},
	}
	out := map[string]string{}
	for _, o := range objs {
		r, err := c.Resource(o.GroupVersionKind(), ns)
		if err != nil {
			t.Fatal(err)
		}
		u, err := r.Apply(context.Background(), name, o, applyAs(manager))
		if err != nil {
			t.Fatalf("cannot apply %s as %s: %v", o.GetKind(), manager, err)
		}
		out[o.GetKind()] = string(u.GetUID())
	}
	return out
}
