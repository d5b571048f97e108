// Package provider installs and runs the Memcached provider (cmd/provider) against the
// suite's control plane: its CRDs from package-provider/crds, server-side applied, and its
// binary as a local process with the control plane's admin kubeconfig — what Crossplane's
// package manager and a provider Deployment would do in a cluster, without the package.
package provider

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// Name is the provider's process name, and its log's.
const Name = "provider-memcached"

// Options configure the provider.
type Options struct {
	// Binary is the provider (`go build ./cmd/provider`, `make provider-build`).
	Binary string
	// CRDsDir holds its CRDs (package-provider/crds).
	CRDsDir string
	// Kubeconfig is a kubeconfig of the control plane the provider reconciles Instances in.
	Kubeconfig string
	// Poll is the provider's --poll, how often it checks each Instance in its target cluster;
	// zero keeps the provider's default.
	Poll   time.Duration
	LogDir string
	PIDs   *proc.PIDFile
}

// A Provider is the running provider.
type Provider struct {
	*proc.Process
	// MetricsURL is its Prometheus metrics endpoint (controller-runtime's and the managed
	// reconciler's).
	MetricsURL string
}

// InstallCRDs applies the provider's CRDs in dir and waits until they are Established.
//
// The suite installs them at start rather than when a scenario needs the provider: the
// controller-manager's garbage collector learns of a new kind only at its next discovery
// resync (every 30 s), and until then deleting a claim would not delete its Instance.
func InstallCRDs(ctx context.Context, c *kube.Client, dir string) error {
	return crossplane.ApplyCRDs(ctx, c, dir)
}

// Start applies the provider's CRDs (a no-op when InstallCRDs did) and starts the provider,
// returning once its metrics endpoint answers (its manager has started).
func Start(ctx context.Context, c *kube.Client, o Options) (*Provider, error) {
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, errors.Wrap(err, "cannot find the provider binary: run make provider-build")
	}
	if err := InstallCRDs(ctx, c, o.CRDsDir); err != nil {
		return nil, err
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	args := []string{"--debug", "--metrics-bind-address=" + addr}
	if o.Poll > 0 {
		args = append(args, "--poll="+o.Poll.String())
	}
	p, err := proc.Start(proc.Spec{Name: Name, Path: o.Binary, Args: args, Env: []string{"KUBECONFIG=" + o.Kubeconfig}}, o.LogDir, o.PIDs)
	if err != nil {
		return nil, err
	}
	pr := &Provider{Process: p, MetricsURL: "http://" + addr + "/metrics"}
	if err := p.WaitHealthy(ctx, time.Minute, nil, pr.MetricsURL); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return pr, nil
}
