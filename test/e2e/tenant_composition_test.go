//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

var (
	policyGVK        = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}
	policyBindingGVK = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}
	configMapGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	revisionGVK      = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1", Kind: "CompositionRevision"}
)

// A tenant with example/tenant-rbac.yaml's role, under example/composition-policy.yaml, cannot
// keep a Memcached on an old CompositionRevision nor on a Composition the platform does not
// offer: Manual, a revision ref or selector, another Composition or a Composition selector are
// refused with the policy's message, on claims and namespaced XRs, on create and on update. A
// plain claim and a plain namespaced XR are admitted and become Available, which takes
// Crossplane writing their compositionRef and compositionRevisionRef (the policy does not look
// at its writes); the tenant may resize the claim; the platform team may pin it.
func TestTenantCannotPinComposition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "pin")
	tenant := newTenant(t, ns)
	bindTenantRole(t, ns, "platform-team")
	platform := impersonate(t, ns, "platform@example.com", "platform-team")
	installCompositionPolicy(t, ns, tenant)

	revision := latestRevision(t, "xmemcacheds.cache.example.com")
	refused := map[string]struct {
		obj  *unstructured.Unstructured
		want string
	}{
		"Manual": {
			obj:  claimWith(ns, "manual", map[string]any{"compositionUpdatePolicy": "Manual"}),
			want: "spec.compositionUpdatePolicy: only the platform team may set Manual",
		},
		"a revision ref": {
			obj:  claimWith(ns, "revision", map[string]any{"compositionRevisionRef": map[string]any{"name": revision}}),
			want: "spec.compositionRevisionRef: only Crossplane and the platform team may choose a CompositionRevision",
		},
		"a revision selector": {
			obj:  claimWith(ns, "revisions", map[string]any{"compositionRevisionSelector": map[string]any{"matchLabels": map[string]any{"channel": "old"}}}),
			want: "spec.compositionRevisionSelector: only the platform team may choose CompositionRevisions",
		},
		"another Composition": {
			obj:  claimWith(ns, "unvetted", map[string]any{"compositionRef": map[string]any{"name": "unvetted"}}),
			want: "spec.compositionRef: unvetted is not one of the platform's Compositions",
		},
		"a Composition selector": {
			obj:  claimWith(ns, "selected", map[string]any{"compositionSelector": map[string]any{"matchLabels": map[string]any{"tier": "any"}}}),
			want: "spec.compositionSelector: only the platform team may select Compositions",
		},
		"Manual on a namespaced XR": {
			obj: func() *unstructured.Unstructured {
				u := exampleObject(t, "namespaced/xr.yaml", ns)
				u.SetName("manual-xr")
				_ = unstructured.SetNestedField(u.Object, "Manual", "spec", "crossplane", "compositionUpdatePolicy")
				return u
			}(),
			want: "spec.crossplane.compositionUpdatePolicy: only the platform team may set Manual",
		},
	}
	for what, tc := range refused {
		_, err := tenant.Apply(ctx, tc.obj)
		wantRefused(t, "a "+tc.obj.GetKind()+" with "+what, err, tc.want)
	}

	// A plain claim and a plain namespaced XR: Crossplane writes their Composition and revision.
	applyAsTenant(t, tenant, newClaim(ns, "sessions", 1))
	xr := exampleObject(t, "namespaced/xr.yaml", ns)
	applyAsTenant(t, tenant, xr)
	waitAvailable(t, claimGVK, ns, "sessions", 1)
	waitAvailable(t, namespacedGVK, ns, xr.GetName(), 2)
	for _, c := range []struct {
		gvk  schema.GroupVersionKind
		name string
		path []string
	}{
		{claimGVK, "sessions", []string{"spec"}},
		{namespacedGVK, xr.GetName(), []string{"spec", "crossplane"}},
	} {
		u := get(t, c.gvk, ns, c.name)
		ref, _, _ := unstructured.NestedString(u.Object, append(c.path, "compositionRef", "name")...)
		rev, _, _ := unstructured.NestedString(u.Object, append(c.path, "compositionRevisionRef", "name")...)
		if ref == "" || rev == "" {
			t.Errorf("%s %s/%s: Crossplane's compositionRef %q and compositionRevisionRef %q: want both set", c.gvk.GroupKind(), ns, c.name, ref, rev)
		}
	}
	current, _, _ := unstructured.NestedString(get(t, claimGVK, ns, "sessions").Object, "spec", "compositionRevisionRef", "name")

	// The tenant updates what it owns, and nothing that chooses the revision.
	if _, err := tenant.MergePatch(ctx, claimGVK, ns, "sessions", []byte(`{"spec":{"size":2}}`)); err != nil {
		t.Errorf("the tenant cannot resize its claim under the policy: %v", err)
	}
	waitAvailable(t, claimGVK, ns, "sessions", 2)
	_, err := tenant.MergePatch(ctx, claimGVK, ns, "sessions", []byte(`{"spec":{"compositionUpdatePolicy":"Manual"}}`))
	wantRefused(t, "Manual set on a running claim", err, "spec.compositionUpdatePolicy")
	_, err = tenant.MergePatch(ctx, claimGVK, ns, "sessions", []byte(`{"spec":{"compositionRevisionRef":{"name":"an-older-revision"}}}`))
	wantRefused(t, "a running claim's revision ref changed", err, "spec.compositionRevisionRef")

	// The platform team pins the claim on purpose, and the tenant may still resize it.
	if _, err := platform.MergePatch(ctx, claimGVK, ns, "sessions",
		fmt.Appendf(nil, `{"spec":{"compositionUpdatePolicy":"Manual","compositionRevisionRef":{"name":%q}}}`, current)); err != nil {
		t.Fatalf("the platform team cannot pin a claim: %v", err)
	}
	if _, err := tenant.MergePatch(ctx, claimGVK, ns, "sessions", []byte(`{"spec":{"size":1}}`)); err != nil {
		t.Errorf("the tenant cannot resize a claim the platform pinned: %v", err)
	}
	waitAvailable(t, claimGVK, ns, "sessions", 1)
}

// claimWith is a size-1 claim with the spec fields extra.
func claimWith(ns, name string, extra map[string]any) *unstructured.Unstructured {
	u := newClaim(ns, name, 1)
	spec := u.Object["spec"].(map[string]any)
	for k, v := range extra {
		spec[k] = v
	}
	return u
}

// wantRefused fails t unless err is the composition policy's Forbidden holding want.
func wantRefused(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: admitted, want refused with %q", what, want)
	case !kerrors.IsForbidden(err) || !strings.Contains(err.Error(), "memcached-composition-pinning") || !strings.Contains(err.Error(), want):
		t.Errorf("%s: want the policy's Forbidden with %q, got %v", what, want, err)
	}
}

// installCompositionPolicy applies example/composition-policy.yaml as a platform team would,
// with two changes: the identity the suite runs Crossplane as (its admin kubeconfig's user,
// not the Helm chart's ServiceAccount) among the exempt users, and the binding limited to
// namespace ns, which keeps the policy off the scenarios running beside this one. It returns
// once the API server enforces it on tenant's writes, and removes it when t ends.
func installCompositionPolicy(t *testing.T, ns string, tenant *kube.Client) {
	t.Helper()
	ctx := context.Background()
	review, err := env.Kube.Typed.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crossplaneUser := review.Status.UserInfo.Username
	objs, err := kube.ReadObjects(filepath.Join(env.RepoRoot, "example", "composition-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case configMapGVK.Kind:
			users, _, _ := unstructured.NestedString(o.Object, "data", "exemptUsers")
			_ = unstructured.SetNestedField(o.Object, users+","+crossplaneUser, "data", "exemptUsers")
		case policyBindingGVK.Kind:
			_ = unstructured.SetNestedField(o.Object, map[string]any{"namespaceSelector": map[string]any{
				"matchExpressions": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{ns}}},
			}}, "spec", "matchResources")
		}
		apply(t, o)
		t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), o.GroupVersionKind(), o.GetNamespace(), o.GetName()) })
	}
	probe := claimWith(ns, "probe", map[string]any{"compositionUpdatePolicy": "Manual"})
	err = kube.Wait(ctx, 30*time.Second, "the composition policy enforced in "+ns, func(ctx context.Context) error {
		r, err := tenant.Resource(claimGVK, ns)
		if err != nil {
			return err
		}
		_, err = r.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return errors.New("a claim with Manual admitted")
		}
		if !strings.Contains(err.Error(), "memcached-composition-pinning") {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := get(t, policyGVK, "", "memcached-composition-pinning")
	if w, ok, _ := unstructured.NestedSlice(p.Object, "status", "typeChecking", "expressionWarnings"); ok && len(w) > 0 {
		t.Logf("the policy's type-checking warnings: %v", w)
	}
}

// latestRevision is the name of the newest CompositionRevision of composition.
func latestRevision(t *testing.T, composition string) string {
	t.Helper()
	r, err := env.Kube.Resource(revisionGVK, "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.List(context.Background(), metav1.ListOptions{LabelSelector: "crossplane.io/composition-name=" + composition})
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var newest int64
	for _, i := range l.Items {
		if n, _, _ := unstructured.NestedInt64(i.Object, "spec", "revision"); n > newest {
			name, newest = i.GetName(), n
		}
	}
	if name == "" {
		t.Fatalf("no CompositionRevision of %s", composition)
	}
	return name
}
