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
	// Every alert has a test in which it fires: a new alert without one fails here.
	var file struct {
		Tests []struct {
			AlertRuleTest []struct {
				AlertName string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &file); err != nil {
		t.Fatal(err)
	}
	fires := map[string]bool{}
	for _, tc := range file.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName] = true
			}
		}
	}
	for _, a := range render.Alerts(sessions()) {
		if !fires[a.Name] {
			t.Errorf("alert %s (%s) has no test in testdata/alerts.test.yaml in which it fires", a.Name, a.Severity)
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
