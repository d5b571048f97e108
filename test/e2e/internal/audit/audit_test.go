package audit

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCount(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, "2026-12-02T10:00:0"+s+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	log, err := os.ReadFile("testdata/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	type args struct {
		log      string
		from, to time.Time
	}
	type want struct {
		rows   []Row
		writes int
		err    string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Window": {
			reason: "Only requests received in [from, to) count, by client (the user agent's product), verb and resource with its subresource and group; a request without an object counts under -. A refused write (409) is still a request the API server answered.",
			args:   args{log: string(log), from: at("1"), to: at("9")},
			want: want{rows: []Row{
				{Client: "crossplane", Verb: "update", Resource: "xmemcacheds/status.cache.example.com", Requests: 2},
				{Client: "e2e.test", Verb: "get", Resource: "-", Requests: 1},
				{Client: "kube-controller-manager", Verb: "create", Resource: "pods", Requests: 1},
			}, writes: 3},
		},
		"Garbage": {
			reason: "A line that is not an audit event is an error naming its line, not a silently smaller count.",
			args:   args{log: "{\"verb\":\"get\"}\nnot json\n", to: at("9")},
			want:   want{err: "line 2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rows, err := Count(strings.NewReader(tc.args.log), tc.args.from, tc.args.to)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Errorf("%s\nCount(...) error = %v, want one containing %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.rows, rows); diff != "" {
				t.Errorf("%s\nCount(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got := Total(Writes(rows)); got != tc.want.writes {
				t.Errorf("%s\nTotal(Writes(...)) = %d, want %d", tc.reason, got, tc.want.writes)
			}
		})
	}
}
