package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/images"
	"github.com/example/function-memcached/test/e2e/internal/node"
)

// The node lane (Options.Node): the images the real node pulls from the suite's registry, the
// real node itself, and the function running from its package as a pod on it. Each step
// fails loudly when the machine cannot do it; E2E_NODE=off is the only way around them.

// pushImages builds the pause, memcached and exporter images and pushes them to the registry.
func (e *Env) pushImages(ctx context.Context) (err error) {
	e.Images, err = images.BuildLane(ctx, e.Registry.Host, e.BinDir)
	return err
}

// startNode starts the real node and prints how long it took to be Ready.
func (e *Env) startNode(ctx context.Context) (err error) {
	e.Node, err = node.Start(ctx, node.Options{
		Kubelet:    filepath.Join(e.BinDir, "kubelet"),
		Dir:        filepath.Join(e.OutputDir, "node"),
		LogDir:     e.LogDir,
		PIDs:       e.PIDs,
		APIServer:  e.ControlPlane.APIServer.URL,
		CA:         e.ControlPlane.CA,
		Kube:       e.Kube,
		Registry:   e.Registry.Host,
		PauseImage: e.Images.Pause,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "e2e: real node %s Ready %.1fs after the kubelet started\n", node.Name, e.Node.Ready.Seconds())
	return nil
}

// startPodFunction runs the function as a pod on the real node, the way Crossplane's Default
// runtime would, with Crossplane's namespace restricted and opted in to the real node.
func (e *Env) startPodFunction(ctx context.Context) error {
	if err := e.Kube.EnsureNamespace(ctx, crossplane.Namespace, restricted); err != nil {
		return err
	}
	if err := node.OptIn(ctx, e.Kube, crossplane.Namespace); err != nil {
		return err
	}
	rt, err := crossplane.StartPodRuntime(ctx, e.Kube, crossplane.PodRuntimeOptions{
		Name:           FunctionName,
		Package:        e.Package,
		ServerCertsDir: filepath.Join(e.WorkDir, "function-server"),
		LogDir:         e.LogDir,
	})
	if err != nil {
		return err
	}
	e.Function, e.PodFunction = rt, rt
	if err := rt.Install(ctx); err != nil {
		return err
	}
	go rt.Serve(ctx)
	return nil
}

// restricted labels a namespace whose pods must meet the restricted Pod Security Standard.
var restricted = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
}
