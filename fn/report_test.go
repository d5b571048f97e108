package fn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/readiness"
)

// TestReportConditionEvents checks the events a claim gets on the transitions its fixtures
// do not reach: those of the Instance's own reasons, handed on from a Memcached placed in
// another cluster, which the claim announces with the Instance's words.
func TestReportConditionEvents(t *testing.T) {
	type args struct {
		c                       readiness.Condition
		prevReason, prevMessage string
	}
	warning := func(reason, message string) []*fnv1.Result {
		claim := fnv1.Target_TARGET_COMPOSITE_AND_CLAIM
		return []*fnv1.Result{{Severity: fnv1.Severity_SEVERITY_WARNING, Message: message, Reason: &reason, Target: &claim}}
	}
	cases := map[string]struct {
		reason string
		args   args
		want   []*fnv1.Result
	}{
		"Unreachable": {
			reason: "An Instance whose provider cannot observe the target cluster makes its claim say so, once, as the Instance does.",
			args:   args{c: readiness.Condition{Reason: v1alpha1.ReasonUnreachable, Message: "connection refused"}, prevReason: readiness.ReasonAvailable},
			want:   warning(v1alpha1.ReasonUnreachable, "cannot observe the Memcached: connection refused"),
		},
		"StillUnreachable": {
			reason: "Staying unreachable is no new transition.",
			args:   args{c: readiness.Condition{Reason: v1alpha1.ReasonUnreachable, Message: "timeout"}, prevReason: v1alpha1.ReasonUnreachable, prevMessage: "connection refused"},
		},
		"Conflict": {
			reason: "An object in the Instance's way is a Warning naming it.",
			args:   args{c: readiness.Condition{Reason: v1alpha1.ReasonConflict, Message: "Deployment team-a/web exists"}, prevReason: readiness.ReasonCreating},
			want:   warning(v1alpha1.ReasonConflict, "Deployment team-a/web exists"),
		},
		"AnotherConflict": {
			reason: "Another object in the way is something else to fix: announced again.",
			args:   args{c: readiness.Condition{Reason: v1alpha1.ReasonConflict, Message: "Service team-a/web exists"}, prevReason: v1alpha1.ReasonConflict, prevMessage: "Deployment team-a/web exists"},
			want:   warning(v1alpha1.ReasonConflict, "Service team-a/web exists"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := &fnv1.RunFunctionResponse{}
			reportCondition(rsp, tc.args.c, tc.args.prevReason, tc.args.prevMessage)
			if diff := cmp.Diff(tc.want, rsp.GetResults(), protocmp.Transform()); diff != "" {
				t.Errorf("\n%s\nreportCondition(...) results: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
