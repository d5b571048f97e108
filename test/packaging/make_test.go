package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository root, where the Makefile lives.
const root = "../.."

// crossplaneCLI returns the absolute path of the Crossplane CLI named by CROSSPLANE_CLI, which
// may be relative to the repository root. It skips
// the test when there is none, unless CI=true: CI must never pass by skipping.
func crossplaneCLI(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CROSSPLANE_CLI")
	if p == "" {
		missing(t, "CROSSPLANE_CLI is not set; run `make test` or set it to bin/crossplane")
		return ""
	}
	abs := p
	if !filepath.IsAbs(p) {
		// Relative to the repository root, like every other path a user gives make.
		r, err := filepath.Abs(root)
		if err != nil {
			t.Fatalf("filepath.Abs(%q): %v", root, err)
		}
		abs = filepath.Join(r, p)
	}
	if _, err := os.Stat(abs); err != nil {
		missing(t, "CROSSPLANE_CLI="+p+": "+err.Error())
	}
	return abs
}

func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// runMake runs make in the repository root with the given arguments and returns its combined
// output. The parent make's variables are dropped from the environment, so that `make test`
// running these tests does not leak its flags or jobserver into the child.
func runMake(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runMakeEnv(t, nil, args...)
}

// runMakeEnv is runMake with env (KEY=value) added to the environment, last, so that it wins.
func runMakeEnv(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-C", root}, args...)...)
	cmd.Env = makeEnv(env)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	return out.String(), err
}

// makeEnv is this process's environment without the parent make's variables, with env
// (KEY=value) added last, so that it wins.
func makeEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}
