//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// A claim created with a size its platform does not allow reports InvalidSpec and is not
// Ready: nothing of it runs, and zero composed resources must not read as a ready claim.
func TestInvalidOnCreate(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "invalid")
	apply(t, newClaim(ns, "sessions", 9))
	m := waitMemcached(t, claimGVK, ns, "sessions", "InvalidSpec", func(m memcached) error {
		if m.AvailableReason != "InvalidSpec" || !strings.Contains(m.Message, "spec.size: Invalid value: 9") {
			return errors.New("want Available=False/InvalidSpec naming spec.size")
		}
		return nil
	})
	// Crossplane sets Ready with the same reconcile that carries the condition; give it a few
	// more to make sure it never turns True.
	for range 5 {
		if m.Ready == "True" {
			t.Fatalf("claim with nothing running reads Ready=True: %s", m)
		}
		time.Sleep(time.Second)
		m = waitMemcached(t, claimGVK, ns, "sessions", "readable", func(memcached) error { return nil })
	}
	if exists(t, deploymentGVK, ns, "sessions") {
		t.Error("an invalid spec on create created a Deployment")
	}
}

// A claim that was invalid on create and is then corrected starts a Memcached that never
// served: it reads Creating until it is available, never Degraded, and no Degraded warning
// reaches its events.
func TestCorrectedSpec(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "corrected")
	apply(t, newClaim(ns, "sessions", 9))
	waitMemcached(t, claimGVK, ns, "sessions", "InvalidSpec", func(m memcached) error {
		if m.AvailableReason != "InvalidSpec" {
			return errors.New("want Available=False/InvalidSpec")
		}
		return nil
	})
	resize(t, claimGVK, ns, "sessions", 3)
	seen := map[string]bool{}
	waitMemcached(t, claimGVK, ns, "sessions", "Available with 3 replicas, never Degraded", func(m memcached) error {
		seen[m.AvailableReason] = true
		return available(ns, "sessions", 3)(m)
	})
	if seen["Degraded"] {
		t.Errorf("a corrected spec read Degraded on the way to Available; reasons seen: %v", seen)
	}
	for _, e := range claimEvents(t, ns, "sessions") {
		if e.Reason == "Degraded" {
			t.Errorf("claim event %s/%s: %q; want no Degraded warning for a Memcached that never served", e.Type, e.Reason, e.Message)
		}
	}
}

// A rollout that cannot finish (its pods fit no node) and exceeds its progress deadline reads
// Available=False/Stalled with the Deployment's own message and the scheduler's reason from
// the pods, announced by one Warning event.
// pendingNoNode is the scheduler's reason for a pod no node fits, as the claim quotes it.
var pendingNoNode = regexp.MustCompile(`Pending: 0/[34] nodes are available`)

func TestStuckRollout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "stuck")
	claim := newClaim(ns, "sessions", 1)
	// kwok nodes offer 1000 CPUs each: no node fits 2000.
	_ = unstructured.SetNestedField(claim.Object, "2000", "spec", "resources", "requests", "cpu")
	apply(t, claim)
	waitExists(t, deploymentGVK, ns, "sessions", true)
	// A short progress deadline, set as someone other than Crossplane (which applies only the
	// fields the function renders), so that the deadline passes within the test.
	if _, err := env.Kube.Typed.AppsV1().Deployments(ns).Patch(ctx, "sessions", types.MergePatchType,
		[]byte(`{"spec":{"progressDeadlineSeconds":3}}`), metav1.PatchOptions{FieldManager: "e2e-operator"}); err != nil {
		t.Fatal(err)
	}
	m := waitMemcached(t, claimGVK, ns, "sessions", "Stalled", func(m memcached) error {
		switch {
		case m.AvailableReason != "Stalled":
			return errors.New("want Available=False/Stalled")
		case !strings.Contains(m.Message, "has timed out progressing"):
			return errors.New("want the Deployment's own message")
		// 0/3 kwok nodes, or 0/4 with the node lane's real node (tainted for this namespace).
		case !pendingNoNode.MatchString(m.Message) || !strings.Contains(m.Message, "Insufficient cpu"):
			return errors.New("want the scheduler's reason from the pods")
		}
		return nil
	})
	t.Logf("claim %s/%s: %s", ns, "sessions", m)
	// Let a few reconciles pass: the warning is one per transition, not one per call.
	time.Sleep(5 * time.Second)
	stalled := 0
	for _, e := range claimEvents(t, ns, "sessions") {
		if e.Reason == "Stalled" {
			stalled += int(max(e.Count, 1))
		}
	}
	if stalled != 1 {
		t.Errorf("Stalled warnings on the claim: got %d, want exactly 1", stalled)
	}
}

// `kubectl scale` resizes a claim and a namespaced XR like a Deployment, through the scale
// subresource the XRDs declare; scaling over the platform's maximum is InvalidSpec and
// changes nothing that runs.
func TestKubectlScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		gvk  schema.GroupVersionKind
		make func(ns string) *unstructured.Unstructured
	}{
		{"Claim", claimGVK, func(ns string) *unstructured.Unstructured { return newClaim(ns, "sessions", 1) }},
		{"NamespacedXR", namespacedGVK, func(ns string) *unstructured.Unstructured {
			xr := newClaim(ns, "sessions", 1)
			xr.SetGroupVersionKind(namespacedGVK)
			unstructured.RemoveNestedField(xr.Object, "spec", "writeConnectionSecretToRef")
			return xr
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, "scale")
			apply(t, tc.make(ns))
			waitAvailable(t, tc.gvk, ns, "sessions", 1)

			// kubectl get --raw .../sessions/scale
			s := scaleOf(t, tc.gvk, ns, "sessions")
			wantSelector := "app.kubernetes.io/instance=sessions,app.kubernetes.io/name=memcached"
			if s.spec != 1 || s.status != 1 || s.selector != wantSelector {
				t.Errorf("scale: got spec %d, status %d, selector %q; want 1, 1, %q", s.spec, s.status, s.selector, wantSelector)
			}
			for _, size := range []int64{3, 2} {
				setScale(t, tc.gvk, ns, "sessions", size)
				waitAvailable(t, tc.gvk, ns, "sessions", int(size))
				if got, _, _ := replicas(t, ns, "sessions"); got != size {
					t.Errorf("after kubectl scale --replicas=%d: Deployment replicas %d", size, got)
				}
			}

			_, generation, _ := replicas(t, ns, "sessions")
			setScale(t, tc.gvk, ns, "sessions", 9)
			waitMemcached(t, tc.gvk, ns, "sessions", "InvalidSpec", func(m memcached) error {
				if m.AvailableReason != "InvalidSpec" || !strings.Contains(m.Message, "spec.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)") {
					return errors.New("want Available=False/InvalidSpec naming spec.size and policy.maxSize")
				}
				return nil
			})
			if got, g, _ := replicas(t, ns, "sessions"); got != 2 || g != generation {
				t.Errorf("scaling over policy changed the running Deployment: replicas %d (want 2), generation %d (want %d)", got, g, generation)
			}
		})
	}
}

// A HorizontalPodAutoscaler whose target is a Memcached claim is accepted and resolves its
// target through the scale subresource: current replicas and the pods' selector.
func TestAutoscalerTargetsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t, "hpa")
	apply(t, newClaim(ns, "sessions", 2))
	waitAvailable(t, claimGVK, ns, "sessions", 2)

	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "sessions", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: claimGVK.GroupVersion().String(), Kind: claimGVK.Kind, Name: "sessions"},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    3,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)},
			}}},
		},
	}
	if _, err := env.Kube.Typed.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("cannot create a HorizontalPodAutoscaler for the claim: %v", err)
	}
	err := kube.Wait(ctx, defaultTimeout, "the autoscaler resolves its Memcached target", func(ctx context.Context) error {
		h, err := env.Kube.Typed.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "sessions", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.AbleToScale && c.Status == corev1.ConditionTrue && h.Status.CurrentReplicas == 2 {
				return nil
			}
		}
		return errors.Errorf("conditions %v, current replicas %d", h.Status.Conditions, h.Status.CurrentReplicas)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// claimEvents are the events recorded on a claim.
func claimEvents(t *testing.T, namespace, name string) []corev1.Event {
	t.Helper()
	list, err := env.Kube.Typed.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{
		FieldSelector: fmt.Sprintf("involvedObject.name=%s,involvedObject.kind=%s", name, claimGVK.Kind),
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// scale is what the scale subresource serves.
type scale struct {
	spec, status int64
	selector     string
}

// scaleOf reads the scale subresource, as `kubectl get --raw .../<name>/scale` does.
func scaleOf(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) scale {
	t.Helper()
	r, err := env.Kube.Resource(gvk, namespace)
	if err != nil {
		t.Fatal(err)
	}
	u, err := r.Get(context.Background(), name, metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("cannot get the scale of %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	var s scale
	s.spec, _, _ = unstructured.NestedInt64(u.Object, "spec", "replicas")
	s.status, _, _ = unstructured.NestedInt64(u.Object, "status", "replicas")
	s.selector, _, _ = unstructured.NestedString(u.Object, "status", "selector")
	return s
}

// setScale sets the replicas through the scale subresource, as `kubectl scale` does.
func setScale(t *testing.T, gvk schema.GroupVersionKind, namespace, name string, replicas int64) {
	t.Helper()
	r, err := env.Kube.Resource(gvk, namespace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Patch(context.Background(), name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas),
		metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("kubectl scale %s/%s --replicas=%d: %v", gvk.Kind, name, replicas, err)
	}
}
