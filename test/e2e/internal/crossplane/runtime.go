package crossplane

import (
	"context"
	"net"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// Kinds of Crossplane's package API the runtime reads and writes.
var (
	FunctionGVK         = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "Function"}
	FunctionRevisionGVK = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "FunctionRevision"}
)

// runtimeFieldManager owns the revision status fields a runtime sets, apart from the suite's
// other applies and from Crossplane's own status updates.
const runtimeFieldManager = "e2e-function-runtime"

// RuntimeOptions configure a function runtime.
type RuntimeOptions struct {
	// Name is the Function's name; Package its package reference (by digest).
	Name, Package string
	// Binary and Args start the function; the runtime adds --address, --tls-server-certs-dir
	// and --metrics-address.
	Binary string
	Args   []string
	// ServerCertsDir holds the function's ca.crt, tls.crt and tls.key.
	ServerCertsDir string
	LogDir         string
	PIDs           *proc.PIDFile
}

// A Runtime runs one function as a local process and keeps its FunctionRevisions pointing
// at it, the way Crossplane's Deployment runtime would keep them pointing at a Service.
type Runtime struct {
	*proc.Process
	opts RuntimeOptions
	c    *kube.Client
	// Endpoint is 127.0.0.1:<port>, where the function serves gRPC with mTLS; MetricsURL its
	// Prometheus metrics.
	Endpoint   string
	MetricsURL string
}

// StartRuntime starts the function process and waits until it accepts connections.
func StartRuntime(ctx context.Context, c *kube.Client, o RuntimeOptions) (*Runtime, error) {
	ports, err := controlplane.FreePorts(2)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{
		opts:       o,
		c:          c,
		Endpoint:   "127.0.0.1:" + strconv.Itoa(ports[0]),
		MetricsURL: "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/metrics",
	}
	args := append(append([]string{}, o.Args...),
		"--address="+rt.Endpoint,
		"--tls-server-certs-dir="+o.ServerCertsDir,
		"--metrics-address=127.0.0.1:"+strconv.Itoa(ports[1]),
		"--debug",
	)
	if rt.Process, err = proc.Start(proc.Spec{Name: o.Name, Path: o.Binary, Args: args}, o.LogDir, o.PIDs); err != nil {
		return nil, err
	}
	return rt, rt.waitListening(ctx)
}

// Restart stops the function (SIGTERM, letting calls in flight finish) and starts it again
// on the same address.
func (rt *Runtime) Restart(ctx context.Context) error {
	if err := rt.Process.Restart(); err != nil {
		return err
	}
	return rt.waitListening(ctx)
}

// KillAndStart kills the function at once, as a crash or an OOM kill would, waits down,
// then starts it again on the same address: Crossplane sees calls fail, then succeed.
func (rt *Runtime) KillAndStart(ctx context.Context, down time.Duration) error {
	if err := rt.Kill(); err != nil {
		return err
	}
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return ctx.Err()
	}
	return rt.Start(ctx)
}

// Start starts a stopped function again on the same address and waits until it accepts
// connections.
func (rt *Runtime) Start(ctx context.Context) error {
	if err := rt.Process.Restart(); err != nil {
		return err
	}
	return rt.waitListening(ctx)
}

func (rt *Runtime) waitListening(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return rt.WaitReady(ctx, func(ctx context.Context) error {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", rt.Endpoint)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// Install applies the Function with the runtime's package and serves its revisions until it
// is Installed and Healthy. Serve must run for Crossplane to keep finding the function.
func (rt *Runtime) Install(ctx context.Context) error {
	return installFunction(ctx, rt.c, rt.opts.Name, rt.opts.Package, rt.reconcile)
}

// Serve reconciles the function's revisions every second until ctx ends: what a runtime
// controller does, so that a revision Crossplane makes later (or a status Crossplane
// resets) points at the running process again.
func (rt *Runtime) Serve(ctx context.Context) {
	serveRevisions(ctx, rt.reconcile)
}

// reconcile gives every revision of the function the TLS server Secret and the status a
// runtime owns: the endpoint, the Secret's name and RuntimeHealthy.
func (rt *Runtime) reconcile(ctx context.Context) error {
	r, revs, err := revisions(ctx, rt.c, rt.opts.Name)
	if err != nil {
		return err
	}
	for _, rev := range revs {
		secret := revisionSecret(&rev, rt.opts.Name)
		if err := ensureTLSServerSecret(ctx, rt.c, secret, rt.opts.ServerCertsDir); err != nil {
			return err
		}
		if ep, _, _ := unstructured.NestedString(rev.Object, "status", "endpoint"); ep == rt.Endpoint {
			if s, _, _, _ := kube.Condition(&rev, "RuntimeHealthy"); s == "True" {
				continue
			}
		}
		if err := applyRuntimeStatus(ctx, r, rev.GetName(), rt.Endpoint, secret, nil); err != nil {
			return err
		}
	}
	return nil
}

// RunFunctionCalls reads the function's Prometheus metrics and returns how many RunFunction
// calls it has answered since it started: grpc_server_handled_total for method RunFunction,
// summed over services (v1, v1beta1) and status codes. Crossplane calls the function once per
// reconcile of an XR, so this counts the XR reconciles that reached the function. The
// counter restarts with the process.
func (rt *Runtime) RunFunctionCalls(ctx context.Context) (int64, error) {
	return runFunctionCalls(ctx, rt.MetricsURL)
}
