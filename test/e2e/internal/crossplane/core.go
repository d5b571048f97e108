// Package crossplane installs and runs Crossplane core against the suite's control plane,
// with the External package runtime: Crossplane installs packages but runs none of them.
// Runtime plays that missing part for one function: it runs the function's binary as a
// local process with mTLS and tells Crossplane where it is, as a runtime controller would.
package crossplane

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// Namespace is where Crossplane runs and keeps its Secrets.
const Namespace = "crossplane-system"

const startTimeout = 2 * time.Minute

// CoreOptions configure Crossplane core.
type CoreOptions struct {
	// Binary is the Crossplane core binary (`crossplane core init|start`).
	Binary string
	// CRDsDir holds Crossplane's CRDs (the core module's cluster/crds).
	CRDsDir string
	// Kubeconfig is an admin kubeconfig of the control plane.
	Kubeconfig string
	// ClientCertsDir holds ca.crt, tls.crt and tls.key: the client certificate Crossplane
	// presents to functions and the CA it trusts them by.
	ClientCertsDir string
	// WorkDir receives the package cache; LogDir the logs.
	WorkDir, LogDir string
	// Debug makes Crossplane log every reconcile: verbose, and what one wants after a failure.
	Debug bool
	// Args are more `crossplane core start` flags, last, so that they win over the suite's:
	// how a scale run tries what a platform would set (--max-reconcile-rate,
	// --enable-function-response-cache).
	Args []string
	PIDs *proc.PIDFile
}

// Core is a running Crossplane.
type Core struct {
	*proc.Process
	readyURL, metricsURL string
}

// StartCore installs Crossplane's CRDs, runs `crossplane core init` and starts `crossplane
// core start`, returning once its readiness probe answers.
func StartCore(ctx context.Context, c *kube.Client, o CoreOptions) (*Core, error) {
	if err := ApplyCRDs(ctx, c, o.CRDsDir); err != nil {
		return nil, err
	}
	if err := c.EnsureNamespace(ctx, Namespace, nil); err != nil {
		return nil, err
	}
	sa, err := kube.ToUnstructured(&corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: "crossplane", Namespace: Namespace},
	})
	if err != nil {
		return nil, err
	}
	if _, err := c.Apply(ctx, sa); err != nil {
		return nil, err
	}
	env := []string{
		"KUBECONFIG=" + o.Kubeconfig,
		"POD_NAMESPACE=" + Namespace,
		"POD_SERVICE_ACCOUNT=crossplane",
	}
	if err := runInit(ctx, o, env); err != nil {
		return nil, err
	}

	ports, err := controlplane.FreePorts(2)
	if err != nil {
		return nil, err
	}
	args := []string{"core", "start",
		"--package-runtime=External",
		"--enable-webhooks=false",
		"--tls-client-certs-dir=" + o.ClientCertsDir,
		"--xpkg-cache-dir=" + filepath.Join(o.WorkDir, "xpkg-cache"),
		// Used only with --enable-function-response-cache (E2E_CROSSPLANE_ARGS); its default,
		// /cache/xfn, would be on the host.
		"--xfn-cache-dir=" + filepath.Join(o.WorkDir, "xfn-cache"),
		"--namespace=" + Namespace,
		// Crossplane binds these on every interface; free ports keep them out of the way.
		"--metrics-port=" + strconv.Itoa(ports[0]),
		"--health-probe-port=" + strconv.Itoa(ports[1]),
	}
	if o.Debug {
		args = append([]string{"--debug"}, args...)
	}
	args = append(args, o.Args...)
	for _, d := range []string{"xpkg-cache", "xfn-cache"} {
		if err := os.MkdirAll(filepath.Join(o.WorkDir, d), 0o755); err != nil {
			return nil, errors.Wrapf(err, "cannot create %s", d)
		}
	}
	p, err := proc.Start(proc.Spec{Name: "crossplane", Path: o.Binary, Args: args, Env: env}, o.LogDir, o.PIDs)
	if err != nil {
		return nil, err
	}
	core := &Core{Process: p, readyURL: "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/readyz",
		metricsURL: "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/metrics"}
	return core, core.waitReady(ctx)
}

func (c *Core) waitReady(ctx context.Context) error {
	return c.WaitHealthy(ctx, startTimeout, nil, c.readyURL)
}

// runInit runs `crossplane core init` to completion: it applies the CRDs its own way, makes
// the lock object and the default DeploymentRuntimeConfig and activation policy.
func runInit(ctx context.Context, o CoreOptions, env []string) error {
	env = append(env,
		"CRDS_PATH="+o.CRDsDir,
		"TLS_CA_SECRET_NAME=crossplane-root-ca",
		"TLS_CLIENT_SECRET_NAME=crossplane-tls-client",
		"ENABLE_WEBHOOKS=false",
	)
	p, err := proc.Start(proc.Spec{Name: "crossplane-init", Path: o.Binary, Args: []string{"core", "init"}, Env: env}, o.LogDir, o.PIDs)
	if err != nil {
		return err
	}
	done, exitErr := p.Exited()
	select {
	case <-done:
	case <-time.After(startTimeout):
		_ = p.Stop()
		return errors.Errorf("crossplane core init did not finish in %s; last lines of %s:\n%s", startTimeout, p.LogPath(), p.Tail(20))
	case <-ctx.Done():
		_ = p.Stop()
		return ctx.Err()
	}
	if err := exitErr(); err != nil {
		return errors.Errorf("crossplane core init failed (%v); last lines of %s:\n%s", err, p.LogPath(), p.Tail(20))
	}
	return nil
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// ApplyCRDs server-side applies every CRD in dir (client-side apply cannot: the
// DeploymentRuntimeConfig CRD outgrows the last-applied annotation) and waits until each is
// Established.
func ApplyCRDs(ctx context.Context, c *kube.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return errors.Errorf("no CRDs in %s", dir)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		objs, err := c.ApplyFile(ctx, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			names = append(names, o.GetName())
		}
	}
	return WaitEstablished(ctx, c, names...)
}

// WaitEstablished waits until each named CRD is Established: served, its kind usable.
func WaitEstablished(ctx context.Context, c *kube.Client, names ...string) error {
	return kube.Wait(ctx, startTimeout, "CRDs Established", func(ctx context.Context) error {
		var pending []string
		for _, n := range names {
			u, err := c.Get(ctx, crdGVK, "", n)
			if err != nil {
				return err
			}
			if s, _, _, _ := kube.Condition(u, "Established"); s != "True" {
				pending = append(pending, n)
			}
		}
		if len(pending) > 0 {
			return errors.Errorf("not Established: %s", strings.Join(pending, ", "))
		}
		return nil
	})
}

// WaitConditions waits until the object of kind gvk named name has every condition in want
// (type → status) and returns it.
func WaitConditions(ctx context.Context, c *kube.Client, timeout time.Duration, gvk schema.GroupVersionKind, namespace, name string, want map[string]string) (*unstructured.Unstructured, error) {
	var got *unstructured.Unstructured
	err := kube.Wait(ctx, timeout, gvk.Kind+" "+name+" "+describe(want), func(ctx context.Context) error {
		u, err := c.Get(ctx, gvk, namespace, name)
		if err != nil {
			return err
		}
		for typ, status := range want {
			s, reason, msg, _ := kube.Condition(u, typ)
			if s != status {
				return errors.Errorf("%s=%q (reason %q, message %q)", typ, s, reason, msg)
			}
		}
		got = u
		return nil
	})
	return got, err
}

func describe(want map[string]string) string {
	parts := make([]string, 0, len(want))
	for k, v := range want {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
