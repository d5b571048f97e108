package monitoring_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"

	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
)

// prometheusOwn are the series Prometheus writes itself for every target, not the exporter.
var prometheusOwn = map[string]bool{"up": true}

// grafana replaces the dashboard's variables with values, as Grafana does before it sends a
// query: the two the dashboard defines and the rate interval Grafana derives.
var grafana = strings.NewReplacer("$__rate_interval", "5m", "$namespace", "team-a", "$memcached", "sessions")

// labelValues is Grafana's variable query: the label values of a selector's series.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-z_]+\)$`)

// TestQueriesReadServedMetrics parses every alert's expression and every query of the
// dashboard (its panels' and its variables') with Prometheus's PromQL parser and checks the
// two things a wrong query hides until it is needed: each selector reads one Memcached only
// (its namespace and Service, so no team sees another's), and each metric is one the real
// exporter v0.14.4 serves over the real memcached, scraped here, and one the rendered default
// exporter v0.15.4 declares (testdata/exporter-v0.15.4-metrics.txt, from its source).
func TestQueriesReadServedMetrics(t *testing.T) {
	type query struct{ where, expr, namespace, service string }
	var queries []query
	for _, a := range render.Alerts(sessions()) {
		queries = append(queries, query{"alert " + a.Name + " (" + a.Severity + ")", a.Expr, "team-a", "sessions"})
	}
	for where, q := range dashboardQueries(t) {
		// A panel shows one Memcached; the variables list them: every namespace, and the
		// Memcacheds of the one chosen.
		namespace, service := "team-a", "sessions"
		switch where {
		case "variable namespace":
			namespace, service = "", ""
		case "variable memcached":
			service = ""
		}
		queries = append(queries, query{"dashboard " + where, grafana.Replace(q), namespace, service})
	}
	sort.Slice(queries, func(i, j int) bool { return queries[i].where < queries[j].where })

	scraped := scrape(t)
	declared := names(t, filepath.Join("testdata", "exporter-v0.15.4-metrics.txt"))
	p := parser.NewParser(parser.Options{})
	for _, q := range queries {
		expr, err := p.ParseExpr(q.expr)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", q.where, q.expr, err)
			continue
		}
		selectors := 0
		parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			selectors++
			for _, l := range []struct{ name, value string }{{"namespace", q.namespace}, {"service", q.service}} {
				if l.value != "" && !selects(vs.LabelMatchers, l.name, l.value) {
					t.Errorf("%s: %s does not select %s=%q: it reads other Memcacheds' series too", q.where, vs, l.name, l.value)
				}
			}
			switch {
			case prometheusOwn[vs.Name]:
			case !scraped[vs.Name]:
				t.Errorf("%s reads %s, which the exporter v0.14.4 does not serve over memcached", q.where, vs.Name)
			case !declared[vs.Name]:
				t.Errorf("%s reads %s, which the exporter v0.15.4 does not declare", q.where, vs.Name)
			}
			return nil
		})
		if selectors == 0 {
			t.Errorf("%s: %q selects no series", q.where, q.expr)
		}
	}
	if len(queries) < len(render.Alerts(sessions()))+1 {
		t.Errorf("the dashboard has no query")
	}
}

// selects reports whether matchers hold name="value" exactly.
func selects(matchers []*labels.Matcher, name, value string) bool {
	for _, m := range matchers {
		if m.Name == name && m.Type == labels.MatchEqual && m.Value == value {
			return true
		}
	}
	return false
}

// dashboardQueries are the PromQL queries of example/monitoring/dashboard.yaml's dashboard,
// keyed by where they are: every panel's targets, and the selectors of its variables'
// label_values queries. A panel without a query fails the test.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "example", "monitoring", "dashboard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Metadata struct{ Labels map[string]string }
		Data     map[string]string
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard's ConfigMap is labelled %v: Grafana's sidecar loads those labelled grafana_dashboard: \"1\"", cm.Metadata.Labels)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name  string
				Type  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal([]byte(cm.Data["memcached.json"]), &d); err != nil {
		t.Fatalf("the dashboard's memcached.json: %v", err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q query %d", p.Title, i)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("dashboard variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("dashboard variable %s: %q is not a label_values query", v.Name, q.Query)
			continue
		}
		out["variable "+v.Name] = m[1]
	}
	return out
}

// scrape runs the real memcached with the rendered memcached container's arguments (with
// external storage, on a temporary directory) and the
// real exporter (bin/memcached_exporter, v0.14.4) with the rendered exporter's, stores,
// reads and misses items so that the per-slab series exist, and returns the names of every
// series the exporter serves.
func scrape(t *testing.T) map[string]bool {
	t.Helper()
	exporter := binary(t, "MEMCACHED_EXPORTER", "memcached_exporter")
	m := sessions()
	spec := render.Deployment(m).Spec.Template.Spec
	port := memcachedtest.FreePort(t)
	at := func(args []string) []string {
		var out []string
		for _, a := range args {
			out = append(out, strings.ReplaceAll(a, strconv.Itoa(render.Port), strconv.Itoa(port)))
		}
		return out
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// External storage's volume: a directory memcached's user writes, where the pod mounts it.
	disk := memcachedtest.Dir(t)
	if os.Geteuid() == 0 {
		if err := os.Chown(disk, memcachedtest.UID, memcachedtest.UID); err != nil {
			t.Fatal(err)
		}
	}
	var args []string
	for _, a := range at(spec.Containers[0].Args) {
		args = append(args, strings.ReplaceAll(a, render.ExtstoreDir, disk))
	}
	memcachedtest.Start(t, args, addr)

	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mc := memcachedtest.NewConn(c)
	defer func() { _ = mc.Close() }()
	for i := range 20 {
		if _, err := mc.Set("key-"+strconv.Itoa(i), strings.Repeat("v", 100*(i+1))); err != nil {
			t.Fatal(err)
		}
		_, _ = mc.Get("key-" + strconv.Itoa(i))
		_, _ = mc.Get("missing-" + strconv.Itoa(i))
	}

	args = nil
	for _, ctr := range spec.Containers {
		if ctr.Name == render.ExporterContainerName {
			args = at(ctr.Args)
		}
	}
	if args == nil {
		t.Fatal("the rendered pod has no exporter container")
	}
	listen := "127.0.0.1:" + strconv.Itoa(memcachedtest.FreePort(t))
	cmd := exec.Command(exporter, append(args, "--web.listen-address="+listen)...) //nolint:gosec // The test's own binary.
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rsp, err := http.Get("http://" + listen + "/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(rsp.Body)
		_ = rsp.Body.Close()
		if !bytes.Contains(body, []byte("\nmemcached_up 1\n")) {
			continue
		}
		served := map[string]bool{}
		s := bufio.NewScanner(bytes.NewReader(body))
		for s.Scan() {
			l := s.Text()
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			served[strings.FieldsFunc(l, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
		return served
	}
	t.Fatalf("the exporter does not report memcached_up 1 within 10s:\n%s", logs.String())
	return nil
}

// names reads a list of metric names, one a line, # for comments.
func names(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out[l] = true
		}
	}
	return out
}
