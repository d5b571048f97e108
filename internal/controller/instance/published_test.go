package instance

import (
	"context"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// TestModeChangeLeavesNoStaleConnectionKeys: crossplane-runtime publishes an Instance's
// connection details with a JSON merge patch, which never removes a key; an Instance changed
// from ClientCertificate (TLS with the issued server certificate) to Password (no TLS) must
// not keep publishing tls: "true", ca.crt, tls.crt and tls.key beside the new password: the
// keys it no longer has are published empty.
func TestModeChangeLeavesNoStaleConnectionKeys(t *testing.T) {
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	withMode := func(mode string) func(*v1alpha1.Instance) {
		return func(i *v1alpha1.Instance) {
			i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
			i.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "sessions-memcached"}
			i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
			i.Spec.ForProvider.Auth = &cachev1alpha1.Auth{Enabled: ptr.To(true), Mode: mode}
		}
	}
	i := instance(withMode(cachev1alpha1.AuthModeClientCertificate))
	i.Generation = 0
	cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
	r := reconciler(t, cp, targetCluster(interceptor.Funcs{}))
	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
	}
	published := func() map[string][]byte {
		s := &corev1.Secret{}
		if err := cp.Get(ctx, types.NamespacedName{Namespace: "platform", Name: "sessions-memcached"}, s); err != nil {
			t.Fatalf("connection secret: %v", err)
		}
		return s.Data
	}
	if d := published(); len(d["tls.key"]) == 0 || string(d["tls"]) != "true" {
		t.Fatalf("with client certificates the Instance publishes tls.key and tls: %v", keysOf(d))
	}

	// The claim (or the tenant) changes the mode to Password: no TLS Secret is named, so
	// memcached now serves plaintext with a password.
	cur := &v1alpha1.Instance{}
	if err := cp.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.ForProvider.Auth.Mode = cachev1alpha1.AuthModePassword
	if err := cp.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
	}
	d := published()
	if len(d["password"]) == 0 {
		t.Fatalf("after the change to Password the Instance publishes a password: %v", keysOf(d))
	}
	for _, k := range []string{"tls", "ca.crt", "tls.crt", "tls.key"} {
		if len(d[k]) > 0 {
			t.Errorf("after the change to Password (no TLS), the Instance's connection Secret still holds %s = %.20q...: a claim reading it is told TLS is on and given a dead client key (keys: %v)", k, d[k], keysOf(d))
		}
	}
}

func keysOf(d map[string][]byte) []string {
	var out []string
	for k := range d {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestAuthOffPublishesNoPassword: an Instance whose auth is turned off publishes its last
// username and password empty, so that no claim is handed credentials of a Memcached without
// auth.
func TestAuthOffPublishesNoPassword(t *testing.T) {
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	i := instance(func(i *v1alpha1.Instance) {
		i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
		i.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "sessions-memcached"}
		i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		i.Spec.ForProvider.Auth = &cachev1alpha1.Auth{Enabled: ptr.To(true)}
	})
	i.Generation = 0
	cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
	r := reconciler(t, cp, targetCluster(interceptor.Funcs{}))
	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
	}
	cur := &v1alpha1.Instance{}
	if err := cp.Get(ctx, req.NamespacedName, cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.ForProvider.Auth.Enabled = ptr.To(false)
	if err := cp.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
	}
	s := &corev1.Secret{}
	if err := cp.Get(ctx, types.NamespacedName{Namespace: "platform", Name: "sessions-memcached"}, s); err != nil {
		t.Fatal(err)
	}
	if len(s.Data["password"]) > 0 {
		t.Errorf("auth is off, yet the Instance's connection Secret still publishes a password (keys %v)", keysOf(s.Data))
	}
}
