//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// tenantPolicyName is the policy of example/tenant-policy.yaml, which its refusals name.
const tenantPolicyName = "memcached-tenant"

// A tenant with example/tenant-rbac.yaml's role may, by RBAC alone, point an autoscaler at the
// Deployment Crossplane composes for its claim and have the token controller mint it a
// ServiceAccount's token; under example/tenant-policy.yaml both are refused Forbidden with the
// policy's message, while an autoscaler on the claim and a TLS Secret are admitted.
func TestTenantPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "tpol")
	tenant := newTenant(t, ns)

	onDeployment := tenantHPA(ns, "deployment", "apps/v1", "Deployment", "sessions")
	onClaim := tenantHPA(ns, "claim", claimGVK.GroupVersion().String(), claimGVK.Kind, "sessions")
	token := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "default-token", Namespace: ns,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	tlsPair := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sessions-tls", Namespace: ns},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("cert"), corev1.TLSPrivateKeyKey: []byte("key")},
	}
	hpas := tenant.Typed.AutoscalingV2().HorizontalPodAutoscalers(ns)
	secrets := tenant.Typed.CoreV1().Secrets(ns)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	// Without the policy RBAC admits both holes: what the policy then refuses is its doing.
	if _, err := hpas.Create(ctx, onDeployment, dryRun); err != nil {
		t.Fatalf("without the policy the tenant cannot create an autoscaler on the Deployment (dry run): %v", err)
	}
	if _, err := secrets.Create(ctx, token, dryRun); err != nil {
		t.Fatalf("without the policy the tenant cannot create a service-account-token Secret (dry run): %v", err)
	}

	installTenantPolicy(t, ns, tenant)

	_, err := hpas.Create(ctx, onDeployment, metav1.CreateOptions{})
	wantTenantRefused(t, "an autoscaler on the composed Deployment", err, "spec.scaleTargetRef: apps/v1 Deployment sessions is not a Memcached")
	if _, err := hpas.Create(ctx, onClaim, metav1.CreateOptions{}); err != nil {
		t.Errorf("an autoscaler on the claim: want admitted, got %v", err)
	} else {
		retarget := onClaim.DeepCopy()
		h, err := hpas.Get(ctx, onClaim.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		retarget.ResourceVersion = h.ResourceVersion
		retarget.Spec.ScaleTargetRef = onDeployment.Spec.ScaleTargetRef
		_, err = hpas.Update(ctx, retarget, metav1.UpdateOptions{})
		wantTenantRefused(t, "the claim's autoscaler moved onto the Deployment", err, "spec.scaleTargetRef: apps/v1 Deployment sessions is not a Memcached")
	}

	_, err = secrets.Create(ctx, token, metav1.CreateOptions{})
	wantTenantRefused(t, "a service-account-token Secret", err, "type: only the platform team may write a Secret of type kubernetes.io/service-account-token")
	if _, err := secrets.Create(ctx, tlsPair, metav1.CreateOptions{}); err != nil {
		t.Errorf("a TLS Secret: want admitted, got %v", err)
	}
}

// tenantHPA is an autoscaler named name in ns holding target (apiVersion, kind, targetName)
// at 50 replicas, past any policy.maxSize.
func tenantHPA(ns, name, apiVersion, kind, targetName string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: targetName},
			MinReplicas:    ptr.To[int32](50),
			MaxReplicas:    50,
		},
	}
}

// wantTenantRefused fails t unless err is example/tenant-policy.yaml's Forbidden holding want.
func wantTenantRefused(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: admitted, want refused with %q", what, want)
	case !kerrors.IsForbidden(err) || !strings.Contains(err.Error(), tenantPolicyName) || !strings.Contains(err.Error(), want):
		t.Errorf("%s: want the tenant policy's Forbidden with %q, got %v", what, want, err)
	}
}

// installTenantPolicy applies example/tenant-policy.yaml as a platform team would, with its
// binding limited to namespace ns, which keeps the policy off the scenarios running beside
// this one (a cluster-wide binding would hold every namespace's Secret writes to it). It
// returns once the API server enforces it on tenant's writes, and removes it when
// t ends.
func installTenantPolicy(t *testing.T, ns string, tenant *kube.Client) {
	t.Helper()
	ctx := context.Background()
	objs, err := kube.ReadObjects(filepath.Join(env.RepoRoot, "example", "tenant-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == policyBindingGVK.Kind {
			_ = unstructured.SetNestedField(o.Object, map[string]any{"namespaceSelector": map[string]any{
				"matchExpressions": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{ns}}},
			}}, "spec", "matchResources")
		}
		apply(t, o)
		t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), o.GroupVersionKind(), o.GetNamespace(), o.GetName()) })
	}
	probe := tenantHPA(ns, "probe", "apps/v1", "Deployment", "probe")
	err = kube.Wait(ctx, 30*time.Second, "the tenant policy enforced in "+ns, func(ctx context.Context) error {
		_, err := tenant.Typed.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return errors.New("an autoscaler on a Deployment admitted")
		}
		if !strings.Contains(err.Error(), tenantPolicyName) {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := get(t, policyGVK, "", tenantPolicyName)
	if w, ok, _ := unstructured.NestedSlice(p.Object, "status", "typeChecking", "expressionWarnings"); ok && len(w) > 0 {
		t.Logf("the policy's type-checking warnings: %v", w)
	}
}
