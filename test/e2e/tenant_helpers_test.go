//go:build e2e

// Helpers of the scenarios played by a tenant: a client impersonating a member of an
// application team with example/tenant-rbac.yaml's role in its namespace, and nothing else.

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// tenantRole is the ClusterRole of example/tenant-rbac.yaml.
const tenantRole = "memcached-tenant"

// tenantUser is the user a scenario impersonates as the tenant owning namespace ns; its group
// is named like the namespace, as example/tenant-rbac.yaml's RoleBinding names team-a's.
func tenantUser(ns string) string { return "tenant@" + ns }

// newTenant binds example/tenant-rbac.yaml's role in namespace ns to the group ns, as a
// platform team would for the team owning ns, and returns a client impersonating a member of
// that group (user tenantUser(ns)), once the API server authorizes it to create claims there.
func newTenant(t *testing.T, ns string) *kube.Client {
	t.Helper()
	bindTenantRole(t, ns, ns)
	return impersonate(t, ns, tenantUser(ns), ns)
}

// bindTenantRole applies example/tenant-rbac.yaml in namespace ns: the ClusterRole as it is,
// the RoleBinding moved to ns and bound to group instead of team-a.
func bindTenantRole(t *testing.T, ns, group string) {
	t.Helper()
	objs, err := kube.ReadObjects(filepath.Join(env.RepoRoot, "example", "tenant-rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "RoleBinding" {
			o.SetNamespace(ns)
			o.SetName(tenantRole + "-" + group)
			if err := unstructured.SetNestedSlice(o.Object, []any{map[string]any{
				"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group,
			}}, "subjects"); err != nil {
				t.Fatal(err)
			}
		}
		apply(t, o)
	}
}

// impersonate returns a client of the control plane acting as user in groups (and
// system:authenticated, which the API server adds), once that user may create claims in ns:
// the RBAC authorizer learns of a new RoleBinding through its informer, a moment after it is
// stored.
func impersonate(t *testing.T, ns, user string, groups ...string) *kube.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Kube.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := kube.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = kube.Wait(context.Background(), 30*time.Second, user+" may create claims in "+ns, func(ctx context.Context) error {
		r, err := c.Typed.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: "create", Group: claimGVK.Group, Resource: "memcacheds",
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !r.Status.Allowed {
			return errors.Errorf("not allowed: %s", r.Status.Reason)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// applyAsTenant server-side applies u with c, as a user's `kubectl apply --server-side` would.
func applyAsTenant(t *testing.T, c *kube.Client, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := c.Apply(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}
