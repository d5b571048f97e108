package fn

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// podTemplates is the golden list of the pod template every fixture's desired Deployment
// has, by digest, and the CHANGELOG.md section since which those templates stand.
var podTemplates = filepath.Join("testdata", "pod-templates.txt")

// restartsEveryMemcached is what a CHANGELOG.md section must say for the version that rolls
// every running Memcached's pods.
const restartsEveryMemcached = "this version restarts every Memcached"

// TestPodTemplatesUnchanged guards upgrades of the function: a Deployment whose pod template
// changes rolls its pods, so a version of the function that renders another template for an
// existing spec restarts, and empties, every Memcached of the fleet at once. The digest of
// every fixture's desired pod template (its golden response, which TestRunFunction keeps
// equal to what RunFunction returns) must equal testdata/pod-templates.txt's. A change fails
// here until -update rewrites the list, which it does only under a new topmost CHANGELOG.md
// section that says "this version restarts every Memcached" and why; the list then names that
// section. A new fixture joins the list with -update alone: no running pod has its template.
// (The provider renders the remote pods with the same render.Deployment.)
func TestPodTemplatesUnchanged(t *testing.T) {
	got := map[string]string{}
	for _, f := range fixtures(t) {
		name := filepath.Base(filepath.Dir(f))
		rsp := &fnv1.RunFunctionResponse{}
		readProtoYAML(t, filepath.Join("testdata", name, "response.yaml"), rsp)
		d, ok := rsp.GetDesired().GetResources()[KeyDeployment]
		if !ok {
			continue // Nothing runs, or it runs in another cluster.
		}
		tmpl := d.GetResource().AsMap()["spec"].(map[string]any)["template"]
		j, err := json.Marshal(tmpl) // Maps marshal with sorted keys: one form per template.
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(j)
		got[name] = hex.EncodeToString(sum[:8])
	}
	if len(got) == 0 {
		t.Fatal("no fixture desires a Deployment")
	}
	sections := changelogSections(t)
	since, want := readPodTemplates(t)

	var changed []string
	for name, digest := range got {
		if w, ok := want[name]; ok && w != digest {
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	if *update {
		if len(changed) > 0 {
			top := sections[0]
			if top.heading == since || !strings.Contains(strings.ToLower(top.text), strings.ToLower(restartsEveryMemcached)) {
				t.Fatalf("the pod templates of %v change: upgrading to this version rolls the pods of every running Memcached. "+
					"Write a new topmost section in CHANGELOG.md that says %q and why, then run -update again.", changed, restartsEveryMemcached)
			}
			since = top.heading
		}
		writePodTemplates(t, since, got)
		want = got
		changed = nil
	}

	for _, name := range changed {
		t.Errorf("fixture %s: the pod template changed (%s, was %s): upgrading to this version rolls the pods of every running Memcached. "+
			"If that is meant, write a CHANGELOG.md section that says %q and why, and run go test ./fn -run TestPodTemplatesUnchanged -update",
			name, got[name], want[name], restartsEveryMemcached)
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("fixture %s desires a Deployment that %s does not list: run -update to add it", name, podTemplates)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s lists fixture %s, which desires no Deployment: run -update to drop it", podTemplates, name)
		}
	}
	found := false
	for _, s := range sections {
		found = found || s.heading == since
	}
	if !found {
		t.Errorf("%s says its templates stand since CHANGELOG.md's section %q, which CHANGELOG.md does not have", podTemplates, since)
	}
}

// changelogSection is one "## " section of CHANGELOG.md.
type changelogSection struct{ heading, text string }

// changelogSections are CHANGELOG.md's "## " sections, newest (topmost) first.
func changelogSections(t *testing.T) []changelogSection {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []changelogSection
	for _, part := range regexp.MustCompile(`(?m)^## `).Split(string(raw), -1)[1:] {
		heading, text, _ := strings.Cut(part, "\n")
		out = append(out, changelogSection{heading: strings.TrimSpace(heading), text: text})
	}
	if len(out) == 0 {
		t.Fatal("CHANGELOG.md has no ## section")
	}
	return out
}

// readPodTemplates reads the golden list: a "since: <section>" line, then "<fixture> <digest>"
// lines; # begins a comment.
func readPodTemplates(t *testing.T) (string, map[string]string) {
	t.Helper()
	f, err := os.Open(podTemplates)
	if err != nil {
		// Even with -update: a list written afresh would compare the templates with nothing,
		// and so let a change through that rolls every pod without a CHANGELOG.md section.
		t.Fatalf("%v: restore it (git checkout %s) and run -update against it", err, podTemplates)
	}
	defer func() { _ = f.Close() }()
	var since string
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "since: "):
			since = strings.TrimPrefix(l, "since: ")
		default:
			name, digest, ok := strings.Cut(l, " ")
			if !ok {
				t.Fatalf("%s: %q is not a fixture and a digest", podTemplates, l)
			}
			out[name] = digest
		}
	}
	return since, out
}

func writePodTemplates(t *testing.T, since string, digests map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# The digest of the pod template each fixture's desired Deployment has (fn's\n" +
		"# TestPodTemplatesUnchanged; -update writes it). A changed digest means that upgrading the\n" +
		"# function rolls every running Memcached: review it like code, with its CHANGELOG.md section.\n")
	fmt.Fprintf(&b, "since: %s\n", since)
	names := make([]string, 0, len(digests))
	for n := range digests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, digests[n])
	}
	if err := os.WriteFile(podTemplates, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
