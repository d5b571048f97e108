//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/node"
	"github.com/example/function-memcached/test/e2e/internal/suite"
)

// The pods a claim gets run, for real, as the memcache user with a read-only root file system,
// no capabilities and no way to gain any: read from the running processes, not from the spec.
func TestNodePodSecurity(t *testing.T) {
	requireNode(t)
	t.Parallel()
	ns := newNodeNamespace(t, "node-security")
	const name = "sessions"
	apply(t, newNodeClaim(ns, name, 1, map[string]any{"metrics": map[string]any{"enabled": true}}))
	waitAvailable(t, claimGVK, ns, name, 1)
	pods := waitPodsReady(t, ns, name, 1)
	for _, c := range []string{render.ContainerName, render.ExporterContainerName} {
		p := mainProcess(t, container(t, &pods[0], c))
		wantConfined(t, "container "+c, p, render.UID)
		t.Logf("container %s: pid %d %q uid %d caps %x NoNewPrivs %d Seccomp %d root %v", c, p.PID, p.Cmdline, p.UID[1], p.CapEff, p.NoNewPrivs, p.Seccomp, p.Mounts["/"])
	}
}

// The function runs from its package: the runtime image embedded in the xpkg runs as a pod on
// the real node with its own entrypoint and user, a read-only root file system and the
// revision's TLS Secret mounted where TLS_SERVER_CERTS_DIR says, the way Crossplane's Default
// runtime runs it; Crossplane reaches it there (the suite runs no function process on the
// host), and every claim of the suite is composed by it.
func TestNodeFunctionRunsFromPackage(t *testing.T) {
	requireNode(t)
	rt := env.PodFunction
	if rt == nil {
		t.Skip("E2E_FUNCTION_BINARY is set: the function runs on the host")
	}
	t.Parallel()
	ctx := context.Background()
	pod, err := rt.Pod(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != node.Name || pod.Spec.Containers[0].Image != env.Package {
		t.Errorf("function pod on node %q from image %q, want the real node and the package %q", pod.Spec.NodeName, pod.Spec.Containers[0].Image, env.Package)
	}

	// What the package's embedded runtime image says: its entrypoint and user.
	img, err := tarball.ImageFromPath(env.XPKG, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	uid, err := strconv.Atoi(strings.Split(cf.Config.User, ":")[0])
	if err != nil {
		t.Fatalf("the runtime image's user %q is not numeric", cf.Config.User)
	}
	p := mainProcess(t, container(t, pod, crossplane.RuntimeContainer))
	wantEntry := append(append([]string{}, cf.Config.Entrypoint...), cf.Config.Cmd...)
	if !slices.Equal(p.Cmdline, wantEntry) {
		t.Errorf("function process runs %q, want the image's entrypoint %q", p.Cmdline, wantEntry)
	}
	wantConfined(t, "function", p, uid)
	t.Logf("function: pid %d %q uid %d (image user %s) root %v", p.PID, p.Cmdline, p.UID[1], cf.Config.User, p.Mounts["/"])

	t.Run("the revision's TLS Secret is mounted where TLS_SERVER_CERTS_DIR says", func(t *testing.T) {
		dir := p.Env["TLS_SERVER_CERTS_DIR"]
		if dir != crossplane.TLSServerCertsDir || !slices.Contains(p.Mounts[dir], "ro") {
			t.Fatalf("TLS_SERVER_CERTS_DIR=%q mounted %v, want %s read-only", dir, p.Mounts[dir], crossplane.TLSServerCertsDir)
		}
		r, err := env.Kube.Resource(crossplane.FunctionRevisionGVK, "")
		if err != nil {
			t.Fatal(err)
		}
		revs, err := r.List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/package=" + suite.FunctionName})
		if err != nil || len(revs.Items) != 1 {
			t.Fatalf("FunctionRevisions: %v, %v", revs, err)
		}
		secretName, _, _ := unstructured.NestedString(revs.Items[0].Object, "status", "tlsServerSecretName")
		secret, err := env.Kube.Typed.CoreV1().Secrets(crossplane.Namespace).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
			// The file as the function sees it, through its root.
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "root", dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(secret.Data[f]) {
				t.Errorf("%s/%s differs from Secret %s", dir, f, secretName)
			}
		}
		if ep, _, _ := unstructured.NestedString(revs.Items[0].Object, "status", "endpoint"); ep != rt.Endpoint {
			t.Errorf("revision endpoint %q, want the proxy to the pod %q", ep, rt.Endpoint)
		}
	})

	t.Run("the suite runs no function process on the host", func(t *testing.T) {
		if _, ok := env.Function.(*crossplane.Runtime); ok {
			t.Fatal("the suite's function is a host process")
		}
		// Any process running a function binary from this suite's output (another suite on
		// the machine may run its own).
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range procs {
			b, err := os.ReadFile(f) //nolint:gosec // procfs.
			if err != nil || len(b) == 0 {
				continue
			}
			argv0 := strings.SplitN(string(b), "\x00", 2)[0]
			if filepath.Base(argv0) == suite.FunctionName && strings.HasPrefix(argv0, env.OutputDir+"/") {
				t.Errorf("%s: a function process on the host: %q", f, strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	})

	t.Run("Crossplane calls it for a claim", func(t *testing.T) {
		before, err := rt.RunFunctionCalls(ctx)
		if err != nil {
			t.Fatal(err)
		}
		forwarded := rt.Proxy.Forwarded.Load()
		ns := newNodeNamespace(t, "node-function")
		apply(t, newNodeClaim(ns, "calls", 1, nil))
		waitAvailable(t, claimGVK, ns, "calls", 1)
		after, err := rt.RunFunctionCalls(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after <= before {
			t.Errorf("RunFunction calls answered by the pod: %d before the claim, %d after; want more", before, after)
		}
		t.Logf("RunFunction calls answered in the pod: %d before the claim, %d once it was Available; connections through the proxy: %d, %d", before, after, forwarded, rt.Proxy.Forwarded.Load())
	})
}
