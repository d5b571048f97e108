//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/google/go-cmp/cmp"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/provider"
	"github.com/example/function-memcached/test/e2e/internal/workload"
)

// Kinds of the Memcached provider.
var (
	instanceGVK              = schema.GroupVersionKind{Group: "memcached.example.com", Version: "v1alpha1", Kind: "Instance"}
	providerConfigGVK        = schema.GroupVersionKind{Group: "memcached.example.com", Version: "v1alpha1", Kind: "ProviderConfig"}
	clusterProviderConfigGVK = schema.GroupVersionKind{Group: "memcached.example.com", Version: "v1alpha1", Kind: "ClusterProviderConfig"}
	eventGVK                 = schema.GroupVersionKind{Version: "v1", Kind: "Event"}
	namespaceGVK             = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
)

// Labels and annotations of the provider's API.
const (
	labelInstanceUID   = "memcached.example.com/instance-uid"
	annotationInstance = "memcached.example.com/instance"
)

// A workloadCluster is a workload cluster the provider's scenarios share: a whole cluster
// (API server, controller-manager, scheduler, kwok nodes) that the control plane reaches only
// through the provider's least-privilege identity there, kept in a Secret that the
// ClusterProviderConfig named Config points at.
type workloadCluster struct {
	*controlplane.Cluster
	// Kube is an admin client of the workload cluster.
	Kube *kube.Client
	// Access grants the provider's identity namespaces there.
	Access *workload.Access
	// Config is the ClusterProviderConfig reaching it; its Secret is crossplane-system/Config.
	Config string
	// Kubeconfig is the provider's kubeconfig of it.
	Kubeconfig []byte
}

// shared holds the two workload clusters every provider scenario uses, started by the first
// one that needs them and stopped with the control plane.
var shared struct {
	once sync.Once
	a, b *workloadCluster
	err  error
}

// hostProvider returns the provider the suite installed and runs as a process of its own. The
// production-shaped lane has none: Crossplane runs the provider there (TestClusterDefaultRuntime
// checks it), so a scenario that reads or restarts the suite's process skips in that lane.
func hostProvider(t *testing.T) *provider.Provider {
	t.Helper()
	if env.Provider == nil {
		t.Skip("the provider runs under Crossplane's Default runtime in this lane: TestClusterDefaultRuntime checks its install")
	}
	return env.Provider
}

// workloads returns the two shared workload clusters, starting them on first use. When the
// production-shaped lane follows this run (E2E_WORKLOADS_IN_CLUSTER=1, as `make e2e` sets
// it), the scenarios that use them skip here and run there, with the provider as Crossplane
// runs it, activated (TestClusterProviderActivation activates it first; a run that leaves that
// scenario out activates it here).
func workloads(t *testing.T) (a, b *workloadCluster) {
	t.Helper()
	a, b = startWorkloads(t)
	if env.Cluster != nil {
		providerActivated.require(t, activateProvider)
	}
	return a, b
}

// startWorkloads starts the shared workload clusters, as workloads does, without activating
// the provider in the production-shaped lane.
func startWorkloads(t *testing.T) (a, b *workloadCluster) {
	t.Helper()
	if env.Cluster == nil && os.Getenv("E2E_WORKLOADS_IN_CLUSTER") == "1" {
		t.Skip("the production-shaped lane runs this scenario, with the provider in a pod (make e2e-cluster)")
	}
	shared.once.Do(func() {
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { shared.a, errA = startWorkload(context.Background(), "workload-a") })
		wg.Go(func() { shared.b, errB = startWorkload(context.Background(), "workload-b") })
		wg.Wait()
		shared.err = errors.Join(errA, errB)
	})
	if shared.err != nil {
		t.Fatalf("cannot start the workload clusters: %v", shared.err)
	}
	return shared.a, shared.b
}

// startWorkload starts a workload cluster named name, gives the provider its identity there
// and a ClusterProviderConfig of the same name reaching it.
func startWorkload(ctx context.Context, name string) (*workloadCluster, error) {
	c, err := env.StartCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	w := &workloadCluster{Cluster: c, Config: name}
	if w.Kube, err = kube.New(c.APIServer.Config); err != nil {
		return nil, err
	}
	role := filepath.Join(env.RepoRoot, "package-provider", "rbac", "workload-clusterrole.yaml")
	if w.Access, err = workload.Setup(ctx, w.Kube, c.APIServer.URL, env.ControlPlane.CA.CertPEM, role); err != nil {
		return nil, err
	}
	if w.Kubeconfig, err = w.Access.Kubeconfig(ctx); err != nil {
		return nil, err
	}
	if _, err := env.Kube.Apply(ctx, kubeconfigSecret(crossplane.Namespace, name, w.Kubeconfig)); err != nil {
		return nil, err
	}
	_, err = env.Kube.Apply(ctx, clusterProviderConfig(name, name, nil))
	return w, err
}

// kubeconfigSecret is a Secret holding a kubeconfig under key kubeconfig.
func kubeconfigSecret(namespace, name string, kubeconfig []byte) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"stringData": map[string]any{"kubeconfig": string(kubeconfig)},
	}}
}

// clusterProviderConfig is a ClusterProviderConfig named name whose kubeconfig is in Secret
// crossplane-system/secret, with spec fields added from extra.
func clusterProviderConfig(name, secret string, extra map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"credentials": map[string]any{
		"source":    "Secret",
		"secretRef": map[string]any{"namespace": crossplane.Namespace, "name": secret, "key": "kubeconfig"},
	}}
	for k, v := range extra {
		spec[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": clusterProviderConfigGVK.GroupVersion().String(),
		"kind":       clusterProviderConfigGVK.Kind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

// team creates an application team's namespace named prefix-<random> in the control plane
// and, with the provider granted access to it, in each workload cluster.
func team(t *testing.T, prefix string, clusters ...*workloadCluster) string {
	t.Helper()
	ns := newNamespace(t, prefix)
	for _, c := range clusters {
		grant(t, c, ns)
	}
	return ns
}

// grant creates namespace ns (restricted) in the workload cluster c and lets the provider
// manage Memcacheds there.
func grant(t *testing.T, c *workloadCluster, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Kube.EnsureNamespace(ctx, ns, restricted); err != nil {
		t.Fatal(err)
	}
	if err := c.Access.Grant(ctx, ns); err != nil {
		t.Fatal(err)
	}
}

// newInstance is an Instance of size replicas placed by the ClusterProviderConfig config,
// with forProvider fields added from forProvider and spec fields from spec.
func newInstance(namespace, name, config string, size int, forProvider, spec map[string]any) *unstructured.Unstructured {
	fp := map[string]any{"size": int64(size)}
	for k, v := range forProvider {
		fp[k] = v
	}
	s := map[string]any{
		"providerConfigRef": map[string]any{"kind": "ClusterProviderConfig", "name": config},
		"forProvider":       fp,
	}
	for k, v := range spec {
		s[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": instanceGVK.GroupVersion().String(),
		"kind":       instanceGVK.Kind,
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       s,
	}}
}

// remoteClaim is a claim of size replicas placed by the ClusterProviderConfig config.
func remoteClaim(namespace, name, config string, size int) *unstructured.Unstructured {
	c := newClaim(namespace, name, size)
	c.Object["spec"].(map[string]any)["providerConfigRef"] = map[string]any{"name": config, "kind": "ClusterProviderConfig"}
	return c
}

// An instance is what `kubectl get instance -o yaml` shows of an Instance: the parts a user
// reads.
type instance struct {
	Ready, Synced, SyncedMessage        string
	Available, AvailableReason, Message string
	Object                              *unstructured.Unstructured
}

func (i instance) String() string {
	return fmt.Sprintf("Ready=%s Synced=%s %q Available=%s/%s %q", i.Ready, i.Synced, i.SyncedMessage, i.Available, i.AvailableReason, i.Message)
}

func toInstance(u *unstructured.Unstructured) instance {
	i := instance{Object: u}
	i.Ready, _, _, _ = kube.Condition(u, "Ready")
	i.Synced, _, i.SyncedMessage, _ = kube.Condition(u, "Synced")
	i.Available, i.AvailableReason, i.Message, _ = kube.Condition(u, "Available")
	return i
}

// waitInstance waits until check accepts the Instance; on timeout the test fails with what
// was last seen.
func waitInstance(t *testing.T, namespace, name, what string, check func(instance) error) instance {
	t.Helper()
	var got instance
	err := kube.Wait(context.Background(), defaultTimeout, fmt.Sprintf("Instance %s/%s: %s", namespace, name, what), func(ctx context.Context) error {
		u, err := env.Kube.Get(ctx, instanceGVK, namespace, name)
		if err != nil {
			return err
		}
		i := toInstance(u)
		if err := check(i); err != nil {
			return errors.Errorf("%v; seen %s", err, i)
		}
		got = i
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// instanceAvailable accepts an Instance that serves size replicas.
func instanceAvailable(size int) func(instance) error {
	return func(i instance) error {
		want := fmt.Sprintf("%d/%d replicas available", size, size)
		if i.Ready != "True" || i.Synced != "True" || i.Available != "True" || i.Message != want {
			return errors.Errorf("want Ready, Synced and Available=True %q", want)
		}
		return nil
	}
}

// wakeBound is how soon a change in the control plane must reach a settled Instance: well
// under the suite's --poll (20 s), so that only a wake, not a poll, meets it.
const wakeBound = 10 * time.Second

// wokenIn fails the test when what happened since start took longer than wakeBound.
func wokenIn(t *testing.T, what string, start time.Time) {
	t.Helper()
	d := time.Since(start)
	t.Logf("%s after %.1fs", what, d.Seconds())
	if d > wakeBound {
		t.Errorf("%s after %.1fs, want within %s: the change did not wake the Instance, a poll found it", what, d.Seconds(), wakeBound)
	}
}

// refused accepts an Instance whose Synced condition is False with a message containing
// each of want.
func refused(want ...string) func(instance) error {
	return func(i instance) error {
		if i.Synced != "False" {
			return errors.New("want Synced=False")
		}
		for _, w := range want {
			if !strings.Contains(i.SyncedMessage, w) {
				return errors.Errorf("want Synced's message to say %q", w)
			}
		}
		return nil
	}
}

// unavailable accepts an Instance whose Available condition is False for reason with a message
// containing want.
func unavailable(reason, want string) func(instance) error {
	return func(i instance) error {
		if i.Available != "False" || i.AvailableReason != reason || !strings.Contains(i.Message, want) {
			return errors.Errorf("want Available=False/%s saying %q", reason, want)
		}
		return nil
	}
}

// getOn returns the object in the cluster c reaches, or nil when it does not exist.
func getOn(t *testing.T, c *kube.Client, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := c.Get(context.Background(), gvk, namespace, name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("cannot get %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	return u
}

// waitOn waits until check accepts the object in the cluster c reaches (nil when absent).
func waitOn(t *testing.T, c *kube.Client, gvk schema.GroupVersionKind, namespace, name, what string, check func(*unstructured.Unstructured) error) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	err := kube.Wait(context.Background(), defaultTimeout, fmt.Sprintf("%s %s/%s: %s", gvk.Kind, namespace, name, what), func(ctx context.Context) error {
		u, err := c.Get(ctx, gvk, namespace, name)
		if isNotFound(err) {
			u, err = nil, nil
		}
		if err != nil {
			return err
		}
		if err := check(u); err != nil {
			return err
		}
		got = u
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// appDeployment creates, as an application team would with kubectl, a Deployment of replicas
// pods named name in namespace of the cluster c reaches, and waits until they are available.
func appDeployment(t *testing.T, c *kube.Client, namespace, name string, replicas int) *unstructured.Unstructured {
	t.Helper()
	image := "registry.example.com/shop:1.0" // kwok runs any name
	if c == env.Kube && env.Cluster != nil {
		image = env.Images.Pause // the production-shaped lane's real nodes pull it
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"app": name}},
		"spec": map[string]any{
			"replicas": int64(replicas),
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{
					"automountServiceAccountToken": false,
					"securityContext":              map[string]any{"runAsNonRoot": true, "runAsUser": int64(1000), "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
					"containers": []any{map[string]any{
						"name": "app", "image": image,
						"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
					}},
				},
			},
		},
	}}
	r, err := c.Resource(deploymentGVK, namespace)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(context.Background(), u, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatalf("cannot create the application's Deployment %s/%s: %v", namespace, name, err)
	}
	return waitOn(t, c, deploymentGVK, namespace, name, fmt.Sprintf("%d replicas available", replicas), func(u *unstructured.Unstructured) error {
		if u == nil {
			return errors.New("absent")
		}
		if a, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas"); a != int64(replicas) {
			return errors.Errorf("%d available", a)
		}
		return nil
	})
}

// managers lists the field managers of an object.
func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, f := range u.GetManagedFields() {
		out = append(out, f.Manager+"/"+string(f.Operation))
	}
	return out
}

// instanceEvents counts the events recorded on an Instance by type and reason
// ("Warning/Unreachable"), as the API server aggregated them.
func instanceEvents(t *testing.T, namespace, name string) map[string]int64 {
	t.Helper()
	r, err := env.Kube.Resource(eventGVK, namespace)
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.kind=Instance,involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range l.Items {
		reason, _, _ := unstructured.NestedString(e.Object, "reason")
		typ, _, _ := unstructured.NestedString(e.Object, "type")
		count, _, _ := unstructured.NestedInt64(e.Object, "count")
		out[typ+"/"+reason] += max(count, 1)
	}
	return out
}

// waitAvailabilityEvents waits up to eventTimeout for the availability events on an Instance
// to be want and returns the diff (-want, +got) and every event when they never are. The
// provider's recorder writes an event after the status it explains, in the background: on a
// busy machine the Instance says Available before the API server has its event.
func waitAvailabilityEvents(t *testing.T, namespace, name string, want map[string]int64) (string, map[string]int64) {
	t.Helper()
	var diff string
	var events map[string]int64
	_ = kube.Wait(context.Background(), eventTimeout, "the availability events", func(context.Context) error {
		events = instanceEvents(t, namespace, name)
		if diff = cmp.Diff(want, availabilityEvents(events)); diff != "" {
			return errors.New("not yet")
		}
		return nil
	})
	return diff, events
}

// eventTimeout bounds the wait for an event recorded after the status it explains.
const eventTimeout = 30 * time.Second

// availabilityEvents keeps the events of availability transitions.
func availabilityEvents(events map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, k := range []string{"Normal/Available", "Normal/Resizing", "Warning/Degraded", "Warning/Unreachable", "Warning/Conflict", "Warning/InvalidSpec"} {
		if n := events[k]; n > 0 {
			out[k] = n
		}
	}
	return out
}

// applyAs are the options of a server-side apply by field manager.
func applyAs(manager string) metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: manager, Force: true}
}

// suffix is a random suffix for cluster-scoped names a scenario makes.
func suffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// wantUntouched fails the test unless the application's Deployment before is as it was: same
// object, same generation, no ownership label and no field of the provider's.
func wantUntouched(t *testing.T, c *kube.Client, before *unstructured.Unstructured) {
	t.Helper()
	now := getOn(t, c, deploymentGVK, before.GetNamespace(), before.GetName())
	switch {
	case now == nil:
		t.Errorf("the application's Deployment %s/%s was deleted", before.GetNamespace(), before.GetName())
	case now.GetUID() != before.GetUID() || now.GetGeneration() != before.GetGeneration():
		t.Errorf("the application's Deployment changed: UID %s generation %d, was %s and %d", now.GetUID(), now.GetGeneration(), before.GetUID(), before.GetGeneration())
	case now.GetLabels()[labelInstanceUID] != "" || slices.ContainsFunc(managers(now), func(m string) bool { return strings.HasPrefix(m, "memcached-provider") }):
		t.Errorf("the application's Deployment carries the provider's label or fields: labels %v, managers %v", now.GetLabels(), managers(now))
	}
}
