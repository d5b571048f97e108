package crossplane

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

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
	fn := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "Function",
		"metadata":   map[string]any{"name": rt.opts.Name},
		"spec":       map[string]any{"package": rt.opts.Package},
	}}
	if _, err := rt.c.Apply(ctx, fn); err != nil {
		return err
	}
	err := kube.Wait(ctx, startTimeout, "Function "+rt.opts.Name+" Installed and Healthy", func(ctx context.Context) error {
		if err := rt.reconcile(ctx); err != nil {
			return err
		}
		u, err := rt.c.Get(ctx, FunctionGVK, "", rt.opts.Name)
		if err != nil {
			return err
		}
		for _, typ := range []string{"Installed", "Healthy"} {
			if s, reason, msg, _ := kube.Condition(u, typ); s != "True" {
				return errors.Errorf("%s=%q (reason %q, message %q)", typ, s, reason, msg)
			}
		}
		return nil
	})
	return errors.Wrapf(err, "cannot install Function %s from %s", rt.opts.Name, rt.opts.Package)
}

// Serve reconciles the function's revisions every second until ctx ends: what a runtime
// controller does, so that a revision Crossplane makes later (or a status Crossplane
// resets) points at the running process again.
func (rt *Runtime) Serve(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = rt.reconcile(ctx)
		}
	}
}

// reconcile gives every revision of the function the TLS server Secret and the status a
// runtime owns: the endpoint, the Secret's name and RuntimeHealthy.
func (rt *Runtime) reconcile(ctx context.Context) error {
	r, err := rt.c.Resource(FunctionRevisionGVK, "")
	if err != nil {
		return err
	}
	revs, err := r.List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/package=" + rt.opts.Name})
	if err != nil {
		return errors.Wrap(err, "cannot list FunctionRevisions")
	}
	if len(revs.Items) == 0 {
		return errors.Errorf("no FunctionRevision of %s yet", rt.opts.Name)
	}
	for _, rev := range revs.Items {
		secret, _, _ := unstructured.NestedString(rev.Object, "spec", "tlsServerSecretName")
		if secret == "" {
			secret = rt.opts.Name + "-tls-server"
		}
		if err := rt.ensureSecret(ctx, secret); err != nil {
			return err
		}
		if ep, _, _ := unstructured.NestedString(rev.Object, "status", "endpoint"); ep == rt.Endpoint {
			if s, _, _, _ := kube.Condition(&rev, "RuntimeHealthy"); s == "True" {
				continue
			}
		}
		status := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": FunctionRevisionGVK.GroupVersion().String(),
			"kind":       FunctionRevisionGVK.Kind,
			"metadata":   map[string]any{"name": rev.GetName()},
			"status": map[string]any{
				"endpoint":            rt.Endpoint,
				"tlsServerSecretName": secret,
				"conditions": []any{map[string]any{
					"type":               "RuntimeHealthy",
					"status":             "True",
					"reason":             "HealthyPackageRevision",
					"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
				}},
			},
		}}
		if _, err := r.ApplyStatus(ctx, rev.GetName(), status, metav1.ApplyOptions{FieldManager: runtimeFieldManager, Force: true}); err != nil {
			return errors.Wrapf(err, "cannot set the status of FunctionRevision %s", rev.GetName())
		}
	}
	return nil
}

func (rt *Runtime) ensureSecret(ctx context.Context, name string) error {
	_, err := rt.c.Typed.CoreV1().Secrets(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil || !kerrors.IsNotFound(err) {
		return errors.Wrapf(err, "cannot get Secret %s", name)
	}
	data := map[string][]byte{}
	for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(rt.opts.ServerCertsDir, f)) //nolint:gosec // Our own files.
		if err != nil {
			return errors.Wrapf(err, "cannot read the function's %s", f)
		}
		data[f] = b
	}
	_, err = rt.c.Typed.CoreV1().Secrets(Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}, metav1.CreateOptions{FieldManager: runtimeFieldManager})
	return errors.Wrapf(err, "cannot create Secret %s", name)
}

// RunFunctionCalls reads the function's Prometheus metrics and returns how many RunFunction
// calls it has answered since it started: grpc_server_handled_total for method RunFunction,
// summed over services (v1, v1beta1) and status codes. Crossplane calls the function once per
// reconcile of an XR, so this counts the XR reconciles that reached the function. The
// counter restarts with the process.
func (rt *Runtime) RunFunctionCalls(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rt.MetricsURL, nil)
	if err != nil {
		return 0, err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, errors.Wrap(err, "cannot read the function's metrics")
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return 0, errors.Errorf("GET %s: %s", rt.MetricsURL, rsp.Status)
	}
	var total int64
	found := false
	sc := bufio.NewScanner(rsp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "grpc_server_handled_total{") || !strings.Contains(line, `grpc_method="RunFunction"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, errors.Wrapf(err, "cannot parse metric line %q", line)
		}
		total += int64(v)
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, errors.Wrap(err, "cannot read the function's metrics")
	}
	if !found {
		return 0, errors.New("the function's metrics have no grpc_server_handled_total for RunFunction")
	}
	return total, nil
}
