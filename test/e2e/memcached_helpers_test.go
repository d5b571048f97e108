//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/availability"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// Kinds the scenarios read and write.
var (
	claimGVK       = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	xrGVK          = schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "XMemcached"}
	namespacedGVK  = schema.GroupVersionKind{Group: "namespaced.cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	deploymentGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	serviceGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	pdbGVK         = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
	secretGVK      = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	defaultTimeout = 2 * time.Minute
	// gcTimeout allows for the controller-manager's garbage collector, which learns of a new
	// XR kind only at its next discovery resync (every 30 s).
	gcTimeout = 90 * time.Second
)

// restricted labels a namespace whose pods must meet the restricted Pod Security Standard.
var restricted = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// newNamespace creates a namespace named prefix-<random> whose pods must meet the
// restricted Pod Security Standard, as a platform would set up an application team's.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := prefix + "-" + hex.EncodeToString(b)
	if err := env.Kube.EnsureNamespace(context.Background(), name, restricted); err != nil {
		t.Fatalf("cannot create namespace %s: %v", name, err)
	}
	return name
}

// exampleObject reads the single object of example/<file> and moves it to namespace.
func exampleObject(t *testing.T, file, namespace string) *unstructured.Unstructured {
	t.Helper()
	objs, err := env.Example(file)
	if err != nil || len(objs) != 1 {
		t.Fatalf("cannot read example/%s as one object: %v", file, err)
	}
	objs[0].SetNamespace(namespace)
	return objs[0]
}

// newClaim returns a Memcached claim of size replicas that writes its connection details
// to the Secret <name>-memcached.
func newClaim(namespace, name string, size int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimGVK.GroupVersion().String(),
		"kind":       claimGVK.Kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"size":                       int64(size),
			"writeConnectionSecretToRef": map[string]any{"name": name + "-memcached"},
		},
	}}
}

func apply(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := env.Kube.Apply(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// resize sets spec.size the way `kubectl patch` would.
func resize(t *testing.T, gvk schema.GroupVersionKind, namespace, name string, size int) {
	t.Helper()
	if _, err := env.Kube.MergePatch(context.Background(), gvk, namespace, name, fmt.Appendf(nil, `{"spec":{"size":%d}}`, size)); err != nil {
		t.Fatal(err)
	}
}

// A memcached is what `kubectl get -o yaml` shows of a claim or a namespaced XR: the parts
// a user reads.
type memcached struct {
	Ready, Synced                       string
	Available, AvailableReason, Message string
	// AvailableSince is the Available condition's lastTransitionTime.
	AvailableSince              time.Time
	Replicas, AvailableReplicas int64
	Endpoint                    string
	Object                      *unstructured.Unstructured
}

func (m memcached) String() string {
	return fmt.Sprintf("Ready=%s Synced=%s Available=%s/%s %q (since %s) replicas=%d available=%d endpoint=%q",
		m.Ready, m.Synced, m.Available, m.AvailableReason, m.Message, m.AvailableSince.Format(time.TimeOnly), m.Replicas, m.AvailableReplicas, m.Endpoint)
}

func getMemcached(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (memcached, error) {
	u, err := env.Kube.Get(ctx, gvk, namespace, name)
	if err != nil {
		return memcached{}, err
	}
	return toMemcached(u), nil
}

// toMemcached reads what a user reads of a claim or namespaced XR.
func toMemcached(u *unstructured.Unstructured) memcached {
	m := memcached{Object: u}
	m.Ready, _, _, _ = kube.Condition(u, "Ready")
	m.Synced, _, _, _ = kube.Condition(u, "Synced")
	m.Available, m.AvailableReason, m.Message, _ = kube.Condition(u, "Available")
	m.AvailableSince = kube.ConditionSince(u, "Available")
	m.Replicas, _, _ = unstructured.NestedInt64(u.Object, "status", "replicas")
	m.AvailableReplicas, _, _ = unstructured.NestedInt64(u.Object, "status", "availableReplicas")
	m.Endpoint, _, _ = unstructured.NestedString(u.Object, "status", "endpoint")
	return m
}

// sample is what a read of the claim at time at showed of its Available condition.
func (m memcached) sample(at time.Time) availability.Sample {
	return availability.Sample{Status: m.Available, Since: m.AvailableSince, At: at}
}

// waitMemcached waits until check accepts the claim (or namespaced XR); on timeout the test
// fails with what was last seen.
func waitMemcached(t *testing.T, gvk schema.GroupVersionKind, namespace, name, what string, check func(memcached) error) memcached {
	t.Helper()
	var got memcached
	err := kube.Wait(context.Background(), defaultTimeout, fmt.Sprintf("%s %s/%s: %s", gvk.Kind, namespace, name, what), func(ctx context.Context) error {
		m, err := getMemcached(ctx, gvk, namespace, name)
		if err != nil {
			return err
		}
		if err := check(m); err != nil {
			return errors.Errorf("%v; seen %s", err, m)
		}
		got = m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// available accepts a Memcached that serves size replicas: Ready, Synced, Available=True
// with the message a user reads, and the replica counts and endpoint in its status.
func available(namespace, name string, size int) func(memcached) error {
	return func(m memcached) error {
		wantMsg := fmt.Sprintf("%d/%d replicas available", size, size)
		wantEndpoint := name + "." + namespace + ".svc.cluster.local:11211"
		switch {
		case m.Ready != "True" || m.Synced != "True":
			return errors.New("want Ready=True and Synced=True")
		case m.Available != "True" || m.AvailableReason != "Available" || m.Message != wantMsg:
			return errors.Errorf("want Available=True/Available %q", wantMsg)
		case m.Replicas != int64(size) || m.AvailableReplicas != int64(size):
			return errors.Errorf("want %d replicas, %d available", size, size)
		case m.Endpoint != wantEndpoint:
			return errors.Errorf("want endpoint %q", wantEndpoint)
		}
		return nil
	}
}

// waitAvailable waits until the Memcached serves size replicas.
func waitAvailable(t *testing.T, gvk schema.GroupVersionKind, namespace, name string, size int) memcached {
	t.Helper()
	return waitMemcached(t, gvk, namespace, name, fmt.Sprintf("Available with %d replicas", size), available(namespace, name, size))
}

// get returns the object, failing the test when it cannot be read.
func get(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := env.Kube.Get(context.Background(), gvk, namespace, name)
	if err != nil {
		t.Fatalf("cannot get %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	return u
}

// waitGone waits until the object no longer exists in the control plane.
func waitGone(t *testing.T, timeout time.Duration, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	waitGoneOn(t, env.Kube, timeout, gvk, namespace, name)
}

func isNotFound(err error) bool { return kerrors.IsNotFound(err) }

// connectionDetails returns the string data of a Secret.
func connectionDetails(t *testing.T, namespace, name string) map[string]string {
	t.Helper()
	s, err := env.Kube.Typed.CoreV1().Secrets(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("cannot get Secret %s/%s: %v", namespace, name, err)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// wantConnectionDetails waits until the Secret holds the endpoint, host, port and SRV name of
// the Memcached name in namespace.
func wantConnectionDetails(t *testing.T, namespace, secret, name string) {
	t.Helper()
	host := name + "." + namespace + ".svc.cluster.local"
	want := map[string]string{"endpoint": host + ":11211", "host": host, "port": "11211", "srv": "_memcached._tcp." + host}
	err := kube.Wait(context.Background(), defaultTimeout, "connection details in Secret "+namespace+"/"+secret, func(ctx context.Context) error {
		s, err := env.Kube.Typed.CoreV1().Secrets(namespace).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for k, v := range want {
			if string(s.Data[k]) != v {
				return errors.Errorf("%s=%q, want %q", k, s.Data[k], v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// replicas returns a Deployment's spec.replicas, generation and available replicas.
func replicas(t *testing.T, namespace, name string) (spec, generation, available int64) {
	t.Helper()
	d := get(t, deploymentGVK, namespace, name)
	spec, _, _ = unstructured.NestedInt64(d.Object, "spec", "replicas")
	available, _, _ = unstructured.NestedInt64(d.Object, "status", "availableReplicas")
	return spec, d.GetGeneration(), available
}

// exists reports whether the object exists.
func exists(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) bool {
	t.Helper()
	_, err := env.Kube.Get(context.Background(), gvk, namespace, name)
	if err != nil && !kerrors.IsNotFound(err) {
		t.Fatalf("cannot get %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	return err == nil
}

// waitExists waits until the object exists (want) or not (!want).
func waitExists(t *testing.T, gvk schema.GroupVersionKind, namespace, name string, want bool) {
	t.Helper()
	err := kube.Wait(context.Background(), defaultTimeout, fmt.Sprintf("%s %s/%s exists=%v", gvk.Kind, namespace, name, want), func(ctx context.Context) error {
		_, err := env.Kube.Get(ctx, gvk, namespace, name)
		switch {
		case err != nil && !kerrors.IsNotFound(err):
			return err
		case (err == nil) != want:
			return errors.Errorf("exists=%v", err == nil)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// dnsLabel makes a name of exactly n characters, a valid DNS label.
func dnsLabel(prefix string, n int) string {
	s := prefix + strings.Repeat("x", max(0, n-len(prefix)))
	return s[:n]
}

// waitGoneOn waits until the object no longer exists in the cluster c reaches.
func waitGoneOn(t *testing.T, c *kube.Client, timeout time.Duration, gvk schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	err := kube.Wait(context.Background(), timeout, gvk.Kind+" "+namespace+"/"+name+" deleted", func(ctx context.Context) error {
		u, err := c.Get(ctx, gvk, namespace, name)
		switch {
		case isNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return errors.Errorf("still there (deletionTimestamp %v, finalizers %v)", u.GetDeletionTimestamp(), u.GetFinalizers())
	})
	if err != nil {
		t.Fatal(err)
	}
}
