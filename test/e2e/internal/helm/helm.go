// Package helm installs a chart with the pinned Helm (bin/helm) the way a platform team does:
// `helm upgrade --install` with a values file, into a namespace it creates. Helm's own cache,
// configuration and data go under the suite's directory, never the user's home.
package helm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Release is what to install and where.
type Release struct {
	// Binary is helm; Kubeconfig the cluster's admin kubeconfig; WorkDir holds Helm's own
	// files and the values file.
	Binary, Kubeconfig, WorkDir string
	// Name, Namespace and Chart (a directory) are the release's.
	Name, Namespace, Chart string
	// Values are the chart's values, as a values file says them.
	Values map[string]any
	// Timeout bounds helm itself.
	Timeout time.Duration
}

// Install runs `helm upgrade --install` and returns Helm's output; the error carries it.
func Install(ctx context.Context, r Release) (string, error) {
	b, err := yaml.Marshal(r.Values)
	if err != nil {
		return "", errors.Wrap(err, "cannot encode the chart's values")
	}
	if err := os.MkdirAll(r.WorkDir, 0o755); err != nil {
		return "", errors.Wrapf(err, "cannot create %s", r.WorkDir)
	}
	values := filepath.Join(r.WorkDir, r.Name+"-values.yaml")
	if err := os.WriteFile(values, b, 0o600); err != nil {
		return "", errors.Wrap(err, "cannot write the chart's values")
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Binary, "upgrade", "--install", r.Name, r.Chart, //nolint:gosec // The suite's own helm.
		"--namespace", r.Namespace, "--create-namespace", "--kubeconfig", r.Kubeconfig,
		"--values", values, "--timeout", r.Timeout.String())
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(r.WorkDir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(r.WorkDir, "config"),
		"HELM_DATA_HOME="+filepath.Join(r.WorkDir, "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), errors.Wrapf(err, "helm install of %s failed: %s", r.Name, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
