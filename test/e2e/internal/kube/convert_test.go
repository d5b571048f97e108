package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCondition(t *testing.T) {
	type args struct {
		conditions []any
		typ        string
	}
	type want struct {
		status, reason, message string
		ok                      bool
		since                   time.Time
	}
	available := map[string]any{"type": "Available", "status": "False", "reason": "Creating",
		"message": "creating: 0/3 replicas available", "lastTransitionTime": "2026-12-06T03:15:32Z"}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Found": {
			reason: "The condition of the type asked for is read whole, its lastTransitionTime as a time.",
			args:   args{conditions: []any{map[string]any{"type": "Ready", "status": "True"}, available}, typ: "Available"},
			want: want{status: "False", reason: "Creating", message: "creating: 0/3 replicas available", ok: true,
				since: time.Date(2026, 12, 6, 3, 15, 32, 0, time.UTC)},
		},
		"Missing": {
			reason: "An object without the condition reads as not found, with a zero time.",
			args:   args{conditions: []any{map[string]any{"type": "Ready", "status": "True"}}, typ: "Available"},
			want:   want{},
		},
		"Malformed": {
			reason: "A condition that is not an object, or a time that does not parse, reads as nothing rather than failing.",
			args:   args{conditions: []any{"Available", map[string]any{"type": "Available", "lastTransitionTime": "yesterday"}}, typ: "Available"},
			want:   want{ok: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": tc.args.conditions}}}
			var got want
			got.status, got.reason, got.message, got.ok = Condition(u, tc.args.typ)
			got.since = ConditionSince(u, tc.args.typ)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nCondition, ConditionSince: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
