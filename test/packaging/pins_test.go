package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"
)

// TestCrossplaneToolsSharePins fails when the product's go.mod and the Crossplane tools'
// module (tools/crossplane: the CLI and core) require one module at two versions. The Go
// build cache keys a compiled package by its dependencies' versions, so one drifted pin (say
// k8s.io/api) makes a cold machine compile that package and everything above it twice or
// three times, minutes of the cold CI budget (docs/performance.md), with no test failing.
func TestCrossplaneToolsSharePins(t *testing.T) {
	product := requires(t, "go.mod")
	tools := requires(t, filepath.Join("tools", "crossplane", "go.mod"))

	var drifted []string
	for path, v := range product {
		if tv, ok := tools[path]; ok && tv != v {
			drifted = append(drifted, path+": go.mod "+v+", tools/crossplane/go.mod "+tv)
		}
	}
	sort.Strings(drifted)
	for _, d := range drifted {
		t.Errorf("%s; raise the lower one with `go get <module>@<higher>` in its module, then `go mod tidy` in both", d)
	}
	if len(product) == 0 || len(tools) == 0 {
		t.Fatalf("no requirements read: go.mod %d, tools/crossplane/go.mod %d", len(product), len(tools))
	}
}

// kubernetesPinned are the tool modules that build with tools/kubernetes's versions of every
// module they share with it (the Kubernetes libraries, the etcd client, gRPC, and whatever
// those depend on).
var kubernetesPinned = []string{"etcd", "helm", "coredns", "kube-router"}

// TestToolsShareKubernetesPins fails when a tool of kubernetesPinned builds a module it shares
// with tools/kubernetes (the control plane's binaries) at another version or from a
// replacement. The tool would then run library code the control plane does not, and a new
// machine would compile the Kubernetes libraries once more for it: cmd/go keys a compiled
// package by its module's selected version, not a replacement's, so only equal selections
// share the build cache (kube-router alone, about 250 CPU-seconds; docs/performance.md,
// building). It compares what `go list -deps` reports each build selects.
func TestToolsShareKubernetesPins(t *testing.T) {
	kube := toolBuilds(t, filepath.Join("tools", "kubernetes"))
	if len(kube) < 100 {
		t.Fatalf("go list found only %d modules in tools/kubernetes's builds", len(kube))
	}
	for _, tool := range kubernetesPinned {
		rel := filepath.Join("tools", tool)
		var drifted []string
		for path, v := range toolBuilds(t, rel) {
			if kv, ok := kube[path]; ok && kv != v {
				drifted = append(drifted, path+": tools/kubernetes "+kv+", "+rel+" "+v)
			}
		}
		sort.Strings(drifted)
		if len(drifted) > 0 {
			t.Errorf("%s builds %d modules it shares with tools/kubernetes at other versions:\n%s\n"+
				"require the higher version in both go.mods (`go -C <module> get <module path>@<version>`), with no replace",
				rel, len(drifted), strings.Join(drifted, "\n"))
		}
	}
}

// toolBuilds is module path → the version the builds of the module at rel under the repository
// root select (with " => " and the replacement's, where it is replaced), for every module that
// provides a package to them. Its builds are its tool directives, or else its own package.
func toolBuilds(t *testing.T, rel string) map[string]string {
	t.Helper()
	pkgs := []string{"."}
	if f := parse(t, filepath.Join(rel, "go.mod")); len(f.Tool) > 0 {
		pkgs = nil
		for _, tl := range f.Tool {
			pkgs = append(pkgs, tl.Path)
		}
	}
	return modules(t, rel, pkgs...)
}

// kubernetesLibraries is the package whose build closure is the Kubernetes libraries every
// Kubernetes client compiles: the typed clientset, and below it the API types and machinery.
const kubernetesLibraries = "k8s.io/client-go/kubernetes"

// TestMonitoringSharesKubernetesLibraries fails when test/monitoring, whose Prometheus pin
// was chosen for it, selects any module below kubernetesLibraries at another version than the
// product does: a new machine would then compile the Kubernetes libraries once more, for
// promtool and these tests (about 300 CPU-seconds, docs/performance.md). It compares the
// versions `go list` reports the two builds select, not requirements or replacements: the Go
// build cache keys a package by its module's selected version, so only equal selections share.
func TestMonitoringSharesKubernetesLibraries(t *testing.T) {
	product := selected(t, ".")
	monitoring := selected(t, filepath.Join("test", "monitoring"))
	if len(product) < 10 {
		t.Fatalf("go list found only %d modules below %s: %v", len(product), kubernetesLibraries, product)
	}
	if diff := cmp.Diff(product, monitoring); diff != "" {
		t.Errorf("the modules below %s, by the version each build selects (-product, +test/monitoring):\n%s\n"+
			"pin a Prometheus whose requirements are no newer than the product's (test/monitoring/go.mod says how it was chosen)",
			kubernetesLibraries, diff)
	}
}

// selected is module path → the version it is selected at, for every module that provides a
// package to kubernetesLibraries' build in the module at rel under the repository root.
func selected(t *testing.T, rel string) map[string]string {
	t.Helper()
	return modules(t, rel, kubernetesLibraries)
}

// modules is module path → the version it is selected at (with " => " and the replacement's,
// where it is replaced by other code), for every module that provides a package to the builds
// of pkgs in the module at rel under the repository root.
func modules(t *testing.T, rel string, pkgs ...string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-deps", "-f",
		"{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(root, rel)
	// Standard output only: on a machine without the modules, go prints "go: downloading"
	// lines to standard error, which are not modules.
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s in %s: %v\n%s", strings.Join(pkgs, " "), rel, err, stderr.String())
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		// A replacement by the selected version itself is the same code.
		if sel, repl, ok := strings.Cut(v, " => "); ok && repl == path+" "+sel {
			v = sel
		}
		m[path] = v
	}
	return m
}

// requires reads a go.mod under the repository root into module path → version.
func requires(t *testing.T, rel string) map[string]string {
	t.Helper()
	return required(parse(t, rel))
}

// required is f's requirements: module path → version.
func required(f *modfile.File) map[string]string {
	m := make(map[string]string, len(f.Require))
	for _, r := range f.Require {
		m[r.Mod.Path] = r.Mod.Version
	}
	return m
}

// parse reads the go.mod at rel under the repository root.
func parse(t *testing.T, rel string) *modfile.File {
	t.Helper()
	p := filepath.Join(root, rel)
	data, err := os.ReadFile(p) //nolint:gosec // a fixed path in this repository
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	// Parse, not ParseLax, which skips replace directives.
	f, err := modfile.Parse(p, data, nil)
	if err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	return f
}
