package config

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpfake "github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

func controlPlane(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.ProviderConfig{}, &v1alpha1.ClusterProviderConfig{}).
		WithInterceptorFuncs(interceptor.Funcs{Get: cachedGet}).Build()
}

// cachedGet reads like the manager's cache-backed client, which (unlike the fake client)
// returns typed objects with their kind set; the provider-config reconciler counts usages
// by that kind.
func cachedGet(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// usage is what the usage tracker records when an Instance in namespace uses the config
// of kind and name: labelled with both, and controlled by the Instance.
func usage(namespace, kind, name string) *v1alpha1.ProviderConfigUsage {
	u := &v1alpha1.ProviderConfigUsage{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: namespace + "-" + kind + "-" + name,
		Labels: map[string]string{xpv2.LabelKeyProviderName: name, xpv2.LabelKeyProviderKind: kind},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.InstanceKind, Name: "sessions", UID: "uid", Controller: ptr.To(true),
		}},
	}}
	u.SetProviderConfigReference(xpv2.ProviderConfigReference{Kind: kind, Name: name})
	u.SetResourceReference(xpv2.TypedReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.InstanceKind, Name: "sessions"})
	return u
}

func TestUsers(t *testing.T) {
	// Each config counts exactly the Instances that use it: by kind, by name and, for a
	// namespaced ProviderConfig, in its own namespace only.
	everyUsage := []client.Object{
		usage("team-a", v1alpha1.ProviderConfigKind, "default"),
		usage("team-a", v1alpha1.ClusterProviderConfigKind, "default"),
		usage("team-b", v1alpha1.ClusterProviderConfigKind, "default"),
		usage("team-b", v1alpha1.ProviderConfigKind, "default"),
		usage("team-b", v1alpha1.ClusterProviderConfigKind, "other"),
	}
	cases := map[string]struct {
		reason string
		config resource.ProviderConfig
		kinds  resource.ProviderConfigKinds
		want   int64
	}{
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig counts the usages naming it in every namespace, and no ProviderConfig's.",
			config: &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			kinds:  ClusterProviderConfigKinds,
			want:   2,
		},
		"ProviderConfig": {
			reason: "A ProviderConfig counts the usages naming it in its own namespace, and no ClusterProviderConfig's.",
			config: &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "default"}},
			kinds:  ProviderConfigKinds,
			want:   1,
		},
		"Unused": {
			reason: "A config nobody uses has no users.",
			config: &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team-c", Name: "default"}},
			kinds:  ProviderConfigKinds,
			want:   0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := controlPlane(t, append(everyUsage, tc.config)...)
			r := providerconfig.NewReconciler(&xpfake.Manager{Client: c, Scheme: c.Scheme()}, tc.kinds)
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: tc.config.GetNamespace(), Name: tc.config.GetName()}}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Fatalf("Reconcile(...): %v", err)
			}
			if err := c.Get(context.Background(), req.NamespacedName, tc.config); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.config.GetUsers()); diff != "" {
				t.Errorf("\n%s\nusers: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestInUseCannotBeDeleted(t *testing.T) {
	// A ClusterProviderConfig used by an Instance in some namespace stays until that usage
	// goes (with its Instance); then it is deleted.
	ctx := context.Background()
	u := usage("team-a", v1alpha1.ClusterProviderConfigKind, "default")
	c := controlPlane(t, u, &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	r := providerconfig.NewReconciler(&xpfake.Manager{Client: c, Scheme: c.Scheme()}, ClusterProviderConfigKinds)
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}
	reconcileOnce := func() *v1alpha1.ClusterProviderConfig {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
		pc := &v1alpha1.ClusterProviderConfig{}
		if err := c.Get(ctx, req.NamespacedName, pc); err != nil {
			return nil
		}
		return pc
	}

	pc := reconcileOnce() // adds the finalizer
	if err := c.Delete(ctx, pc); err != nil {
		t.Fatal(err)
	}
	pc = reconcileOnce()
	if pc == nil {
		t.Fatal("the ClusterProviderConfig was deleted while an Instance used it")
	}
	if got := pc.GetCondition(providerconfig.TypeTerminating); got.Reason != providerconfig.ReasonInUse {
		t.Errorf("Terminating condition reason = %q, want %q", got.Reason, providerconfig.ReasonInUse)
	}

	if err := c.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	if pc := reconcileOnce(); pc != nil {
		t.Errorf("the ClusterProviderConfig is still there after its last usage went: %v", pc.GetFinalizers())
	}
}

func TestSetup(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// The manager is never started, so its API server need not exist.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(mgr, controller.DefaultOptions()); err != nil {
		t.Errorf("Setup(...): %v", err)
	}
	// controller-runtime refuses a second controller of the same name; the error says which.
	want := "cannot set up the ProviderConfig controller: controller with name providerconfig/providerconfig.memcached.example.com already exists"
	if err := Setup(mgr, controller.DefaultOptions()); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Setup(...) twice:\nwant %q...\n got %v", want, err)
	}
}
