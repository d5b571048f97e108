package monitoring_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/example/function-memcached/internal/render"
)

// TestAlerts runs Prometheus's rule unit tests (testdata/alerts.test.yaml) on the rule group
// render.PrometheusRule composes for sessions(): each alert fires after its "for" on series
// named as the exporter serves them, with the labels and annotations an on-call engineer
// reads, stays silent below its threshold, and never fires on another Memcached's series.
// promtool check rules first loads the group as Prometheus would.
func TestAlerts(t *testing.T) {
	promtool := binary(t, "PROMTOOL", "promtool")
	rule := render.PrometheusRule(sessions())
	groups, err := yaml.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"rules.yaml": groups, "alerts.test.yaml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"check", "rules", filepath.Join(dir, "rules.yaml")},
		{"test", "rules", filepath.Join(dir, "alerts.test.yaml")},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput() //nolint:gosec // The test's own tool.
		if err != nil {
			t.Errorf("promtool %v: %v\n%s\nthe rule group:\n%s", args, err, out, groups)
		}
	}
}
