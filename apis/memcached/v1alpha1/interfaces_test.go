package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// The interfaces crossplane-runtime's reconcilers and usage tracker need.
var (
	_ resource.ModernManaged            = &Instance{}
	_ resource.ManagedList              = &InstanceList{}
	_ resource.ProviderConfig           = &ProviderConfig{}
	_ resource.ProviderConfig           = &ClusterProviderConfig{}
	_ resource.TypedProviderConfigUsage = &ProviderConfigUsage{}
	_ resource.TypedProviderConfigUsage = &ClusterProviderConfigUsage{}
	_ resource.ProviderConfigUsageList  = &ProviderConfigUsageList{}
	_ resource.ProviderConfigUsageList  = &ClusterProviderConfigUsageList{}
)

func TestInstanceMethods(t *testing.T) {
	i := &Instance{}
	ready := xpv2.Available()
	i.SetConditions(ready)
	i.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
	i.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: ClusterProviderConfigKind, Name: "default"})
	i.SetWriteConnectionSecretToReference(&xpv2.LocalSecretReference{Name: "sessions"})
	i.SetObservedGeneration(3)
	i.SetLastHandledReconcileAt("token")

	want := &Instance{}
	want.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	want.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: ClusterProviderConfigKind, Name: "default"}
	want.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "sessions"}
	want.Status.Conditions = []xpv2.Condition{ready}
	want.Status.ObservedGeneration, want.Status.LastHandledReconcileAt = 3, "token"
	if diff := cmp.Diff(want, i); diff != "" {
		t.Errorf("setters: -want, +got:\n%s", diff)
	}

	got := []any{
		i.GetCondition(xpv2.TypeReady), i.GetManagementPolicies(), i.GetProviderConfigReference(),
		i.GetWriteConnectionSecretToReference(), i.GetObservedGeneration(), i.GetLastHandledReconcileAt(),
	}
	wantGot := []any{
		ready, want.Spec.ManagementPolicies, want.Spec.ProviderConfigReference,
		want.Spec.WriteConnectionSecretToReference, int64(3), "token",
	}
	if diff := cmp.Diff(wantGot, got); diff != "" {
		t.Errorf("getters: -want, +got:\n%s", diff)
	}

	l := &InstanceList{Items: []Instance{*i}}
	if items := l.GetItems(); len(items) != 1 || items[0] != &l.Items[0] {
		t.Errorf("InstanceList.GetItems() = %v, want the list's own items", items)
	}
}

func TestProviderConfigMethods(t *testing.T) {
	for _, pc := range []resource.ProviderConfig{&ProviderConfig{}, &ClusterProviderConfig{}} {
		terminating := xpv2.Condition{Type: "Terminating", Status: corev1.ConditionTrue, Reason: "InUse"}
		pc.SetUsers(2)
		pc.SetConditions(terminating)
		if pc.GetUsers() != 2 {
			t.Errorf("%T.GetUsers() = %d, want 2", pc, pc.GetUsers())
		}
		if diff := cmp.Diff(terminating, pc.GetCondition("Terminating")); diff != "" {
			t.Errorf("%T.GetCondition(Terminating): -want, +got:\n%s", pc, diff)
		}
	}
}

func TestProviderConfigUsageMethods(t *testing.T) {
	ref := xpv2.ProviderConfigReference{Kind: ClusterProviderConfigKind, Name: "default"}
	res := xpv2.TypedReference{APIVersion: SchemeGroupVersion.String(), Kind: InstanceKind, Name: "sessions"}
	lists := []resource.ProviderConfigUsageList{
		&ProviderConfigUsageList{Items: []ProviderConfigUsage{{}}},
		&ClusterProviderConfigUsageList{Items: []ClusterProviderConfigUsage{{}}},
	}
	for _, l := range lists {
		items := l.GetItems()
		if len(items) != 1 {
			t.Fatalf("%T.GetItems() has %d items, want 1", l, len(items))
		}
		u := items[0].(resource.TypedProviderConfigUsage)
		u.SetProviderConfigReference(ref)
		u.SetResourceReference(res)
		if diff := cmp.Diff([]any{ref, res}, []any{u.GetProviderConfigReference(), u.GetResourceReference()}); diff != "" {
			t.Errorf("%T getters: -want, +got:\n%s", u, diff)
		}
	}
}

func TestScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []schema.GroupVersionKind{
		InstanceGroupVersionKind, ProviderConfigGroupVersionKind, ClusterProviderConfigGroupVersionKind,
		ProviderConfigUsageGroupVersionKind, ProviderConfigUsageListGroupVersionKind,
		ClusterProviderConfigUsageGroupVersionKind, ClusterProviderConfigUsageListGroupVersionKind,
	} {
		if !s.Recognizes(gvk) {
			t.Errorf("AddToScheme does not register %s", gvk)
		}
	}
}
