package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// PrometheusRuleKind is the Prometheus Operator's kind of alerting rules, of
// ServiceMonitorAPIVersion, rendered unstructured like the ServiceMonitor.
const PrometheusRuleKind = "PrometheusRule"

// Labels every alert carries beside its severity, so that an Alertmanager route or a silence
// can name one Memcached: the Service's name is on the series only as "service", and an
// alert about a Memcached no replica of which is scraped has no series at all.
const (
	AlertLabelName      = "memcached"
	AlertLabelNamespace = "namespace"
	AlertLabelSeverity  = "severity"
)

// Severities of the alerts: critical pages someone, warning opens a ticket.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
)

// An Alert is one alerting rule of a Memcached's PrometheusRule, as Prometheus evaluates it.
type Alert struct {
	Name, Severity string
	// For is how long Expr must hold before the alert fires.
	For string
	// Expr reads only what the exporter sidecar serves and Prometheus's own up, selected by
	// the labels the Prometheus Operator gives the ServiceMonitor's targets.
	Expr string
	// Summary and Description are the annotations: what is wrong, and what to change.
	Summary, Description string
}

// Alerts are m's alerting rules: memcached-mixin's (grafana/jsonnet-libs) down, connection
// limit and out-of-memory alerts, scoped to m, and four it lacks: no replica scraped at
// all, a replica that keeps restarting, connections refused at the limit, and evictions that
// say the cache is too small; with external storage, a fifth: extstore nearly full. The
// thresholds and the reasons for them are in docs/operations.md.
func Alerts(m Memcached) []Alert {
	sel := fmt.Sprintf("namespace=%q, service=%q", m.Namespace, m.Name)
	who := m.Namespace + "/" + m.Name
	alerts := []Alert{{
		Name: "MemcachedDown", Severity: SeverityCritical, For: "5m",
		Expr:    fmt.Sprintf("memcached_up{%s} == 0 or up{%s} == 0", sel, sel),
		Summary: fmt.Sprintf("Memcached %s: replica {{ $labels.pod }} is down.", who),
		Description: "For 5 minutes the exporter of {{ $labels.pod }} has not reached memcached (memcached_up 0), or Prometheus has not " +
			"reached the exporter (up 0). The pod's events and the claim's Available condition say why.",
	}, {
		Name: "MemcachedNotScraped", Severity: SeverityWarning, For: "10m",
		Expr:    fmt.Sprintf("absent(memcached_up{%s})", sel),
		Summary: fmt.Sprintf("Memcached %s: no replica has been scraped for 10 minutes.", who),
		Description: "No replica runs (the claim's Available condition says why), or Prometheus does not select the Memcached's " +
			"ServiceMonitor: then none of its other alerts can fire either. (A Prometheus that does not select this " +
			"PrometheusRule evaluates none of these alerts, this one included: docs/operations.md shows how to check.)",
	}, {
		// A replica that crashes and is restarted between scrapes never shows memcached_up 0
		// for 5 minutes; its uptime falling back does.
		Name: "MemcachedRestarting", Severity: SeverityWarning, For: "0m",
		Expr:    fmt.Sprintf("resets(memcached_uptime_seconds{%s}[30m]) > 2", sel),
		Summary: fmt.Sprintf("Memcached %s: {{ $labels.pod }} restarted {{ $value }} times in 30 minutes.", who),
		Description: "Its memcached keeps starting over, empty each time: its clients miss what they stored. The pod's events " +
			"and its containers' last state (kubectl describe pod) say why.",
	}, {
		Name: "MemcachedConnectionLimitApproaching", Severity: SeverityWarning, For: "15m",
		Expr:    fmt.Sprintf("100 * memcached_current_connections{%s} / memcached_max_connections{%s} > 80", sel, sel),
		Summary: fmt.Sprintf("Memcached %s: {{ $labels.pod }} holds {{ printf \"%%.0f\" $value }}%% of its connection limit.", who),
		Description: fmt.Sprintf("Each replica accepts %d connections (spec.maxConnections); at the limit memcached refuses new ones. "+
			"Raise spec.maxConnections, add replicas (spec.size), or find the client that does not reuse its connections.", m.MaxConnections),
	}, {
		Name: "MemcachedConnectionLimitApproaching", Severity: SeverityCritical, For: "15m",
		Expr:    fmt.Sprintf("100 * memcached_current_connections{%s} / memcached_max_connections{%s} > 95", sel, sel),
		Summary: fmt.Sprintf("Memcached %s: {{ $labels.pod }} holds {{ printf \"%%.0f\" $value }}%% of its connection limit.", who),
		Description: fmt.Sprintf("Each replica accepts %d connections (spec.maxConnections); at the limit memcached refuses new ones. "+
			"Raise spec.maxConnections, add replicas (spec.size), or find the client that does not reuse its connections.", m.MaxConnections),
	}, {
		// More than 10 in every 5 minutes, for 5 minutes: a client that opens a connection
		// too many now and then is a ticket (the limit alerts), refusals that go on a page.
		Name: "MemcachedConnectionsRejected", Severity: SeverityCritical, For: "5m",
		Expr:    fmt.Sprintf("increase(memcached_connections_rejected_total{%s}[5m]) > 10", sel),
		Summary: fmt.Sprintf("Memcached %s: {{ $labels.pod }} refuses connections at its limit.", who),
		Description: fmt.Sprintf("For 5 minutes {{ $labels.pod }} has refused more than 10 new connections in every 5 minutes because it held %d "+
			"(spec.maxConnections): its clients see errors. Raise spec.maxConnections or add replicas (spec.size).", m.MaxConnections),
	}, {
		Name: "MemcachedOutOfMemoryErrors", Severity: SeverityWarning, For: "15m",
		Expr:    fmt.Sprintf("sum without (slab) (rate(memcached_slab_items_outofmemory_total{%s}[5m])) > 0", sel),
		Summary: fmt.Sprintf("Memcached %s: {{ $labels.pod }} fails writes for lack of memory.", who),
		Description: fmt.Sprintf("For 15 minutes {{ $labels.pod }} has failed to store items because no slab had room (%d MB, spec.memoryLimitMB): "+
			"those writes return an error. A larger spec.memoryLimitMB, or a smaller spec.maxItemSizeMB, makes room.", m.MemoryLimitMB),
	}, {
		// command="set" is memcached's cmd_set, which counts every storage command: set, add,
		// replace, append, prepend and cas. The "> 0" drops a replica with no writes at all,
		// whose ratio would be +Inf or NaN, not a cache too small.
		Name: "MemcachedCacheTooSmall", Severity: SeverityWarning, For: "30m",
		Expr: fmt.Sprintf("rate(memcached_items_evicted_total{%s}[15m]) / (sum without (command, status) (rate(memcached_commands_total{%s, command=\"set\"}[15m])) > 0) > 0.1",
			sel, sel),
		Summary: fmt.Sprintf("Memcached %s: {{ $labels.pod }} evicts live items for {{ $value | humanizePercentage }} of its writes.", who),
		Description: fmt.Sprintf("For 30 minutes more than one write in ten to {{ $labels.pod }} has pushed out an item that had not expired: "+
			"its %d MB (spec.memoryLimitMB) do not hold the working set, and clients miss what they stored. A larger spec.memoryLimitMB "+
			"(twice, %d, is a start) or more replicas (spec.size) would hold it.", m.MemoryLimitMB, 2*m.MemoryLimitMB),
	}}
	if e := m.ExternalStorage; e != nil {
		// A full extstore is a cache doing its work; one that keeps a quarter or less of its
		// pages free (memcached's ext_drop_under, where it starts dropping items) and still
		// evicts items from disk to make room drops values clients will ask for.
		alerts = append(alerts, Alert{
			Name: "MemcachedExtstoreNearlyFull", Severity: SeverityWarning, For: "30m",
			Expr: fmt.Sprintf("memcached_extstore_pages_free{%s} / (memcached_extstore_pages_free{%s} + memcached_extstore_pages_used{%s}) <= 0.25"+
				" and rate(memcached_extstore_objects_evicted_total{%s}[15m]) > 0", sel, sel, sel, sel),
			Summary: fmt.Sprintf("Memcached %s: the external storage of {{ $labels.pod }} is nearly full and drops items.", who),
			Description: fmt.Sprintf("For 30 minutes a quarter or less of the extstore pages of {{ $labels.pod }} have been free and it has "+
				"evicted items from disk to make room: its %d MB of external storage (spec.externalStorage.sizeMB) do not hold what is "+
				"written. A larger spec.externalStorage.sizeMB (within policy.maxExternalStorageMB) or more replicas (spec.size) would.", e.SizeMB),
		})
	}
	return alerts
}

// NeedsPrometheusRule reports whether m gets a PrometheusRule: the platform asked for one,
// and m has metrics for its alerts to read.
func NeedsPrometheusRule(m Memcached) bool {
	return m.PrometheusRule && m.Metrics
}

// PrometheusRule is m's Alerts as one rule group, for the Prometheus Operator to load into
// the Prometheus that scrapes m's ServiceMonitor.
func PrometheusRule(m Memcached) *unstructured.Unstructured {
	rules := []any{}
	for _, a := range Alerts(m) {
		rules = append(rules, map[string]any{
			"alert": a.Name,
			"expr":  a.Expr,
			"for":   a.For,
			"labels": map[string]any{
				AlertLabelSeverity: a.Severity, AlertLabelName: m.Name, AlertLabelNamespace: m.Namespace,
			},
			"annotations": map[string]any{"summary": a.Summary, "description": a.Description},
		})
	}
	return monitoringObject(m, PrometheusRuleKind, map[string]any{
		"groups": []any{map[string]any{"name": "memcached." + m.Namespace + "." + m.Name, "rules": rules}},
	})
}
