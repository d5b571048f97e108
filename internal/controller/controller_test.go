package controller

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/cluster"
	"github.com/example/function-memcached/internal/controller/instance"
)

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
	if err := Setup(mgr, controller.DefaultOptions(), instance.Options{Namespace: "crossplane-system", Settled: 10 * time.Minute, Targets: cluster.DefaultLimits()}); err != nil {
		t.Errorf("Setup(...): %v", err)
	}
	// A second Setup stops at the first controller whose name is taken.
	if err := Setup(mgr, controller.DefaultOptions(), instance.Options{Namespace: "crossplane-system", Settled: 10 * time.Minute, Targets: cluster.DefaultLimits()}); err == nil {
		t.Error("Setup(...) twice: want an error, got none")
	}
}

// recordingManager records what controllers add to the manager.
type recordingManager struct {
	ctrl.Manager
	mu    sync.Mutex
	added []manager.Runnable
}

func (m *recordingManager) Add(r manager.Runnable) error {
	m.mu.Lock()
	m.added = append(m.added, r)
	m.mu.Unlock()
	return m.Manager.Add(r)
}

// controllers counts the controllers added, and whether the Instance controller's
// connections to target clusters were.
func (m *recordingManager) controllers() (n int, instance bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.added {
		if _, ok := r.(crcontroller.Controller); ok {
			n++
		}
		if _, ok := r.(*cluster.Clusters); ok {
			instance = true
		}
	}
	return n, instance
}

// servedKinds reads the provider's CRDs as the package installs them and returns the kinds
// each serves, as crossplane-runtime's customresourcesgate tells the gate once a CRD is
// Established: the Instance's apart, since Crossplane creates it only on activation.
func servedKinds(t *testing.T) (instance, others []schema.GroupVersionKind) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "package-provider", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in package-provider/crds: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			if crd.Spec.Names.Kind == v1alpha1.InstanceKind {
				instance = append(instance, gvk)
				continue
			}
			others = append(others, gvk)
		}
	}
	return instance, others
}

// With safe-start Crossplane creates the Instance's CRD only when a platform activates it, and
// may do so after the provider has started: the provider-config controllers start once the
// package's CRDs are served, the Instance controller only once the Instance's is too, and a
// kind the CRDs do not serve would keep a controller from ever starting.
func TestSetupGated(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// Controller names are unique in a process, and TestSetup has taken them.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingManager{Manager: mgr}
	g := new(gate.Gate[schema.GroupVersionKind])
	o := controller.DefaultOptions()
	o.Gate = g
	failures := make(chan error, 2)
	if err := SetupGated(rec, o, instance.Options{Namespace: "crossplane-system", Settled: 10 * time.Minute, Targets: cluster.DefaultLimits()}, func(err error) { failures <- err }); err != nil {
		t.Fatalf("SetupGated(...): %v", err)
	}
	// The gate releases a callback as it is registered or set, never later: what has not
	// been released by then is not waiting to run.
	if n, _ := rec.controllers(); n != 0 {
		t.Fatalf("before any CRD is served: %d controllers added, want none", n)
	}

	instanceKinds, others := servedKinds(t)
	for _, k := range others {
		g.Set(k, true)
	}
	waitControllers(t, rec, 2, failures)
	if n, started := rec.controllers(); started || n != 2 {
		t.Fatalf("with every CRD but the Instance's served: %d controllers added, the Instance controller's %t; want the two provider-config controllers only", n, started)
	}

	for _, k := range instanceKinds {
		g.Set(k, true)
	}
	waitControllers(t, rec, 3, failures)
	if _, started := rec.controllers(); !started {
		t.Error("with the Instance's CRD served: the Instance controller's connections were not added")
	}
	select {
	case err := <-failures:
		t.Errorf("a gated setup failed: %v", err)
	default:
	}

	if err := SetupGated(rec, controller.DefaultOptions(), instance.Options{}, func(error) {}); err == nil {
		t.Error("SetupGated without a gate: want an error, got none")
	}
}

// waitControllers waits until n controllers were added, the gate having run their setup in
// goroutines of its own.
func waitControllers(t *testing.T, rec *recordingManager, n int, failures chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := rec.controllers()
		if got >= n {
			return
		}
		select {
		case err := <-failures:
			t.Fatalf("a gated setup failed: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d controllers added after 10s, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The policy docs/operations.md tells a platform to apply is the file the e2e lanes apply,
// shown whole, and it activates the Instance's definition, which Crossplane names after the
// Instance's CRD: a policy naming anything else would leave the provider scaled to zero.
func TestActivationPolicy(t *testing.T) {
	root := filepath.Join("..", "..")
	policy, err := os.ReadFile(filepath.Join(root, "package-provider", "examples", "activation-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(policy)+"```\n") {
		t.Error("docs/operations.md does not show package-provider/examples/activation-policy.yaml whole in a yaml block")
	}
	var p struct {
		Kind string `json:"kind"`
		Spec struct {
			Activate []string `json:"activate"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(policy, &p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "package-provider", "crds", "memcached.example.com_instances.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "ManagedResourceActivationPolicy" || !slices.Equal(p.Spec.Activate, []string{crd.Name}) {
		t.Errorf("the policy is a %s activating %v, want a ManagedResourceActivationPolicy activating [%s]", p.Kind, p.Spec.Activate, crd.Name)
	}
}
