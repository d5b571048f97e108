//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// An Instance and its claim stop saying Available when the provider cannot observe what runs
// — credentials revoked, their Secret deleted, the cluster gone — and say so again as soon as
// it can, each change announced by one event on the Instance.
//
// It stops a workload cluster's API server, so it runs on a cluster of its own, started for it
// and stopped after it, and beside the other scenarios rather than before them.
func TestProviderUnreachable(t *testing.T) {
	workloads(t) // skips where the provider scenarios do not run
	t.Parallel()
	ctx := context.Background()
	config := "flaky-" + suffix()
	a, err := startWorkload(ctx, config)
	if err != nil {
		t.Fatalf("cannot start a workload cluster of its own: %v", err)
	}
	t.Cleanup(func() {
		_ = env.Kube.Delete(ctx, clusterProviderConfigGVK, "", config)
		_ = env.Kube.Delete(ctx, secretGVK, crossplane.Namespace, config)
		if err := a.Stop(); err != nil {
			t.Errorf("cannot stop workload cluster %s: %v", config, err)
		}
	})
	ns := team(t, "unreachable", a)
	const name = "sessions"
	apply(t, remoteClaim(ns, name, config, 2))
	waitAvailable(t, claimGVK, ns, name, 2)

	cannotObserve := func(t *testing.T, because string) {
		t.Helper()
		start := time.Now()
		waitInstance(t, ns, name, "Unavailable: "+because, unavailable("Unreachable", because))
		waitMemcached(t, claimGVK, ns, name, "Unavailable: "+because, func(m memcached) error {
			if m.Available != "False" || m.AvailableReason != "Unreachable" || !strings.Contains(m.Message, because) {
				return errors.Errorf("want Available=False/Unreachable saying %q", because)
			}
			return nil
		})
		t.Logf("Instance and claim Unreachable %.1fs after the fault", time.Since(start).Seconds())
	}
	recovers := func(t *testing.T) {
		t.Helper()
		start := time.Now()
		waitAvailable(t, claimGVK, ns, name, 2)
		waitInstance(t, ns, name, "Available", instanceAvailable(2))
		t.Logf("Instance and claim Available again %.1fs after the repair", time.Since(start).Seconds())
	}

	t.Run("credentials revoked", func(t *testing.T) {
		if err := a.Access.Revoke(ctx, ns); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = a.Access.Grant(ctx, ns) }()
		cannotObserve(t, "forbidden")
		if err := a.Access.Grant(ctx, ns); err != nil {
			t.Fatal(err)
		}
		recovers(t)
	})
	t.Run("credentials Secret deleted", func(t *testing.T) {
		if err := env.Kube.Typed.CoreV1().Secrets(crossplane.Namespace).Delete(ctx, config, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = env.Kube.Apply(ctx, kubeconfigSecret(crossplane.Namespace, config, a.Kubeconfig)) }()
		cannotObserve(t, "cannot get credentials Secret "+crossplane.Namespace+"/"+config)
		apply(t, kubeconfigSecret(crossplane.Namespace, config, a.Kubeconfig))
		recovers(t)
	})
	t.Run("cluster unreachable", func(t *testing.T) {
		if err := a.APIServer.Process.Stop(); err != nil {
			t.Fatal(err)
		}
		restarted := false
		defer func() {
			if !restarted {
				_ = a.APIServer.Process.Restart()
			}
		}()
		cannotObserve(t, "connection refused")
		if err := a.APIServer.Process.Restart(); err != nil {
			t.Fatal(err)
		}
		restarted = true
		if err := kube.Wait(ctx, time.Minute, "the workload API server", func(ctx context.Context) error {
			_, err := a.Kube.Typed.Discovery().ServerVersion()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		recovers(t)
	})

	t.Run("each change is one event", func(t *testing.T) {
		want := map[string]int64{"Normal/Available": 4, "Warning/Unreachable": 3}
		if diff, events := waitAvailabilityEvents(t, ns, name, want); diff != "" {
			t.Errorf("availability events on the Instance: -want, +got:\n%s\nall events: %v", diff, events)
		}
	})

	// Gone while its cluster still runs: the Instance's finalizer waits for what runs there.
	if err := env.Kube.Delete(ctx, claimGVK, ns, name); err != nil {
		t.Fatal(err)
	}
	waitGone(t, gcTimeout, claimGVK, ns, name)
	waitGoneOn(t, a.Kube, gcTimeout, deploymentGVK, ns, name)
}

// A change the provider just applied reads as what it is: a resize of a remote Memcached is
// Resizing until the new replicas are available, never Available with the old Deployment's
// numbers, exactly like a local resize; each transition is one event.
func TestProviderStatusFromApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, b := workloads(t)
	ns := team(t, "resize", b)
	const name = "sessions"
	apply(t, newInstance(ns, name, b.Config, 1, nil, nil))
	waitInstance(t, ns, name, "Available", instanceAvailable(1))

	// Record every Available condition the Instance shows from now on.
	type seen struct {
		generation, observed int64
		status, reason, msg  string
	}
	var mu sync.Mutex
	var history []seen
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if u, err := env.Kube.Get(ctx, instanceGVK, ns, name); err == nil {
				s := seen{generation: u.GetGeneration(), observed: availableGeneration(u)}
				s.status, s.reason, s.msg, _ = kube.Condition(u, "Available")
				mu.Lock()
				if len(history) == 0 || history[len(history)-1] != s {
					history = append(history, s)
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	if _, err := env.Kube.MergePatch(ctx, instanceGVK, ns, name, []byte(`{"spec":{"forProvider":{"size":3}}}`)); err != nil {
		t.Fatal(err)
	}
	waitInstance(t, ns, name, "Available with 3", instanceAvailable(3))
	close(stop)
	<-done

	mu.Lock()
	defer mu.Unlock()
	for _, s := range history {
		if s.generation >= 2 && s.observed == s.generation && s.status == "True" && s.msg != "3/3 replicas available" {
			t.Errorf("after the resize the Instance said Available=True %q for generation %d: Ready from the old Deployment's numbers (history %+v)", s.msg, s.generation, history)
		}
	}
	if diff, events := waitAvailabilityEvents(t, ns, name, map[string]int64{"Normal/Available": 2, "Normal/Resizing": 1}); diff != "" {
		t.Errorf("availability events: -want, +got:\n%s\nall events: %v", diff, events)
	}
	t.Logf("Available conditions seen: %s", describeHistory(history, func(s seen) string {
		return fmt.Sprintf("gen %d/%d %s %s %q", s.observed, s.generation, s.status, s.reason, s.msg)
	}))
}

// availableGeneration is the observedGeneration of an object's Available condition.
func availableGeneration(u *unstructured.Unstructured) int64 {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			g, _, _ := unstructured.NestedInt64(m, "observedGeneration")
			return g
		}
	}
	return 0
}

func describeHistory[T any](h []T, f func(T) string) string {
	parts := make([]string, len(h))
	for i, s := range h {
		parts[i] = f(s)
	}
	return strings.Join(parts, "; ")
}

// An Instance that only observes (managementPolicies: [Observe]) judges the live Deployment,
// whoever made it, by its own replicas rather than forProvider.size, publishes what runs, and
// changes nothing.
func TestProviderObserveOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, b := workloads(t)
	ns := team(t, "observe", b)
	app := appDeployment(t, b.Kube, ns, "legacy", 2)
	apply(t, newInstance(ns, "legacy", b.Config, 3, nil, map[string]any{"managementPolicies": []any{"Observe"}}))
	i := waitInstance(t, ns, "legacy", "Available with the live 2 replicas", instanceAvailable(2))
	if size, _, _ := unstructured.NestedInt64(i.Object.Object, "status", "atProvider", "size"); size != 2 {
		t.Errorf("atProvider.size %d, want the live Deployment's 2", size)
	}
	if img, _, _ := unstructured.NestedString(i.Object.Object, "status", "atProvider", "image"); img != "" {
		t.Errorf("atProvider.image %q, want none: the live Deployment has no memcached container", img)
	}
	wantUntouched(t, b.Kube, app)

	if _, err := b.Kube.MergePatch(ctx, deploymentGVK, ns, "legacy", []byte(`{"spec":{"replicas":1}}`)); err != nil {
		t.Fatal(err)
	}
	waitInstance(t, ns, "legacy", "Available with the live 1 replica", instanceAvailable(1))
	if getOn(t, b.Kube, serviceGVK, ns, "legacy") != nil {
		t.Error("an Instance that only observes created a Service")
	}
}

// A remote Memcached whose image cannot be pulled says why, on its Instance and on its
// claim: while it is not available the provider lists its pods in the workload cluster and
// names their reason in the function's words, and fixing the image makes both Available
// with the counts alone. The workload clusters' nodes are kwok's, which pull nothing and run
// any image, so the test plays the kubelet that could not pull: it writes the pod status a
// real kubelet writes (TestNodeBrokenImage shows the real kubelet's, for a claim here). The
// pod stays Running, because kwok makes every Pending pod that is not Ready ready again.
func TestProviderPodReasons(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)
	ns := team(t, "pod-reasons", a)
	const name, broken = "sessions", "memcached:does-not-exist"
	c := remoteClaim(ns, name, a.Config, 1)
	c.Object["spec"].(map[string]any)["image"] = broken
	apply(t, c)
	waitAvailable(t, claimGVK, ns, name, 1)

	pods, err := a.Kube.Typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods of %s/%s in %s, want 1", len(pods.Items), ns, name, a.Config)
	}
	p := pods.Items[0]
	image := ""
	for _, c := range p.Spec.Containers {
		if c.Name == "memcached" {
			image = c.Image
		}
	}
	if !strings.HasSuffix(image, broken) {
		t.Fatalf("the pod's memcached container runs %q, want %q", image, broken)
	}
	backOff := fmt.Sprintf("Back-off pulling image %q", image)
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.Reason = corev1.ConditionFalse, "ContainersNotReady"
		}
	}
	for i := range p.Status.ContainerStatuses {
		if s := &p.Status.ContainerStatuses[i]; s.Name == "memcached" {
			s.Ready, s.Started = false, ptr.To(false)
			s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: backOff}}
		}
	}
	if _, err := a.Kube.Typed.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	why := fmt.Sprintf("0/1 replicas available; %s: ImagePullBackOff (%s)", p.Name, backOff)
	i := waitInstance(t, ns, name, "Degraded because of the pod", unavailable("Degraded", why))
	m := waitMemcached(t, claimGVK, ns, name, "not Available because of the pod", func(m memcached) error {
		if m.Available != "False" || m.Ready == "True" || m.Message != why {
			return errors.Errorf("want not Ready, Available=False %q", why)
		}
		return nil
	})
	t.Logf("%.1fs after the pod's status: Instance %s; claim %s", time.Since(start).Seconds(), i, m)

	if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, name, []byte(`{"spec":{"image":null}}`)); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, claimGVK, ns, name, 1)
	waitInstance(t, ns, name, "Available", instanceAvailable(1))
	if diff, _ := waitAvailabilityEvents(t, ns, name, map[string]int64{"Normal/Available": 2, "Warning/Degraded": 1}); diff != "" {
		t.Errorf("availability events on the Instance: -want, +got:\n%s", diff)
	}
}
