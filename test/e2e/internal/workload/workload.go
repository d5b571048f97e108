// Package workload gives the Memcached provider the least-privilege access to a workload
// cluster that package-provider/README.md documents: a ServiceAccount of its own there, the
// example ClusterRole package-provider/rbac/workload-clusterrole.yaml, bound by a RoleBinding
// in each namespace the provider may place Memcacheds in, and a kubeconfig with a token of
// that ServiceAccount over verified TLS, which a ProviderConfig's Secret holds.
package workload

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/provider"
)

// Identity is the provider's ServiceAccount in a workload cluster, and its namespace.
const Identity = "memcached-provider"

// Access is the provider's access to one workload cluster.
type Access struct {
	c      *kube.Client
	server string
	ca     []byte
	role   string
}

// Setup makes the provider's identity in the workload cluster c reaches (at server, whose CA
// is ca) and applies the ClusterRole in roleFile, bound in no namespace yet.
func Setup(ctx context.Context, c *kube.Client, server string, ca []byte, roleFile string) (*Access, error) {
	if err := c.EnsureNamespace(ctx, Identity, nil); err != nil {
		return nil, err
	}
	sa, err := kube.ToUnstructured(&corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Namespace: Identity, Name: Identity},
	})
	if err != nil {
		return nil, err
	}
	if _, err := c.Apply(ctx, sa); err != nil {
		return nil, err
	}
	objs, err := c.ApplyFile(ctx, roleFile)
	if err != nil || len(objs) != 1 {
		return nil, errors.Errorf("cannot apply the one ClusterRole of %s: %v", roleFile, err)
	}
	return &Access{c: c, server: server, ca: ca, role: objs[0].GetName()}, nil
}

// Grant lets the provider manage Memcacheds in namespace.
func (a *Access) Grant(ctx context.Context, namespace string) error {
	b, err := kube.ToUnstructured(&rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: Identity},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: a.role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: Identity, Name: Identity}},
	})
	if err != nil {
		return err
	}
	_, err = a.c.Apply(ctx, b)
	return err
}

// Revoke withdraws what Grant gave in namespace.
func (a *Access) Revoke(ctx context.Context, namespace string) error {
	err := a.c.Typed.RbacV1().RoleBindings(namespace).Delete(ctx, Identity, metav1.DeleteOptions{})
	if kerrors.IsNotFound(err) {
		return nil
	}
	return errors.Wrapf(err, "cannot delete RoleBinding %s/%s", namespace, Identity)
}

// Kubeconfig returns a kubeconfig of the provider's identity: a fresh token, over https
// verified with the cluster's CA, as a namespaced ProviderConfig requires.
func (a *Access) Kubeconfig(ctx context.Context) ([]byte, error) {
	tr, err := a.c.Typed.CoreV1().ServiceAccounts(Identity).CreateToken(ctx, Identity, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, errors.Wrapf(err, "cannot issue a token for ServiceAccount %s/%s", Identity, Identity)
	}
	return provider.Kubeconfig(a.server, a.ca, tr.Status.Token)
}
