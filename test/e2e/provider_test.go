//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/provider"
)

// The provider runs as users run it: Crossplane installed it from its package, by digest,
// with its CRDs; the binary is the package's runtime image's; it runs as its ServiceAccount
// with what Crossplane's RBAC manager granted it, plus the documented read-only
// control-plane role, and nothing else.
func TestProviderInstalledFromPackage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := hostProvider(t)

	u := get(t, provider.ProviderGVK, "", provider.Name)
	if pkg, _, _ := unstructured.NestedString(u.Object, "spec", "package"); pkg != p.Package || !slices.Contains([]string{"True"}, condition(u, "Installed")) || condition(u, "Healthy") != "True" {
		t.Errorf("Provider %s: package %q Installed=%s Healthy=%s; want %q, True, True", provider.Name, pkg, condition(u, "Installed"), condition(u, "Healthy"), p.Package)
	}
	owners, err := p.CRDOwners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for crd, kinds := range owners {
		if !slices.Contains(kinds, "ProviderRevision") && !slices.Contains(kinds, "ManagedResourceDefinition") {
			t.Errorf("CRD %s is owned by %v, want Crossplane's package manager (a ProviderRevision or ManagedResourceDefinition)", crd, kinds)
		}
	}

	// What the provider may and may not do in the control plane, asked as the provider.
	as, err := kube.FromKubeconfig(p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		verb, group, resource, namespace string
		want                             bool
	}{
		{"update", "memcached.example.com", "instances/status", "team-a", true},
		{"create", "", "secrets", "team-a", true},
		{"list", "apiextensions.crossplane.io", "compositions", "", true},
		{"watch", "", "namespaces", "", true},
		{"create", "apps", "deployments", "team-a", false},
		{"delete", "", "namespaces", "", false},
		{"update", "apiextensions.crossplane.io", "compositions", "", false},
		{"create", "rbac.authorization.k8s.io", "clusterrolebindings", "", false},
	} {
		r, err := as.Typed.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: c.verb, Group: c.group, Resource: c.resource, Namespace: c.namespace,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != c.want {
			t.Errorf("the provider may %s %s.%s in %q: %v, want %v", c.verb, c.resource, c.group, c.namespace, r.Status.Allowed, c.want)
		}
	}
	b, err := env.Kube.Typed.RbacV1().ClusterRoleBindings().Get(ctx, "crossplane:provider:"+p.Revision+":system", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the RBAC manager's binding of the provider's system role: %v", err)
	}
	if len(b.Subjects) != 1 || b.Subjects[0].Name != provider.Name || b.Subjects[0].Namespace != crossplane.Namespace {
		t.Errorf("the RBAC manager bound the provider's system role to %v, want ServiceAccount %s/%s", b.Subjects, crossplane.Namespace, provider.Name)
	}
}

func condition(u *unstructured.Unstructured, typ string) string {
	s, _, _, _ := kube.Condition(u, typ)
	return s
}

// A claim naming a ClusterProviderConfig runs in the workload cluster that config reaches:
// the function composes an Instance, the provider — installed from its package, reaching the
// workload cluster with least-privilege credentials — applies the Deployment, Service and
// PodDisruptionBudget there, labelled as the Instance's and under the Instance's own field
// manager, and the claim reports what runs there. Nothing runs in the control plane. A
// Deployment deleted by hand there is restored within seconds, since the provider watches what
// it owns. Deleting the claim deletes what runs in the workload cluster.
func TestProviderInAnotherCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)
	ns := team(t, "remote", a)
	const name = "sessions"
	start := time.Now()
	apply(t, remoteClaim(ns, name, a.Config, 3))
	m := waitAvailable(t, claimGVK, ns, name, 3)
	t.Logf("claim %s/%s Available after %.1fs: %s", ns, name, time.Since(start).Seconds(), m)

	i := get(t, instanceGVK, ns, name)
	t.Run("the Memcached runs in the workload cluster, as the Instance's", func(t *testing.T) {
		d := getOn(t, a.Kube, deploymentGVK, ns, name)
		if d == nil {
			t.Fatal("no Deployment in the workload cluster")
		}
		if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 3 {
			t.Errorf("Deployment replicas %d, want 3", r)
		}
		if d.GetLabels()[labelInstanceUID] != string(i.GetUID()) || d.GetAnnotations()[annotationInstance] != ns+"/"+name {
			t.Errorf("Deployment labels %v annotations %v: want it labelled with the Instance's UID %s and annotated %s/%s", d.GetLabels(), d.GetAnnotations(), i.GetUID(), ns, name)
		}
		if want := "memcached-provider/" + ns + "/" + name + "/Apply"; !slices.Contains(managers(d), want) || slices.Contains(managers(d), "memcached-provider/Apply") {
			t.Errorf("Deployment field managers %v: want %s and not the shared memcached-provider", managers(d), want)
		}
		for _, gvk := range []schema.GroupVersionKind{serviceGVK, pdbGVK} {
			if o := getOn(t, a.Kube, gvk, ns, name); o == nil || o.GetLabels()[labelInstanceUID] != string(i.GetUID()) {
				t.Errorf("%s in the workload cluster: %v, want it labelled as the Instance's", gvk.Kind, o)
			}
		}
	})
	t.Run("nothing runs in the control plane", func(t *testing.T) {
		for _, gvk := range []schema.GroupVersionKind{deploymentGVK, serviceGVK, pdbGVK} {
			if exists(t, gvk, ns, name) {
				t.Errorf("%s %s/%s in the control plane, want none", gvk.Kind, ns, name)
			}
		}
		if s, reason, msg, _ := kube.Condition(i, "Ready"); s != "True" {
			t.Errorf("Instance %s/%s: Ready=%s (%s: %s), want True", ns, name, s, reason, msg)
		}
	})
	t.Run("connection secret holds endpoint, host and port", func(t *testing.T) {
		wantConnectionDetails(t, ns, name+"-memcached", name)
	})
	t.Run("a Deployment deleted by hand is restored within seconds", func(t *testing.T) {
		before := getOn(t, a.Kube, deploymentGVK, ns, name)
		deleted := time.Now()
		if err := a.Kube.Typed.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitOn(t, a.Kube, deploymentGVK, ns, name, "a new Deployment", func(u *unstructured.Unstructured) error {
			if u == nil || u.GetUID() == before.GetUID() {
				return errors.New("not restored yet")
			}
			return nil
		})
		restored := time.Since(deleted)
		t.Logf("Deployment restored %.2fs after it was deleted by hand", restored.Seconds())
		if restored > 5*time.Second {
			t.Errorf("restored after %v, want within 5s: the provider watches what it owns", restored)
		}
		waitAvailable(t, claimGVK, ns, name, 3)
	})

	if err := env.Kube.Delete(ctx, claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitGone(t, gcTimeout, claimGVK, ns, name)
	waitGone(t, gcTimeout, instanceGVK, ns, name)
	waitGoneOn(t, a.Kube, gcTimeout, deploymentGVK, ns, name)
	waitGoneOn(t, a.Kube, gcTimeout, serviceGVK, ns, name)
	waitGoneOn(t, a.Kube, gcTimeout, pdbGVK, ns, name)
	t.Logf("claim deleted: Instance and the workload cluster's objects gone after %.1fs", time.Since(start).Seconds())
}
