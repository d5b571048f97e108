//go:build e2e

package e2e

import (
	"context"
	"testing"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// A member of an application team, with example/tenant-rbac.yaml's role bound in the team's
// namespace, creates a claim there that becomes Available and reads its connection Secret;
// may create the other kinds the role names there (namespaced XRs, Instances, ProviderConfigs);
// and may neither create a claim in another team's namespace, nor read that namespace's
// Secrets, nor create a ClusterProviderConfig.
func TestTenantRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, other := newNamespace(t, "tenant"), newNamespace(t, "other")
	as := newTenant(t, ns)

	applyAsTenant(t, as, newClaim(ns, "sessions", 1))
	waitAvailable(t, claimGVK, ns, "sessions", 1)
	if _, err := as.Typed.CoreV1().Secrets(ns).Get(ctx, "sessions-memcached", metav1.GetOptions{}); err != nil {
		t.Errorf("the tenant cannot read its claim's connection Secret: %v", err)
	}

	// Created in a dry run: authorized and admitted like a real create, nothing to reconcile.
	for _, u := range []*unstructured.Unstructured{
		exampleObject(t, "namespaced/xr.yaml", ns),
		tenantObject(instanceGVK, ns, "sessions", map[string]any{"forProvider": map[string]any{"size": int64(1)}}),
		tenantObject(providerConfigGVK, ns, "edge", map[string]any{"credentials": map[string]any{
			"source": "Secret", "secretRef": map[string]any{"name": "edge-kubeconfig", "key": "kubeconfig"},
		}}),
	} {
		if err := dryRunCreate(ctx, as, u); err != nil {
			t.Errorf("the tenant cannot create %s %s/%s in its namespace: %v", u.GetKind(), ns, u.GetName(), err)
		}
	}

	apply(t, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db-password", "namespace": other},
		"stringData": map[string]any{"password": "hunter2"},
	}})
	forbidden := map[string]func() error{
		"create a claim in another namespace": func() error {
			_, err := as.Apply(ctx, newClaim(other, "sessions", 1))
			return err
		},
		"read another namespace's Secret": func() error {
			_, err := as.Typed.CoreV1().Secrets(other).Get(ctx, "db-password", metav1.GetOptions{})
			return err
		},
		"list another namespace's Secrets": func() error {
			_, err := as.Typed.CoreV1().Secrets(other).List(ctx, metav1.ListOptions{})
			return err
		},
		"create a ClusterProviderConfig": func() error {
			return dryRunCreate(ctx, as, tenantObject(clusterProviderConfigGVK, "", "mine", map[string]any{
				"credentials": map[string]any{"source": "InjectedIdentity"},
			}))
		},
	}
	for what, do := range forbidden {
		if err := do(); !kerrors.IsForbidden(err) {
			t.Errorf("the tenant of %s may %s: want Forbidden, got %v", ns, what, err)
		}
	}
	if _, err := env.Kube.Get(ctx, claimGVK, other, "sessions"); !kerrors.IsNotFound(err) {
		t.Errorf("a claim exists in %s: %v", other, err)
	}
}

// tenantObject is an object of kind gvk with spec.
func tenantObject(gvk schema.GroupVersionKind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// dryRunCreate creates u with c in a server-side dry run: authorized, defaulted, validated and
// admitted, never stored.
func dryRunCreate(ctx context.Context, c *kube.Client, u *unstructured.Unstructured) error {
	r, err := c.Resource(u.GroupVersionKind(), u.GetNamespace())
	if err != nil {
		return err
	}
	_, err = r.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: kube.FieldManager})
	return err
}
