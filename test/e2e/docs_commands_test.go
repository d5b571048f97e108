//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/provider"
)

// docsCommandTimeout bounds one command of the docs; a `kubectl wait` in them carries its own,
// shorter, timeout.
const docsCommandTimeout = 10 * time.Minute

// The docs' commands, as a new user types them, against a cluster with both XRDs installed:
// every line of a ```sh block in README.md and docs/*.md that begins with `kubectl ` or
// `crossplane ` (optionally after `$ `) runs, in order per file, from the repository root, with
// the suite's kubectl and crossplane CLI and the admin kubeconfig. The only substitutions are
// the suite's package references and registry in place of the docs' (example/functions.yaml's
// package, a Provider's package, and that registry in a command's package reference) and, in a
// lane that serves its own builds of images the examples name by digest, the lane's references
// (env.ImageSubstitutions); the scenario logs each one it makes. Before the docs run, the names check: `kubectl get
// memcached -n <ns>` lists a claim while a namespaced XR exists in another namespace, and the
// other way round, also for a member of the team who may read only its Memcacheds; each short
// name lists only its own kind; and the short names and categories of the XRDs reach the CRDs
// Crossplane makes, while the provider's kinds stay out of the category.
func TestDocsCommands(t *testing.T) {
	t.Parallel()
	r := newDocsRunner(t)

	t.Run("kubectl names", func(t *testing.T) { wantUnambiguousNames(t, r) })

	root := env.RepoRoot
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var all []docsCommand
	byFile := map[string][]docsCommand{}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		cmds, err := docsCommands(root, rel)
		if err != nil {
			t.Fatal(err)
		}
		byFile[rel] = cmds
		all = append(all, cmds...)
	}
	if len(all) == 0 {
		t.Fatal("README.md and docs/*.md show no kubectl or crossplane command in a ```sh block")
	}
	r.createNamespaces(t, all)
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		if len(byFile[rel]) == 0 {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			for _, c := range byFile[rel] {
				out := r.run(t, c)
				wantShownNames(t, c, out)
			}
		})
	}
	if len(r.substitutions) == 0 {
		t.Log("substitutions: none")
	} else {
		t.Logf("substitutions (%d):\n  %s", len(r.substitutions), strings.Join(r.substitutions, "\n  "))
	}
}

// wantUnambiguousNames checks what the names of the two XRDs let a user type: the category
// memcached lists claims and namespaced XRs alike, each short name lists only its own kind, and
// Crossplane keeps our short names and categories beside its own in the CRDs it makes.
func wantUnambiguousNames(t *testing.T, r *docsRunner) {
	claimNS, xrNS := newNamespace(t, "team-z"), newNamespace(t, "team-y")
	apply(t, newClaim(claimNS, "web", 1))
	xr := exampleObject(t, "namespaced/xr.yaml", xrNS)
	apply(t, xr)
	m := waitAvailable(t, claimGVK, claimNS, "web", 1)
	composite, _, _ := unstructured.NestedString(m.Object.Object, "spec", "resourceRef", "name")

	for _, tc := range []struct {
		command string
		want    []string
		notWant []string
	}{
		{"kubectl get memcached -n " + claimNS, []string{"web"}, []string{xr.GetName()}},
		{"kubectl get memcached -n " + xrNS, []string{xr.GetName()}, []string{"web"}},
		{"kubectl get mc -n " + claimNS, []string{"web"}, nil},
		{"kubectl get mc -n " + xrNS, nil, []string{xr.GetName()}},
		{"kubectl get nmc -n " + xrNS, []string{xr.GetName()}, nil},
		{"kubectl get nmc -n " + claimNS, nil, []string{"web"}},
		{"kubectl get xmc", []string{composite}, nil},
	} {
		out := r.run(t, docsCommand{where: "names check", line: tc.command})
		names := listedNames(out)
		for _, n := range tc.want {
			if !slices.Contains(names, n) {
				t.Errorf("%s: want %q listed, got names %v:\n%s", tc.command, n, names, out)
			}
		}
		for _, n := range tc.notWant {
			if slices.Contains(names, n) {
				t.Errorf("%s: want %q not listed, got names %v:\n%s", tc.command, n, names, out)
			}
		}
	}

	// A member of the team, allowed to read its namespace's Memcacheds and nothing else, as a
	// platform grants a team: the category holds no kind it may not list, which would make
	// kubectl fail with Forbidden for that kind.
	member := teamMember(t, claimNS)
	command := "kubectl get memcached -n " + claimNS
	out := r.runAs(t, docsCommand{where: "names check, as a member of the team", line: command}, member)
	if !slices.Contains(listedNames(out), "web") {
		t.Errorf("%s, as a member of the team: want %q listed:\n%s", command, "web", out)
	}

	crdGVK := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	for _, tc := range []struct {
		crd                    string
		shortNames, categories []string
		notCategories          []string
	}{
		{"memcacheds.cache.example.com", []string{"mc"}, []string{"memcached", "claim"}, nil},
		{"memcacheds.namespaced.cache.example.com", []string{"nmc"}, []string{"memcached", "composite"}, nil},
		{"xmemcacheds.cache.example.com", []string{"xmc"}, []string{"composite"}, []string{"memcached"}},
		// The provider's kinds stay out of the category a team lists.
		{"instances.memcached.example.com", nil, []string{"managed"}, []string{"memcached"}},
		{"providerconfigs.memcached.example.com", nil, []string{"provider"}, []string{"memcached"}},
		{"providerconfigusages.memcached.example.com", nil, []string{"provider"}, []string{"memcached"}},
		{"clusterproviderconfigs.memcached.example.com", nil, []string{"provider"}, []string{"memcached"}},
		{"clusterproviderconfigusages.memcached.example.com", nil, []string{"provider"}, []string{"memcached"}},
	} {
		u := get(t, crdGVK, "", tc.crd)
		short, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "names", "shortNames")
		cats, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "names", "categories")
		if !slices.Equal(short, tc.shortNames) {
			t.Errorf("CRD %s: short names %v, want %v", tc.crd, short, tc.shortNames)
		}
		for _, c := range tc.categories {
			if !slices.Contains(cats, c) {
				t.Errorf("CRD %s: categories %v, want %q among them", tc.crd, cats, c)
			}
		}
		for _, c := range tc.notCategories {
			if slices.Contains(cats, c) {
				t.Errorf("CRD %s: categories %v, want no %q", tc.crd, cats, c)
			}
		}
	}
}

// teamMember writes a kubeconfig for a ServiceAccount of namespace ns that may get, list and
// watch the claims and namespaced XRs there, and returns its path.
func teamMember(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	const name = "team-member"
	for _, o := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name, "namespace": ns}}},
		{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": map[string]any{"name": name, "namespace": ns},
			"rules": []any{map[string]any{
				"apiGroups": []any{claimGVK.Group, namespacedGVK.Group},
				"resources": []any{"memcacheds"},
				"verbs":     []any{"get", "list", "watch"},
			}},
		}},
		{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": map[string]any{"name": name, "namespace": ns},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": ns}},
		}},
	} {
		apply(t, o)
	}
	tr, err := env.Kube.Typed.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("cannot issue a token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	b, err := provider.Kubeconfig(env.ControlPlane.APIServer.URL, env.ControlPlane.CA.CertPEM, tr.Status.Token)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A docsCommand is one command line of the docs, its trailing comment stripped, and the output
// the docs show right after it (the comment lines that follow it in the block), if any.
type docsCommand struct {
	where string // file:line
	line  string
	shown []string
}

// docsPrompt is the optional prompt before a command.
const docsPrompt = "$ "

// docsCommands reads the commands a user would type from one Markdown file (relative to
// root): the kubectl and crossplane lines of its ```sh blocks, a line ending in a backslash
// joined with the next.
func docsCommands(root, file string) ([]docsCommand, error) {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", file)
	}
	var (
		cmds    []docsCommand
		inBlock bool
		lang    string
		last    = -1 // index in cmds of the block's last command, for the output it shows
	)
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if strings.HasPrefix(trimmed, "```") {
			if inBlock {
				inBlock = false
				continue
			}
			inBlock, last = true, -1
			lang = strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			if f := strings.Fields(lang); len(f) > 0 {
				lang = f[0]
			}
			continue
		}
		if !inBlock || lang != "sh" {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			if last >= 0 {
				cmds[last].shown = append(cmds[last].shown, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
			}
			continue
		}
		line := strings.TrimPrefix(trimmed, docsPrompt)
		if !strings.HasPrefix(line, "kubectl ") && !strings.HasPrefix(line, "crossplane ") {
			last = -1
			continue
		}
		start := i
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		cmds = append(cmds, docsCommand{where: fmt.Sprintf("%s:%d", file, start+1), line: stripComment(line)})
		last = len(cmds) - 1
	}
	return cmds, nil
}

// stripComment removes a trailing shell comment: from an unquoted # that begins a word.
func stripComment(line string) string {
	var quote rune
	escaped := false
	for i, c := range line {
		switch {
		case escaped:
			escaped = false
		case c == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimSpace(line[:i])
		}
	}
	return strings.TrimSpace(line)
}

// docsRunner runs the docs' commands as a user's shell would, with the suite's binaries first
// on PATH, the control plane's admin kubeconfig, and a kubectl discovery cache of its own (a
// cache left by an earlier run on the same port would hide the categories of this one).
type docsRunner struct {
	env     []string
	tmp     string
	replace []docsSubstitution
	// substitutions made, for the log: one line each.
	substitutions []string
}

// A docsSubstitution replaces what the docs name (from) with what the suite runs (to), in the
// files a command reads (inFiles) or in the command's own words (inWords).
type docsSubstitution struct {
	what             string
	from, to         string
	inFiles, inWords bool
}

func newDocsRunner(t *testing.T) *docsRunner {
	t.Helper()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"kubectl", "crossplane"} {
		if err := os.Symlink(filepath.Join(env.BinDir, b), filepath.Join(bin, b)); err != nil {
			t.Fatal(err)
		}
	}
	r := &docsRunner{
		tmp: tmp,
		env: append(os.Environ(),
			"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"KUBECONFIG="+env.ControlPlane.KubeconfigPath(),
			"KUBECACHEDIR="+filepath.Join(tmp, "kube-cache"),
			"HOME="+filepath.Join(tmp, "home"),
		),
	}
	fns, err := kube.ReadObjects(filepath.Join(env.RepoRoot, "example", "functions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range fns {
		pkg, _, _ := unstructured.NestedString(fn.Object, "spec", "package")
		if fn.GetKind() != "Function" || pkg == "" {
			continue
		}
		r.replace = append(r.replace, docsSubstitution{what: "the function's package", from: pkg, to: env.Package, inFiles: true, inWords: true})
		if reg, _, ok := strings.Cut(pkg, "/"); ok {
			r.replace = append(r.replace, docsSubstitution{what: "the registry", from: reg + "/", to: env.Registry.Host + "/", inWords: true})
		}
	}
	if len(r.replace) == 0 {
		t.Fatal("example/functions.yaml names no Function package")
	}
	// Where the lane serves its own build of an image the examples name by digest.
	for _, s := range env.ImageSubstitutions {
		r.replace = append(r.replace, docsSubstitution{what: "the lane's image for " + s.Field, from: s.From, to: s.To, inFiles: true})
	}
	return r
}

// files are the repository files a command names: every word, or the value of a --flag=,
// that is a regular file under the repository root.
func (r *docsRunner) files(line string) []string {
	var out []string
	for _, w := range strings.Fields(line) {
		if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
			w = v
		}
		w = strings.Trim(w, `'"`)
		if w == "" || filepath.IsAbs(w) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(env.RepoRoot, w)); err == nil && fi.Mode().IsRegular() {
			out = append(out, w)
		}
	}
	return out
}

// substitute returns the line to run: a file the command names whose text holds a package the
// docs name is replaced by a copy with the suite's package, and a package reference in the
// command's words by the suite's. Every replacement is recorded.
func (r *docsRunner) substitute(t *testing.T, c docsCommand) string {
	t.Helper()
	line := c.line
	for _, f := range r.files(line) {
		b, err := os.ReadFile(filepath.Join(env.RepoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, s := range r.replace {
			if s.inFiles && strings.Contains(text, s.from) {
				text = strings.ReplaceAll(text, s.from, s.to)
				r.record(c, fmt.Sprintf("%s in %s: %s -> %s", s.what, f, s.from, s.to))
			}
		}
		if p, ok := r.providerPackage(text); ok {
			text = strings.ReplaceAll(text, p, env.Provider.Package)
			r.record(c, fmt.Sprintf("the provider's package in %s: %s -> %s", f, p, env.Provider.Package))
		}
		if text == string(b) {
			continue
		}
		copied := filepath.Join(r.tmp, "substituted", f)
		if err := os.MkdirAll(filepath.Dir(copied), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copied, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		line = regexp.MustCompile(`(^|[\s='"])`+regexp.QuoteMeta(f)+`($|[\s'"])`).ReplaceAllString(line, "${1}"+copied+"${2}")
	}
	words := strings.Fields(line)
	for i, w := range words {
		for _, s := range r.replace {
			if s.inWords && strings.Contains(w, s.from) && !strings.Contains(w, s.to) {
				words[i] = strings.ReplaceAll(w, s.from, s.to)
				r.record(c, fmt.Sprintf("%s in the command: %s -> %s", s.what, w, words[i]))
				w = words[i]
			}
		}
	}
	return strings.Join(words, " ")
}

// providerPackage is the package of a pkg.crossplane.io Provider in a manifest the docs apply.
func (r *docsRunner) providerPackage(text string) (string, bool) {
	objs, err := kube.DecodeObjects([]byte(text))
	if err != nil {
		return "", false
	}
	for _, o := range objs {
		if o.GetKind() != "Provider" || !strings.HasPrefix(o.GetAPIVersion(), "pkg.crossplane.io/") {
			continue
		}
		if p, _, _ := unstructured.NestedString(o.Object, "spec", "package"); p != "" && p != env.Provider.Package {
			return p, true
		}
	}
	return "", false
}

func (r *docsRunner) record(c docsCommand, s string) {
	s = c.where + ": " + s
	if !slices.Contains(r.substitutions, s) {
		r.substitutions = append(r.substitutions, s)
	}
}

// run runs one command, failing the test with the command and its output when it fails.
func (r *docsRunner) run(t *testing.T, c docsCommand) string {
	t.Helper()
	return r.runAs(t, c, "")
}

// runAs runs one command with kubeconfig instead of the admin's, when it is set.
func (r *docsRunner) runAs(t *testing.T, c docsCommand, kubeconfig string) string {
	t.Helper()
	line := r.substitute(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), docsCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
	cmd.Dir = env.RepoRoot
	cmd.Env = r.env
	if kubeconfig != "" {
		cmd.Env = append(slices.Clone(r.env), "KUBECONFIG="+kubeconfig)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %s\n(ran: %s)\nfailed after %.1fs: %v\n%s", c.where, c.line, line, time.Since(start).Seconds(), err, out)
	}
	t.Logf("%s: %s (%.1fs)\n%s", c.where, c.line, time.Since(start).Seconds(), out)
	return string(out)
}

// createNamespaces creates, as a platform team would have for its users, each namespace the
// manifests the docs apply name, unless a command of the docs creates it itself.
func (r *docsRunner) createNamespaces(t *testing.T, cmds []docsCommand) {
	t.Helper()
	created := map[string]bool{}
	createNS := regexp.MustCompile(`^kubectl create (?:namespace|ns) (\S+)`)
	for _, c := range cmds {
		if m := createNS.FindStringSubmatch(c.line); m != nil {
			created[m[1]] = true
		}
	}
	want := map[string]string{}
	for _, c := range cmds {
		for _, f := range r.files(c.line) {
			objs, err := kube.ReadObjects(filepath.Join(env.RepoRoot, f))
			if err != nil {
				continue
			}
			for _, o := range objs {
				if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" {
					created[o.GetName()] = true
				}
				if ns := o.GetNamespace(); ns != "" && want[ns] == "" {
					want[ns] = f
				}
			}
		}
	}
	for ns, f := range want {
		if created[ns] {
			continue
		}
		if err := env.Kube.EnsureNamespace(context.Background(), ns, restricted); err != nil {
			t.Fatalf("cannot create namespace %s: %v", ns, err)
		}
		t.Logf("set-up: namespace %s (restricted), which %s names and no command of the docs creates", ns, f)
	}
}

// listedNames are the first column of kubectl get's table rows, without the kind/ prefix
// kubectl adds when the listing spans kinds.
func listedNames(out string) []string {
	var names []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] == "NAME" {
			continue
		}
		n := f[0]
		if i := strings.LastIndex(n, "/"); i >= 0 {
			n = n[i+1:]
		}
		names = append(names, n)
	}
	return names
}

// wantShownNames checks a `kubectl get` whose output the docs show as a table (comment lines
// after the command, the first a NAME header): every name the docs show is listed.
func wantShownNames(t *testing.T, c docsCommand, out string) {
	t.Helper()
	if len(c.shown) == 0 || !strings.HasPrefix(c.shown[0], "NAME ") || !strings.HasPrefix(c.line, "kubectl get ") {
		return
	}
	got := listedNames(out)
	for _, row := range c.shown[1:] {
		f := strings.Fields(row)
		if len(f) == 0 || f[0] == "NAME" {
			continue
		}
		n := f[0]
		if i := strings.LastIndex(n, "/"); i >= 0 {
			n = n[i+1:]
		}
		if !slices.Contains(got, n) {
			t.Errorf("%s: %s: the docs show %q, kubectl lists %v:\n%s", c.where, c.line, n, got, bytes.TrimSpace([]byte(out)))
		}
	}
}
