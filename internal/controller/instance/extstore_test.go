package instance

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/render"
)

// TestReconcileExternalStorage proves that the provider runs an Instance's
// forProvider.externalStorage as the function runs a claim's: the Deployment it applies in the
// target cluster has the pod template render.Deployment makes of the resolved Instance (the
// replica's own emptyDir with its sizeLimit, memcached's extstore arguments, the memory that
// counts extstore's), and a StorageClass the platform's policy does not allow is refused at
// the Instance's field, with nothing created.
func TestReconcileExternalStorage(t *testing.T) {
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	placed := func(es *cachev1alpha1.ExternalStorage) *v1alpha1.Instance {
		return instance(func(i *v1alpha1.Instance) {
			i.Spec.ForProvider.ExternalStorage = es
			i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
			i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		})
	}

	t.Run("EmptyDir", func(t *testing.T) {
		i := placed(&cachev1alpha1.ExternalStorage{SizeMB: 1024})
		want, errs := remote.Memcached(i, settings(t))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
		target := targetCluster(interceptor.Funcs{})
		if _, err := reconciler(t, cp, target).Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
		d := &appsv1.Deployment{}
		if err := target.Get(ctx, key, d); err != nil {
			t.Fatalf("the Deployment in the target cluster: %v", err)
		}
		rendered := render.Deployment(want).Spec.Template.Spec
		got := d.Spec.Template.Spec
		if diff := cmp.Diff(rendered.Volumes, got.Volumes); diff != "" {
			t.Errorf("volumes: -rendered, +applied:\n%s", diff)
		}
		if diff := cmp.Diff(rendered.Containers[0].Args, got.Containers[0].Args); diff != "" {
			t.Errorf("memcached's arguments: -rendered, +applied:\n%s", diff)
		}
		if diff := cmp.Diff(rendered.Containers[0].Resources, got.Containers[0].Resources); diff != "" {
			t.Errorf("memcached's resources: -rendered, +applied:\n%s", diff)
		}
		if v := got.Volumes; len(v) != 1 || v[0].EmptyDir == nil || v[0].EmptyDir.SizeLimit.String() != "1Gi" {
			t.Errorf("volumes %v, want the replica's own emptyDir of 1Gi", v)
		}
	})

	t.Run("StorageClassNotAllowed", func(t *testing.T) {
		i := placed(&cachev1alpha1.ExternalStorage{SizeMB: 1024, StorageClassName: "gp3"})
		cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
		target := targetCluster(readOnly(t))
		if _, err := reconciler(t, cp, target).Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
		if err := cp.Get(ctx, req.NamespacedName, i); err != nil {
			t.Fatal(err)
		}
		want := `observe failed: invalid spec, nothing was changed: spec.forProvider.externalStorage.storageClassName: Invalid value: "gp3": ` +
			`StorageClass gp3 is not allowed; policy.allowedStorageClasses allows none: external storage is an emptyDir on the node's disk (leave storageClassName unset)`
		if s := i.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionFalse || s.Message != want {
			t.Errorf("Synced = %v %q, want False %q", s.Status, s.Message, want)
		}
		if err := target.Get(ctx, key, &appsv1.Deployment{}); err == nil {
			t.Error("a Deployment exists in the target cluster; want nothing created")
		}
	})
}
