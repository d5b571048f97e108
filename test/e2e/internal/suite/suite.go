// Package suite brings up everything the end-to-end scenarios run against, in one call, and
// tears it down in one call: the control plane, a registry holding the function's real
// package, Crossplane installing that package, the function running as its runtime, the
// example XRDs and Compositions, and the Memcached provider's CRDs. Scenarios get an Env with
// clients and a handle on every process, so that a fault scenario can restart or kill any of
// them, and can add a workload cluster (StartCluster). The Memcached provider is installed from
// its package and runs as its ServiceAccount (package provider).
package suite

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/images"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/node"
	"github.com/example/function-memcached/test/e2e/internal/pki"
	"github.com/example/function-memcached/test/e2e/internal/proc"
	"github.com/example/function-memcached/test/e2e/internal/provider"
	"github.com/example/function-memcached/test/e2e/internal/registry"
)

// FunctionName is the Function the example Compositions reference.
const FunctionName = "function-memcached"

// Options say where the suite finds its binaries and package and where it writes.
type Options struct {
	// BinDir holds the pinned binaries, kwok-stages.yaml and crossplane-crds/ (`make e2e-tools`).
	BinDir string
	// XPKG is the function's package (`make xpkg`).
	XPKG string
	// FunctionBinary, when set, runs instead of the binary extracted from XPKG: for iterating
	// on the function without rebuilding its package.
	FunctionBinary string
	// ProviderXPKG is the Memcached provider's package (`make provider-xpkg`), which the
	// suite installs through Crossplane and runs with ProviderArgs.
	ProviderXPKG string
	ProviderArgs []string
	// UpgradeFromXPKG is the function's package as an earlier commit built it (make's
	// E2E_UPGRADE_FROM), which TestUpgradeKeepsPods upgrades from to XPKG.
	UpgradeFromXPKG string
	// OutputDir receives logs/ and run/ (certificates, kubeconfigs, data); wiped at start.
	OutputDir string
	// RepoRoot is the repository, where example/ lives.
	RepoRoot string
	// Nodes is the number of fake nodes (default 3, one per zone).
	Nodes int
	// CrossplaneDebug makes Crossplane log at debug level.
	CrossplaneDebug bool
	// CrossplaneArgs are more flags for `crossplane core start`.
	CrossplaneArgs []string
	// ControllerManagerArgs are more flags for the control plane's kube-controller-manager.
	ControllerManagerArgs []string
	// Node runs the node lane: a real node beside the fake ones, the lane's images, and the
	// function as a pod on it (see node.go).
	Node bool
	// Audit makes the API server write an audit log, logs/audit.log: who sent which request.
	Audit bool
	// ClusterLane runs the production-shaped lane instead (cluster.go): real nodes only,
	// Crossplane from its Helm chart, packages under the Default runtime. Node is ignored.
	ClusterLane bool
}

// OptionsFromEnv reads Options from E2E_BIN, E2E_XPKG, E2E_FUNCTION_BINARY,
// E2E_PROVIDER_XPKG, E2E_OUTPUT, E2E_CROSSPLANE_DEBUG (anything but "false" means on),
// E2E_CROSSPLANE_ARGS (more flags for Crossplane, space-separated),
// E2E_CONTROLLER_MANAGER_ARGS (more flags for the kube-controller-manager), E2E_NODE (anything but
// "off" means on), E2E_AUDIT (anything means on) and E2E_LANE ("cluster" for the
// production-shaped lane), as
// `make e2e` sets them, with defaults relative to the repository root two directories up
// (test/e2e).
func OptionsFromEnv() Options {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	get := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	return Options{
		BinDir:                get("E2E_BIN", filepath.Join(root, "bin")),
		XPKG:                  get("E2E_XPKG", filepath.Join(root, "_output", "function-memcached-"+runtime.GOARCH+".xpkg")),
		FunctionBinary:        os.Getenv("E2E_FUNCTION_BINARY"),
		ProviderXPKG:          get("E2E_PROVIDER_XPKG", filepath.Join(root, "_output", "provider-memcached-"+runtime.GOARCH+".xpkg")),
		ProviderArgs:          []string{"--debug", "--poll=" + ProviderPoll.String()},
		UpgradeFromXPKG:       os.Getenv("E2E_UPGRADE_XPKG"),
		OutputDir:             get("E2E_OUTPUT", filepath.Join(root, "_output", "e2e")),
		RepoRoot:              root,
		Nodes:                 3,
		CrossplaneDebug:       os.Getenv("E2E_CROSSPLANE_DEBUG") != "false",
		CrossplaneArgs:        strings.Fields(os.Getenv("E2E_CROSSPLANE_ARGS")),
		ControllerManagerArgs: strings.Fields(os.Getenv("E2E_CONTROLLER_MANAGER_ARGS")),
		Node:                  os.Getenv("E2E_NODE") != "off",
		Audit:                 os.Getenv("E2E_AUDIT") != "",
		ClusterLane:           os.Getenv("E2E_LANE") == "cluster",
	}
}

// Env is a running suite.
type Env struct {
	Options
	// LogDir holds one <component>.log per process; the suite prints it on failure.
	LogDir string
	// WorkDir holds certificates, kubeconfigs and data.
	WorkDir string
	PIDs    *proc.PIDFile

	ControlPlane *controlplane.ControlPlane
	// Kube is an admin client of the control plane.
	Kube       *kube.Client
	Registry   *registry.Registry
	Crossplane *crossplane.Core
	// Function is the running function: PodFunction when the node lane is on (and no
	// FunctionBinary is given), a host process otherwise.
	Function Function
	// Node is the real node, Images the node lane's images and PodFunction the function's
	// pod runtime; all nil (empty) when the node lane is off.
	Node        *node.Node
	Images      images.Lane
	PodFunction *crossplane.PodRuntime
	// Package is the function's package reference, by digest.
	Package string
	// Provider is the Memcached provider, installed from its package and run by the suite;
	// nil in the cluster lane, where Crossplane runs it from ProviderPackage.
	Provider *provider.Provider
	// Cluster is the cluster lane's real nodes, ClusterImages its add-ons' and Crossplane's
	// images, RegistryCA the registry's CA (PEM) there and ProviderPackage the provider's
	// package reference; all empty in the other lanes.
	Cluster       *node.Cluster
	ClusterImages ClusterImages
	// clusterMirrors are the registries the lane's nodes pull from the suite's registry
	// (mirrorExampleImages).
	clusterMirrors []string
	// ImageSubstitutions are the example's image references the lane replaces with its own
	// (the cluster lane's, where the example names a digest); Example applies them.
	ImageSubstitutions []ImageSubstitution
	RegistryCA         []byte
	ProviderPackage    string

	cancel   context.CancelFunc
	stopOnce sync.Once
	stopErr  error
}

// AuditLog is the API server's audit log when Audit is on, empty otherwise.
func (e *Env) AuditLog() string {
	if !e.Audit {
		return ""
	}
	return filepath.Join(e.LogDir, "audit.log")
}

// Start brings the suite up, printing how long each step took to out. On error it has
// already stopped whatever it started; the error carries the failing component's log tail.
func Start(ctx context.Context, o Options, out io.Writer) (_ *Env, err error) {
	e := &Env{Options: o, LogDir: filepath.Join(o.OutputDir, "logs"), WorkDir: filepath.Join(o.OutputDir, "run")}
	if err := resetDirs(e.LogDir, e.WorkDir); err != nil {
		return nil, err
	}
	if e.PIDs, err = proc.NewPIDFile(filepath.Join(o.OutputDir, "pids")); err != nil {
		return nil, err
	}
	ctx, e.cancel = context.WithCancel(ctx)
	e.stopOnSignal()
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()

	step := func(name string, f func() error) error {
		t := time.Now()
		if err := f(); err != nil {
			return errors.Wrapf(err, "cannot %s", name)
		}
		fmt.Fprintf(out, "e2e: %-44s %5.1fs\n", name, time.Since(t).Seconds())
		return nil
	}
	steps := []stepFunc{
		{"start the control plane", func() error { return e.startControlPlane(ctx) }},
		{"push the package to a local registry", func() error { return e.pushPackage(ctx) }},
		{"start Crossplane", func() error { return e.startCrossplane(ctx) }},
		{"install and run the function", func() error { return e.startFunction(ctx) }},
		{"apply the example XRDs and Compositions", func() error { return e.applyExamples(ctx) }},
		{"install and run the Memcached provider", func() error { return e.installProvider(ctx) }},
	}
	if o.ClusterLane {
		steps = e.clusterSteps(ctx)
	} else if o.Node {
		// After the registry, which serves the node's images, before Crossplane, whose
		// function runs on the node.
		steps = slices.Insert(steps, 2,
			stepFunc{"build and push the node lane's images", func() error { return e.pushImages(ctx) }},
			stepFunc{"start the real node", func() error { return e.startNode(ctx) }})
	} else {
		fmt.Fprintln(out, "e2e: E2E_NODE=off: no real node; the function runs on the host and the TestNode… scenarios are skipped")
	}
	for _, s := range steps {
		if err := step(s.name, s.f); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "e2e: kubeconfig %s, logs %s\n", e.ControlPlane.KubeconfigPath(), e.LogDir)
	return e, nil
}

// A stepFunc is one step of bringing the suite up.
type stepFunc struct {
	name string
	f    func() error
}

func resetDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			return errors.Wrapf(err, "cannot clear %s", d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return errors.Wrapf(err, "cannot create %s", d)
		}
	}
	return nil
}

func (e *Env) startControlPlane(ctx context.Context) (err error) {
	o := controlplane.Options{
		BinDir:                e.BinDir,
		WorkDir:               e.WorkDir,
		LogDir:                e.LogDir,
		KwokStages:            filepath.Join(e.BinDir, "kwok-stages.yaml"),
		Nodes:                 e.Nodes,
		PIDs:                  e.PIDs,
		AuditLog:              e.AuditLog(),
		ControllerManagerArgs: e.ControllerManagerArgs,
	}
	if e.ClusterLane {
		// On the cluster's bridge, where the nodes and their pods reach it, with no fake
		// nodes: every pod runs for real. kube-proxy runs privileged, as in every cluster.
		o.Address, o.ServiceCIDR, o.EndpointRouting, o.AllowPrivileged, o.Nodes = node.ClusterHostAddress, ClusterServiceCIDR, true, true, 0
	}
	e.ControlPlane, err = controlplane.Start(ctx, o)
	if err != nil {
		return err
	}
	e.Kube, err = kube.New(e.ControlPlane.APIServer.Config)
	return err
}

func (e *Env) pushPackage(ctx context.Context) error {
	if _, err := os.Stat(e.XPKG); err != nil {
		return errors.Wrap(err, "cannot find the function package: run make xpkg")
	}
	log, err := os.Create(filepath.Join(e.LogDir, "registry.log"))
	if err != nil {
		return errors.Wrap(err, "cannot create the registry's log")
	}
	if e.Registry, err = registry.Start(log); err != nil {
		return err
	}
	e.Package, err = e.Registry.Push(ctx, e.XPKG, "example/function-memcached", "e2e")
	return err
}

// functionCerts writes the function's mTLS material: a CA, the function's serving
// certificate for 127.0.0.1 and the client certificate Crossplane presents.
func (e *Env) functionCerts() (server, client string, err error) {
	ca, err := pki.NewCA("e2e-function-ca")
	if err != nil {
		return "", "", err
	}
	srv, err := ca.Issue(pki.Request{CommonName: FunctionName, IPs: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}})
	if err != nil {
		return "", "", err
	}
	cl, err := ca.Issue(pki.Request{CommonName: "crossplane"})
	if err != nil {
		return "", "", err
	}
	server, client = filepath.Join(e.WorkDir, "function-server"), filepath.Join(e.WorkDir, "crossplane-client")
	if err := pki.WriteFiles(server, map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": srv.CertPEM, "tls.key": srv.KeyPEM}); err != nil {
		return "", "", err
	}
	return server, client, pki.WriteFiles(client, map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": cl.CertPEM, "tls.key": cl.KeyPEM})
}

func (e *Env) startCrossplane(ctx context.Context) (err error) {
	_, client, err := e.functionCerts()
	if err != nil {
		return err
	}
	e.Crossplane, err = crossplane.StartCore(ctx, e.Kube, crossplane.CoreOptions{
		Binary:         filepath.Join(e.BinDir, "crossplane-core"),
		CRDsDir:        filepath.Join(e.BinDir, "crossplane-crds"),
		Kubeconfig:     e.ControlPlane.KubeconfigPath(),
		ClientCertsDir: client,
		WorkDir:        e.WorkDir,
		LogDir:         e.LogDir,
		Debug:          e.CrossplaneDebug,
		Args:           e.CrossplaneArgs,
		PIDs:           e.PIDs,
	})
	return err
}

func (e *Env) startFunction(ctx context.Context) (err error) {
	if e.Node != nil && e.FunctionBinary == "" {
		return e.startPodFunction(ctx)
	}
	bin, args := e.FunctionBinary, []string(nil)
	if bin == "" {
		bin = filepath.Join(e.WorkDir, FunctionName)
		if args, err = registry.ExtractEntrypoint(e.XPKG, bin); err != nil {
			return err
		}
	}
	rt, err := crossplane.StartRuntime(ctx, e.Kube, crossplane.RuntimeOptions{
		Name:           FunctionName,
		Package:        e.Package,
		Binary:         bin,
		Args:           args,
		ServerCertsDir: filepath.Join(e.WorkDir, "function-server"),
		LogDir:         e.LogDir,
		PIDs:           e.PIDs,
	})
	if err != nil {
		return err
	}
	e.Function = rt
	if err := rt.Install(ctx); err != nil {
		return err
	}
	go rt.Serve(ctx)
	return nil
}

// XRDGVK is the kind of Crossplane's CompositeResourceDefinition.
var XRDGVK = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1", Kind: "CompositeResourceDefinition"}

// applyExamples applies both example XRDs and Compositions, and waits until the claim and
// the namespaced XR are served.
func (e *Env) applyExamples(ctx context.Context) error {
	for _, f := range []string{"definition.yaml", "composition.yaml", "namespaced/definition.yaml", "namespaced/composition.yaml"} {
		if err := e.ApplyExample(ctx, f); err != nil {
			return err
		}
	}
	if _, err := crossplane.WaitConditions(ctx, e.Kube, 2*time.Minute, XRDGVK, "", "xmemcacheds.cache.example.com",
		map[string]string{"Established": "True", "Offered": "True"}); err != nil {
		return err
	}
	_, err := crossplane.WaitConditions(ctx, e.Kube, 2*time.Minute, XRDGVK, "", "memcacheds.namespaced.cache.example.com",
		map[string]string{"Established": "True"})
	return err
}

// Example reads example/<file> as this lane applies it: with the lane's ImageSubstitutions.
func (e *Env) Example(file string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(filepath.Join(e.RepoRoot, "example", file))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read example/%s", file)
	}
	text := string(b)
	for _, s := range e.ImageSubstitutions {
		if s.File == filepath.ToSlash(filepath.Join("example", file)) {
			text = strings.ReplaceAll(text, s.From, s.To)
		}
	}
	objs, err := kube.DecodeObjects([]byte(text))
	return objs, errors.Wrapf(err, "cannot decode example/%s", file)
}

// ApplyExample applies example/<file> as this lane does: with the lane's ImageSubstitutions.
func (e *Env) ApplyExample(ctx context.Context, file string) error {
	objs, err := e.Example(file)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if _, err := e.Kube.Apply(ctx, o); err != nil {
			return errors.Wrapf(err, "cannot apply example/%s", file)
		}
	}
	return nil
}

// StartCluster starts a workload cluster named name, with as many fake nodes as the control
// plane: its own API server, controller-manager, scheduler and kwok. Stop stops it too.
func (e *Env) StartCluster(ctx context.Context, name string) (*controlplane.Cluster, error) {
	return e.ControlPlane.StartCluster(ctx, name, e.Nodes)
}

// ProviderPoll is the provider's --poll in the suite: shorter than its default of a minute,
// so that scenarios waiting for a watch renewal (revoked credentials) or a poll wait less.
const ProviderPoll = 20 * time.Second

// installProvider installs the Memcached provider from its package and runs it as the
// ServiceAccount Crossplane's RBAC manager grants the provider's roles to.
func (e *Env) installProvider(ctx context.Context) (err error) {
	e.Provider, err = provider.Install(ctx, e.Kube, provider.Options{
		XPKG:             e.ProviderXPKG,
		Registry:         e.Registry,
		CoreBinary:       filepath.Join(e.BinDir, "crossplane-core"),
		ControlPlane:     e.ControlPlane,
		ControlPlaneRole: filepath.Join(e.RepoRoot, "package-provider", "rbac", "control-plane-clusterrole.yaml"),
		ActivationPolicy: filepath.Join(e.RepoRoot, "package-provider", "examples", "activation-policy.yaml"),
		Args:             e.ProviderArgs,
		WorkDir:          e.WorkDir,
		LogDir:           e.LogDir,
		PIDs:             e.PIDs,
	})
	return err
}

// Processes lists every process the suite runs.
func (e *Env) Processes() []*proc.Process {
	var ps []*proc.Process
	if e.ControlPlane != nil {
		ps = append(ps, e.ControlPlane.Processes()...)
	}
	if e.Crossplane != nil {
		ps = append(ps, e.Crossplane.Process)
	}
	if rt, ok := e.Function.(*crossplane.Runtime); ok {
		ps = append(ps, rt.Process)
	}
	if e.Node != nil {
		ps = append(ps, e.Node.Processes()...)
	}
	if e.Cluster != nil {
		for _, n := range e.Cluster.Nodes {
			ps = append(ps, n.Processes()...)
		}
	}
	if e.Provider != nil && e.Provider.Process != nil {
		ps = append(ps, e.Provider.Process)
	}
	return ps
}

// Stop stops every process the suite started, by PID, Crossplane and the function before
// the control plane they talk to. It is safe to call more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		if e.cancel != nil {
			e.cancel()
		}
		var errs []error
		errs = append(errs, e.Provider.Stop())
		if e.Function != nil {
			errs = append(errs, e.Function.Stop())
		}
		if e.Crossplane != nil {
			errs = append(errs, e.Crossplane.Stop())
		}
		if e.Node != nil {
			errs = append(errs, e.Node.Stop())
		}
		if e.Cluster != nil {
			// No controller may replace what the nodes' drain deletes: the DaemonSet
			// controller would put kube-proxy back on a cordoned node at once.
			if e.ControlPlane != nil && e.ControlPlane.ControllerManager != nil {
				errs = append(errs, e.ControlPlane.ControllerManager.Stop())
			}
			errs = append(errs, e.Cluster.StopNodes())
		}
		if e.Registry != nil {
			errs = append(errs, e.Registry.Stop())
		}
		if e.ControlPlane != nil {
			errs = append(errs, e.ControlPlane.Stop())
		}
		if e.Cluster != nil {
			// The network goes last: the API servers listen on it until they stop.
			errs = append(errs, e.Cluster.Down())
		}
		for _, err := range errs {
			if err != nil && e.stopErr == nil {
				e.stopErr = err
			}
		}
	})
	return e.stopErr
}

// stopOnSignal stops everything on SIGINT or SIGTERM, so that Ctrl-C leaves nothing running.
func (e *Env) stopOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-ch
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping every process\n", s)
		_ = e.Stop()
		os.Exit(130)
	}()
}

// Report writes where the logs are and the last lines of each process's log: what to read
// first when a scenario fails.
func (e *Env) Report(w io.Writer, lines int) {
	Report(w, e.OutputDir, lines)
}

// Report writes the log folder under outputDir and the last lines of every log in it; it
// also serves when Start failed and there is no Env.
func Report(w io.Writer, outputDir string, lines int) {
	dir := filepath.Join(outputDir, "logs")
	fmt.Fprintf(w, "\n==== e2e logs: %s\n", dir)
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		fmt.Fprintf(w, "\n---- %s (last %d lines)\n%s\n", f, lines, proc.Tail(f, lines))
	}
}
