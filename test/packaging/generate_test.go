package packaging

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// providerCRDs is where make generate writes the provider's CRDs, which `make provider-xpkg`
// packages.
const providerCRDs = "package-provider/crds"

// TestGenerate runs make generate in a copy of the repository while it watches the provider's
// CRD directory, as `make -j2 test e2e` packages the provider while check-generate runs.
func TestGenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generators")
	}
	bin, err := filepath.Abs(filepath.Join(root, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"controller-gen", "angryjet"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			missing(t, "bin/"+tool+" is not built; run `make test`")
		}
	}
	cases := map[string]struct {
		reason string
		edit   func(t *testing.T, dir string)
		want   []string
		// wantErr: make generate fails, and the tree is left as the edit left it.
		wantErr bool
	}{
		"Stale": {
			reason: "Each stale file is replaced whole, a CRD no type makes is removed, and the output names exactly those; every other file is left untouched, and the provider's CRD directory never looks emptier than the package it makes.",
			edit: func(t *testing.T, dir string) {
				t.Helper()
				appendTo(t, filepath.Join(dir, providerCRDs, "memcached.example.com_instances.yaml"), "# edited by hand\n")
				appendTo(t, filepath.Join(dir, "apis/memcached/v1alpha1/zz_generated.deepcopy.go"), "// edited by hand\n")
				writeFile(t, filepath.Join(dir, providerCRDs, "memcached.example.com_gones.yaml"), "kind: CustomResourceDefinition\n")
				if err := os.Remove(filepath.Join(dir, "example/namespaced/definition.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{
				"generated apis/memcached/v1alpha1/zz_generated.deepcopy.go",
				"generated " + providerCRDs + "/memcached.example.com_instances.yaml",
				"generated example/namespaced/definition.yaml",
				"removed " + providerCRDs + "/memcached.example.com_gones.yaml",
			},
		},
		"GeneratorFails": {
			reason: "When a generator fails (types that do not compile), make generate fails and changes nothing: no CRD is removed for want of a new one.",
			edit: func(t *testing.T, dir string) {
				t.Helper()
				appendTo(t, filepath.Join(dir, "apis/memcached/v1alpha1/instance_types.go"), "func broken( {\n")
			},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := copyRepository(t)
			fresh := snapshot(t, dir)
			crds := countYAML(filepath.Join(dir, providerCRDs))
			if tc.edit != nil {
				tc.edit(t, dir)
			}
			before := snapshot(t, dir)

			// Count the provider's CRDs as a package build beside make would see them.
			stop, fewest := make(chan struct{}), make(chan int)
			go func() {
				least := crds
				for {
					select {
					case <-stop:
						fewest <- least
						return
					default:
					}
					least = min(least, countYAML(filepath.Join(dir, providerCRDs)))
					time.Sleep(time.Millisecond)
				}
			}()
			// -o: the tools are the repository's own, already built; never rebuild them here.
			cmd := exec.Command("make", "--no-print-directory", "-C", dir, "BIN="+bin,
				"-o", filepath.Join(bin, "controller-gen"), "-o", filepath.Join(bin, "angryjet"), "generate")
			cmd.Env = makeEnv(nil)
			stdout, stderr := &bytes.Buffer{}, &bytes.Buffer{}
			cmd.Stdout, cmd.Stderr = stdout, stderr
			err := cmd.Run()
			close(stop)
			least := <-fewest
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nmake generate: error %v, want error %t\n%s%s", tc.reason, err, tc.wantErr, stdout, stderr)
			}
			want := fresh
			if tc.wantErr {
				want = before
			}

			var got []string
			for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmake generate's output: -want, +got:\n%s", tc.reason, diff)
			}
			after := snapshot(t, dir)
			if diff := cmp.Diff(contents(want), contents(after)); diff != "" {
				t.Errorf("%s\nthe tree after make generate: -want, +got:\n%s", tc.reason, diff)
			}
			named := map[string]bool{}
			for _, l := range got {
				named[l[strings.Index(l, " ")+1:]] = true
			}
			for p, f := range before {
				if a, ok := after[p]; ok && !named[p] && !a.modified.Equal(f.modified) {
					t.Errorf("%s\nmake generate rewrote %s, which it does not name", tc.reason, p)
				}
			}
			if least < crds {
				t.Errorf("%s\nwhile make generate ran, %s held %d CRDs at one point; the provider has %d", tc.reason, providerCRDs, least, crds)
			}
		})
	}
}

// treeFile is one file of a tree: its content and when it was last written.
type treeFile struct {
	content  string
	modified time.Time
}

// copyRepository copies the repository's files (those git tracks or would track, as they are
// in the working tree) into a new directory, and returns it.
func copyRepository(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := t.TempDir()
	for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, p)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // Deleted in the working tree, or a link.
		}
		b, err := os.ReadFile(src) //nolint:gosec // The repository's own files.
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshot reads every file under dir, by its path relative to dir.
func snapshot(t *testing.T, dir string) map[string]treeFile {
	t.Helper()
	files := map[string]treeFile{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p) //nolint:gosec // The test's own copy.
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		files[rel] = treeFile{content: string(b), modified: fi.ModTime()}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// contents drops the times of a snapshot.
func contents(files map[string]treeFile) map[string]string {
	c := make(map[string]string, len(files))
	for p, f := range files {
		c[p] = f.content
	}
	return c
}

// countYAML counts the YAML files in dir.
func countYAML(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			n++
		}
	}
	return n
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0) //nolint:gosec // The test's own copy.
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
