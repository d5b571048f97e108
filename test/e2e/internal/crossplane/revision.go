package crossplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// What every runtime the suite plays does to a FunctionRevision, wherever the function runs.

// installFunction applies the Function name with package pkg and calls reconcile until it is
// Installed and Healthy.
func installFunction(ctx context.Context, c *kube.Client, name, pkg string, reconcile func(context.Context) error) error {
	fn := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "Function",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"package": pkg},
	}}
	if _, err := c.Apply(ctx, fn); err != nil {
		return err
	}
	err := kube.Wait(ctx, startTimeout, "Function "+name+" Installed and Healthy", func(ctx context.Context) error {
		if err := reconcile(ctx); err != nil {
			return err
		}
		u, err := c.Get(ctx, FunctionGVK, "", name)
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
	return errors.Wrapf(err, "cannot install Function %s from %s", name, pkg)
}

// serveRevisions calls reconcile every second until ctx ends.
func serveRevisions(ctx context.Context, reconcile func(context.Context) error) {
	wait.UntilWithContext(ctx, func(ctx context.Context) { _ = reconcile(ctx) }, time.Second)
}

// ensureTLSServerSecret creates the revision's TLS server Secret (tls.crt, tls.key, ca.crt)
// in Crossplane's namespace from the files in certsDir, unless it exists: Crossplane's
// runtime would generate it; the suite's certificate names 127.0.0.1, where Crossplane dials.
func ensureTLSServerSecret(ctx context.Context, c *kube.Client, name, certsDir string) error {
	_, err := c.Typed.CoreV1().Secrets(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil || !kerrors.IsNotFound(err) {
		return errors.Wrapf(err, "cannot get Secret %s", name)
	}
	data := map[string][]byte{}
	for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(certsDir, f)) //nolint:gosec // Our own files.
		if err != nil {
			return errors.Wrapf(err, "cannot read the function's %s", f)
		}
		data[f] = b
	}
	_, err = c.Typed.CoreV1().Secrets(Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}, metav1.CreateOptions{FieldManager: runtimeFieldManager})
	return errors.Wrapf(err, "cannot create Secret %s", name)
}

// revisionSecret is the revision's TLS server Secret's name: its spec's, or Crossplane's
// default for the function.
func revisionSecret(rev *unstructured.Unstructured, function string) string {
	if s, _, _ := unstructured.NestedString(rev.Object, "spec", "tlsServerSecretName"); s != "" {
		return s
	}
	return function + "-tls-server"
}

// applyRuntimeStatus sets what a runtime owns of revision name's status: the endpoint the
// function serves at, its TLS Secret's name, and RuntimeHealthy — True, or False with
// unhealthy's message.
func applyRuntimeStatus(ctx context.Context, r dynamic.ResourceInterface, name, endpoint, secret string, unhealthy error) error {
	cond := map[string]any{
		"type":               "RuntimeHealthy",
		"status":             "True",
		"reason":             "HealthyPackageRevision",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
	}
	if unhealthy != nil {
		cond["status"], cond["reason"], cond["message"] = "False", "UnhealthyPackageRevision", unhealthy.Error()
	}
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": FunctionRevisionGVK.GroupVersion().String(),
		"kind":       FunctionRevisionGVK.Kind,
		"metadata":   map[string]any{"name": name},
		"status": map[string]any{
			"endpoint":            endpoint,
			"tlsServerSecretName": secret,
			"conditions":          []any{cond},
		},
	}}
	_, err := r.ApplyStatus(ctx, name, status, metav1.ApplyOptions{FieldManager: runtimeFieldManager, Force: true})
	return errors.Wrapf(err, "cannot set the status of FunctionRevision %s", name)
}

// runFunctionCalls reads the function's Prometheus metrics at url and returns how many
// RunFunction calls it has answered since it started: grpc_server_handled_total for method
// RunFunction, summed over services (v1, v1beta1) and status codes.
func runFunctionCalls(ctx context.Context, url string) (int64, error) {
	handled, err := scrape(ctx, url, "grpc_server_handled_total")
	if err != nil {
		return 0, errors.Wrap(err, "cannot read the function's metrics")
	}
	var total float64
	found := false
	for series, v := range handled {
		if strings.Contains(series, `grpc_method="RunFunction"`) {
			total += v
			found = true
		}
	}
	if !found {
		return 0, errors.New("the function's metrics have no grpc_server_handled_total for RunFunction")
	}
	return int64(total), nil
}

// revisions lists the FunctionRevisions of function; none yet is an error, to retry.
func revisions(ctx context.Context, c *kube.Client, function string) (dynamic.ResourceInterface, []unstructured.Unstructured, error) {
	r, err := c.Resource(FunctionRevisionGVK, "")
	if err != nil {
		return nil, nil, err
	}
	revs, err := r.List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/package=" + function})
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot list FunctionRevisions")
	}
	if len(revs.Items) == 0 {
		return nil, nil, errors.Errorf("no FunctionRevision of %s yet", function)
	}
	return r, revs.Items, nil
}

// RevisionState says how far Crossplane got with a package revision: how many objects it
// lists (the RBAC manager renders roles only for those) and its conditions.
func RevisionState(rev *unstructured.Unstructured) string {
	refs, _, _ := unstructured.NestedSlice(rev.Object, "status", "objectRefs")
	conds, _, _ := unstructured.NestedSlice(rev.Object, "status", "conditions")
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (resourceVersion %s) lists %d objects", rev.GetKind(), rev.GetName(), rev.GetResourceVersion(), len(refs))
	for _, c := range conds {
		m, _ := c.(map[string]any)
		fmt.Fprintf(&b, "; %v=%v %v", m["type"], m["status"], m["reason"])
		if msg, _ := m["message"].(string); msg != "" {
			fmt.Fprintf(&b, " %q", msg)
		}
	}
	return b.String()
}
