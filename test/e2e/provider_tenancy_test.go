//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// Two teams sharing a workload cluster never reach each other's objects. By default each
// team's Instances place their objects in the target namespace named like the team's own, so
// two Instances named alike never meet; placing into another team's namespace is refused.
// Where the platform allows a shared namespace, the second team's Instance of the same name
// reports a conflict naming the first team's Instance, and deleting it deletes nothing of the
// first team's.
func TestProviderTwoTeams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)
	x := team(t, "team-x", a)
	y := team(t, "team-y", a)
	shared := "cache-" + suffix()
	grant(t, a, shared)
	config := "shared-" + suffix()
	apply(t, clusterProviderConfig(config, a.Config, map[string]any{"placement": map[string]any{"allowedNamespaces": []any{shared}}}))
	t.Cleanup(func() { _ = env.Kube.Delete(ctx, clusterProviderConfigGVK, "", config) })

	t.Run("each team's Instances run in its own namespace", func(t *testing.T) {
		apply(t, newInstance(x, "carts", config, 1, nil, nil))
		apply(t, newInstance(y, "carts", config, 1, nil, nil))
		for _, ns := range []string{x, y} {
			i := waitInstance(t, ns, "carts", "Available", instanceAvailable(1))
			d := getOn(t, a.Kube, deploymentGVK, ns, "carts")
			if d == nil || d.GetLabels()[labelInstanceUID] != string(i.Object.GetUID()) {
				t.Errorf("Deployment %s/carts in the workload cluster: %v, want it labelled with Instance %s/carts's UID", ns, d, ns)
			}
		}
	})

	t.Run("another team's namespace is refused", func(t *testing.T) {
		apply(t, newInstance(y, "intruder", config, 1, map[string]any{"namespace": x}, nil))
		waitInstance(t, y, "intruder", "refused", func(i instance) error {
			if err := refused(`spec.forProvider.namespace: Invalid value: "` + x + `": ClusterProviderConfig ` + config + ` allows only namespace ` + y + ` (the Instance's own) and ` + shared)(i); err != nil {
				return err
			}
			return unavailable("InvalidSpec", "placement.allowedNamespaces")(i)
		})
		if getOn(t, a.Kube, deploymentGVK, x, "intruder") != nil {
			t.Errorf("a Deployment intruder exists in team %s's namespace", x)
		}
	})

	t.Run("in a shared namespace the second Instance of a name is a conflict, and deleting it deletes nothing", func(t *testing.T) {
		apply(t, newInstance(x, "sessions", config, 2, map[string]any{"namespace": shared}, nil))
		first := waitInstance(t, x, "sessions", "Available", instanceAvailable(2))
		before := getOn(t, a.Kube, deploymentGVK, shared, "sessions")

		apply(t, newInstance(y, "sessions", config, 3, map[string]any{"namespace": shared}, nil))
		waitInstance(t, y, "sessions", "a conflict naming team x's Instance", refused(
			"Deployment "+shared+"/sessions exists and is not this Instance's: it belongs to Instance "+x+"/sessions ("+labelInstanceUID+"="+string(first.Object.GetUID())+")"))
		if err := env.Kube.Delete(ctx, instanceGVK, y, "sessions"); err != nil {
			t.Fatal(err)
		}
		waitGone(t, defaultTimeout, instanceGVK, y, "sessions")
		after := getOn(t, a.Kube, deploymentGVK, shared, "sessions")
		if after == nil || after.GetUID() != before.GetUID() || after.GetGeneration() != before.GetGeneration() {
			t.Errorf("team x's Deployment after team y's Instance came and went: %v; want it unchanged (UID %s, generation %d)", after, before.GetUID(), before.GetGeneration())
		}
		if getOn(t, a.Kube, serviceGVK, shared, "sessions") == nil || getOn(t, a.Kube, pdbGVK, shared, "sessions") == nil {
			t.Error("team x's Service or PodDisruptionBudget was deleted with team y's Instance")
		}
		waitInstance(t, x, "sessions", "still Available", instanceAvailable(2))
	})
}

// A ClusterProviderConfig serves only the namespaces its namespaceSelector selects, and, acting
// as the provider in the control plane, never reaches the control plane's own namespaces
// unless listed by name. A namespaced ProviderConfig's kubeconfig must verify TLS.
func TestProviderTenancy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)

	t.Run("a namespace the selector does not select is refused until it is labelled", func(t *testing.T) {
		ns := team(t, "selected", a)
		config := "selective-" + suffix()
		apply(t, clusterProviderConfig(config, a.Config, map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"memcached.example.com/workload-a": "allowed"}},
		}))
		t.Cleanup(func() { _ = env.Kube.Delete(ctx, clusterProviderConfigGVK, "", config) })
		tenant := newTenant(t, ns)
		applyAsTenant(t, tenant, newInstance(ns, "sessions", config, 1, nil, nil))
		waitInstance(t, ns, "sessions", "refused", func(i instance) error {
			// Not allowed, and no more: nothing of the config's credentials (Secret
			// crossplane-system/workload-a, the workload cluster's address) reaches the tenant.
			if err := refused(`spec.providerConfigRef: Invalid value: "ClusterProviderConfig/` + config + `": is not allowed from namespace ` + ns)(i); err != nil {
				return err
			}
			if strings.Contains(i.SyncedMessage+i.Message, a.Config) || strings.Contains(i.SyncedMessage+i.Message, a.APIServer.URL) {
				return errors.Errorf("want no mention of Secret %s or %s", a.Config, a.APIServer.URL)
			}
			return nil
		})
		if u := usagesOf(t, tenant, ns); len(u) != 0 {
			t.Errorf("a refused Instance recorded ProviderConfigUsages %v; want none, so that the platform may delete a config the namespace may not use", u)
		}
		if getOn(t, a.Kube, deploymentGVK, ns, "sessions") != nil {
			t.Error("a Deployment was created for an Instance its config does not serve")
		}
		if _, err := env.Kube.MergePatch(ctx, namespaceGVK, "", ns, []byte(`{"metadata":{"labels":{"memcached.example.com/workload-a":"allowed"}}}`)); err != nil {
			t.Fatal(err)
		}
		waitInstance(t, ns, "sessions", "Available once the namespace is selected", instanceAvailable(1))
		if u := usagesOf(t, tenant, ns); len(u) != 1 || u[0] != "ClusterProviderConfig/"+config {
			t.Errorf("ProviderConfigUsages of the admitted Instance: %v; want one of ClusterProviderConfig/%s", u, config)
		}

		// Settled, it is refused as soon as the namespace loses the label: the namespace's
		// labels wake its Instances.
		waitInstance(t, ns, "sessions", "settled", func(i instance) error {
			if i.Synced != "True" {
				return errors.New("want Synced=True")
			}
			return instanceAvailable(1)(i)
		})
		woken := time.Now()
		if _, err := env.Kube.MergePatch(ctx, namespaceGVK, "", ns, []byte(`{"metadata":{"labels":{"memcached.example.com/workload-a":null}}}`)); err != nil {
			t.Fatal(err)
		}
		waitInstance(t, ns, "sessions", "refused once the namespace is no longer selected", refused(`spec.providerConfigRef: Invalid value: "ClusterProviderConfig/`+config+`": is not allowed from namespace `+ns))
		wokenIn(t, "a namespace label removed refused its settled Instance", woken)

		// And admitted again as soon as the config's selector selects it another way.
		woken = time.Now()
		apply(t, clusterProviderConfig(config, a.Config, map[string]any{
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: ns}},
		}))
		waitInstance(t, ns, "sessions", "admitted again by the config's new selector", func(i instance) error {
			if i.Synced != "True" {
				return errors.New("want Synced=True")
			}
			return nil
		})
		wokenIn(t, "a ClusterProviderConfig's new selector admitted its Instance", woken)
	})

	t.Run("the control plane's own namespaces are not reachable through InjectedIdentity", func(t *testing.T) {
		ns := newNamespace(t, "local")
		config := "local-" + suffix()
		apply(t, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": clusterProviderConfigGVK.GroupVersion().String(),
			"kind":       clusterProviderConfigGVK.Kind,
			"metadata":   map[string]any{"name": config},
			"spec": map[string]any{
				"credentials": map[string]any{"source": "InjectedIdentity"},
				"placement":   map[string]any{"allowedNamespaces": []any{"*"}},
			},
		}})
		t.Cleanup(func() { _ = env.Kube.Delete(ctx, clusterProviderConfigGVK, "", config) })
		apply(t, newInstance(ns, "sessions", config, 1, map[string]any{"namespace": crossplane.Namespace}, nil))
		waitInstance(t, ns, "sessions", "refused", refused(`spec.forProvider.namespace: Invalid value: "crossplane-system": ClusterProviderConfig `+config+` acts as the provider in the control plane, whose own namespace crossplane-system it allows only when placement.allowedNamespaces lists it by name`))
		if exists(t, deploymentGVK, crossplane.Namespace, "sessions") {
			t.Error("a Deployment sessions exists in crossplane-system")
		}
	})

	t.Run("a namespaced ProviderConfig's kubeconfig must verify TLS", func(t *testing.T) {
		ns := team(t, "own-config", a)
		insecure := []byte(`apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: '` + a.APIServer.URL + `', insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: not-even-tried}
`)
		apply(t, kubeconfigSecret(ns, "insecure", insecure))
		apply(t, kubeconfigSecret(ns, "verified", a.Kubeconfig))
		for _, name := range []string{"insecure", "verified"} {
			apply(t, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": providerConfigGVK.GroupVersion().String(),
				"kind":       providerConfigGVK.Kind,
				"metadata":   map[string]any{"name": name, "namespace": ns},
				"spec":       map[string]any{"credentials": map[string]any{"source": "Secret", "secretRef": map[string]any{"name": name, "key": "kubeconfig"}}},
			}})
		}
		byProviderConfig := func(name string) map[string]any {
			return map[string]any{"providerConfigRef": map[string]any{"kind": "ProviderConfig", "name": name}}
		}
		apply(t, newInstance(ns, "careless", "", 1, nil, byProviderConfig("insecure")))
		waitInstance(t, ns, "careless", "refused", func(i instance) error {
			if err := refused(`invalid kubeconfig in Secret ` + ns + `/insecure key "kubeconfig": cluster "c" sets insecure-skip-tls-verify, which a namespaced ProviderConfig may not`)(i); err != nil {
				return err
			}
			return unavailable("Unreachable", "insecure-skip-tls-verify")(i)
		})
		apply(t, newInstance(ns, "careful", "", 1, nil, byProviderConfig("verified")))
		waitInstance(t, ns, "careful", "Available", instanceAvailable(1))
		if d := getOn(t, a.Kube, deploymentGVK, ns, "careful"); d == nil {
			t.Error("no Deployment careful in the workload cluster")
		}
	})
}

// usagesOf lists, as c sees them, the configs ("<kind>/<name>") the ProviderConfigUsages of
// namespace ns name.
func usagesOf(t *testing.T, c *kube.Client, ns string) []string {
	t.Helper()
	r, err := c.Resource(schema.GroupVersionKind{Group: "memcached.example.com", Version: "v1alpha1", Kind: "ProviderConfigUsage"}, ns)
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		kind, _, _ := unstructured.NestedString(u.Object, "providerConfigRef", "kind")
		name, _, _ := unstructured.NestedString(u.Object, "providerConfigRef", "name")
		out = append(out, kind+"/"+name)
	}
	return out
}
