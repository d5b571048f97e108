package crossplane

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSamples(t *testing.T) {
	const text = `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="composite/xmemcacheds.cache.example.com",result="success"} 3758
controller_runtime_reconcile_total{result="requeue",controller="composite/xmemcacheds.cache.example.com"} 12
# HELP workqueue_depth Current depth of workqueue
# TYPE workqueue_depth gauge
workqueue_depth{controller="claim/memcacheds.cache.example.com",name="claim/memcacheds.cache.example.com"} 917
# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 1204
# HELP workqueue_queue_duration_seconds How long in seconds an item stays in workqueue before being requested
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="x",le="1"} 3
workqueue_queue_duration_seconds_sum{name="x"} 1.5
workqueue_queue_duration_seconds_count{name="x"} 3
`
	type args struct {
		text     string
		families []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   Samples
		err    bool
	}{
		"NamedFamilies": {
			reason: "Counters and gauges of the named families, keyed by name and sorted labels; other families, a histogram and an absent family are left out.",
			args:   args{text: text, families: []string{"controller_runtime_reconcile_total", "workqueue_depth", "workqueue_queue_duration_seconds", "absent"}},
			want: Samples{
				`controller_runtime_reconcile_total{controller="composite/xmemcacheds.cache.example.com",result="success"}`:  3758,
				`controller_runtime_reconcile_total{controller="composite/xmemcacheds.cache.example.com",result="requeue"}`:  12,
				`workqueue_depth{controller="claim/memcacheds.cache.example.com",name="claim/memcacheds.cache.example.com"}`: 917,
			},
		},
		"NotMetrics": {
			reason: "Text that is not Prometheus' format is an error, not an empty answer.",
			args:   args{text: "<html>not found</html>\n", families: []string{"workqueue_depth"}},
			err:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSamples(strings.NewReader(tc.args.text), tc.args.families...)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nParseSamples(...): error %v, want error %t", tc.reason, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nParseSamples(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
