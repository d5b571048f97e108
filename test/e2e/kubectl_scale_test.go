//go:build e2e

// The scale subresource of claims and namespaced XRs, as kubectl scale and an autoscaler use it.

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
// target through the scale subresource: current replicas and the pods' selector. The
// autoscaler reports a selector it cannot use (missing or unparsable: InvalidSelector) on
// ScalingActive; with a usable one it goes on to ask for the pods' metrics, which this cluster
// does not serve (FailedGetResourceMetric). The selector itself selects the claim's pods.
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
	var invalid string
	err := kube.Wait(ctx, defaultTimeout, "the autoscaler resolves its Memcached target's replicas and selector", func(ctx context.Context) error {
		h, err := env.Kube.Typed.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "sessions", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds := map[autoscalingv2.HorizontalPodAutoscalerConditionType]autoscalingv2.HorizontalPodAutoscalerCondition{}
		for _, c := range h.Status.Conditions {
			conds[c.Type] = c
		}
		switch able, active := conds[autoscalingv2.AbleToScale], conds[autoscalingv2.ScalingActive]; {
		case able.Status != corev1.ConditionTrue || h.Status.CurrentReplicas != 2:
			return errors.Errorf("want AbleToScale=True and current replicas 2: conditions %v, current replicas %d", h.Status.Conditions, h.Status.CurrentReplicas)
		case active.Reason == "InvalidSelector":
			invalid = active.Message
		case active.Reason != "FailedGetResourceMetric":
			return errors.Errorf("want ScalingActive past the selector, at the metrics this cluster does not serve (FailedGetResourceMetric): conditions %v", h.Status.Conditions)
		}
		return nil
	})
	if invalid != "" {
		t.Fatalf("the autoscaler cannot use the claim's selector: %s", invalid)
	}
	if err != nil {
		t.Fatal(err)
	}

	// The selector the autoscaler was given selects the claim's two pods, and only those.
	selector := scaleOf(t, claimGVK, ns, "sessions").selector
	pods, err := env.Kube.Typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("cannot list pods by the claim's selector %q: %v", selector, err)
	}
	var names []string
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "sessions-") {
			t.Errorf("the claim's selector %q selects pod %s, not one of the claim's", selector, p.Name)
		}
		names = append(names, p.Name)
	}
	if len(names) != 2 {
		t.Errorf("the claim's selector %q selects %d pods %v, want its 2", selector, len(names), names)
	}
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
