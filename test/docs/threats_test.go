package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// testName matches a test or fuzz target a table cell names, with its subtest or fixture
	// path: `TestTLSSecret`, `e2e TestTenantRole`, `TestRunFunction/tls-renewal-*`.
	testName = regexp.MustCompile("`(?:e2e )?((?:Test|Fuzz)[A-Za-z0-9_]+)(/[^`]*)?`")
	// testFunc matches the declaration of a test or fuzz target in a Go test file.
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
)

// TestThreatModelNamesRealTests reads docs/security.md's threat model, whose every row says
// which test proves a defence: a test that is renamed or removed must take its row with it, or
// the table promises a defence nobody checks any more. Each named test must be declared in a
// _test.go file of the repository, e2e scenarios included; a named subtest or fixture
// (`TestX/Case`) must appear, up to its first `*`, in a test file of that test's package or its
// testdata directory.
func TestThreatModelNamesRealTests(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n## Threat model\n")
	if !ok {
		t.Fatal("docs/security.md has no section ## Threat model")
	}
	table, _, _ = strings.Cut(table, "\n## ")

	declared := map[string]string{} // test name → its file
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "_output" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			declared[m[1]] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Attack") {
			continue
		}
		rows++
		cells := strings.Split(line, " | ")
		names := testName.FindAllStringSubmatch(cells[len(cells)-1], -1)
		if len(names) == 0 {
			t.Errorf("threat model row names no test: %s", line)
		}
		for _, m := range names {
			file, ok := declared[m[1]]
			if !ok {
				t.Errorf("threat model names %s, which no _test.go file declares", m[1])
				continue
			}
			if m[2] == "" {
				continue
			}
			sub, _, _ := strings.Cut(strings.TrimPrefix(m[2], "/"), "*")
			if !mentions(file, sub) {
				t.Errorf("threat model names %s%s, but %s and its testdata do not mention %q", m[1], m[2], file, sub)
			}
		}
	}
	if rows < 10 {
		t.Errorf("threat model has %d rows; want the table of attacks, defences and tests", rows)
	}
}

// mentions reports whether a test file of the package that declares file's test, or a
// testdata entry beside them, names sub: a table's cases may live in a file of their own.
func mentions(file, sub string) bool {
	dir := filepath.Dir(file)
	tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, f := range tests {
		if src, err := os.ReadFile(f); err == nil && strings.Contains(string(src), sub) {
			return true
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "testdata"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), sub) {
			return true
		}
	}
	return false
}
