package packaging

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

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

// requires reads a go.mod under the repository root into module path → version.
func requires(t *testing.T, rel string) map[string]string {
	t.Helper()
	p := filepath.Join(root, rel)
	data, err := os.ReadFile(p) //nolint:gosec // a fixed path in this repository
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	f, err := modfile.ParseLax(p, data, nil)
	if err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
	m := make(map[string]string, len(f.Require))
	for _, r := range f.Require {
		m[r.Mod.Path] = r.Mod.Version
	}
	return m
}
