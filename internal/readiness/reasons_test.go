package readiness

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

func TestAnnouncement(t *testing.T) {
	type want struct {
		severity Severity
		message  string
	}
	cases := map[string]struct {
		reason string
		args   Condition
		want   want
	}{
		"Available": {
			reason: "Becoming available is good news.",
			args:   Condition{Available: true, Reason: ReasonAvailable, Message: "3/3 replicas available"},
			want:   want{severity: Normal, message: "Memcached is available: 3/3 replicas available"},
		},
		"Creating": {
			reason: "Creating is a step on the way: no event.",
			args:   Condition{Reason: ReasonCreating, Message: "creating: 0/3 replicas available"},
			want:   want{severity: Silent},
		},
		"Resizing": {
			reason: "A resize is news, not trouble.",
			args:   Condition{Reason: ReasonResizing, Message: "resizing from 3 to 5 replicas (3 available)"},
			want:   want{severity: Normal, message: "Memcached is resizing from 3 to 5 replicas (3 available)"},
		},
		"Progressing": {
			reason: "A rollout is a step on the way: no event.",
			args:   Condition{Reason: ReasonProgressing, Message: "rolling out: 2/3 replicas available"},
			want:   want{severity: Silent},
		},
		"Stalled": {
			reason: "A stalled rollout will not finish by itself: a warning.",
			args:   Condition{Reason: ReasonStalled, Message: "rollout stalled: timed out. 1/3 replicas available"},
			want:   want{severity: Warning, message: "Memcached rollout stalled: timed out. 1/3 replicas available"},
		},
		"Degraded": {
			reason: "Losing replicas with nothing changing is a warning.",
			args:   Condition{Reason: ReasonDegraded, Message: "2/3 replicas available"},
			want:   want{severity: Warning, message: "Memcached is degraded: 2/3 replicas available"},
		},
		"InvalidSpec": {
			reason: "An invalid spec is a warning in the resolver's own words.",
			args:   Condition{Reason: ReasonInvalidSpec, Message: "invalid spec, nothing was changed: spec.size: too big"},
			want:   want{severity: Warning, message: "invalid spec, nothing was changed: spec.size: too big"},
		},
		"Unreachable": {
			reason: "An Instance that cannot observe its target says so.",
			args:   Condition{Reason: v1alpha1.ReasonUnreachable, Message: "connection refused"},
			want:   want{severity: Warning, message: "cannot observe the Memcached: connection refused"},
		},
		"Conflict": {
			reason: "An Instance blocked by someone else's object names it.",
			args:   Condition{Reason: v1alpha1.ReasonConflict, Message: "Deployment team-a/web exists and is not this Instance's"},
			want:   want{severity: Warning, message: "Deployment team-a/web exists and is not this Instance's"},
		},
		"Unknown": {
			reason: "A reason outside the table is silent.",
			args:   Condition{Reason: "Sleeping", Message: "zzz"},
			want:   want{severity: Silent},
		},
	}
	covered := map[string]bool{}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			covered[tc.args.Reason] = true
			severity, message := Announcement(tc.args)
			if diff := cmp.Diff(tc.want, want{severity: severity, message: message}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nAnnouncement(%+v): -want, +got:\n%s", tc.reason, tc.args, diff)
			}
		})
	}
	for _, m := range Reasons {
		if !covered[m.Reason] {
			t.Errorf("reason %s of the table has no case here", m.Reason)
		}
	}
}

func TestStateOf(t *testing.T) {
	cases := map[string]struct {
		reason string
		args   [2]Condition
		want   bool
	}{
		"NewCount": {
			reason: "A new replica count is no new state: no second event.",
			args:   [2]Condition{{Reason: ReasonDegraded, Message: "2/3 replicas available"}, {Reason: ReasonDegraded, Message: "1/3 replicas available"}},
			want:   true,
		},
		"NewInvalidField": {
			reason: "Another invalid field is something else to fix: a new state.",
			args:   [2]Condition{{Reason: ReasonInvalidSpec, Message: "spec.size: too big"}, {Reason: ReasonInvalidSpec, Message: "spec.image: not allowed"}},
			want:   false,
		},
		"NewConflict": {
			reason: "Another object in the way is something else to fix: a new state.",
			args:   [2]Condition{{Reason: v1alpha1.ReasonConflict, Message: "Deployment"}, {Reason: v1alpha1.ReasonConflict, Message: "Service"}},
			want:   false,
		},
		"NewReason": {
			reason: "Another reason is a new state.",
			args:   [2]Condition{{Reason: ReasonCreating, Message: "0/3"}, {Reason: ReasonAvailable, Message: "3/3"}},
			want:   false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, b := tc.args[0], tc.args[1]
			if got := StateOf(a.Reason, a.Message) == StateOf(b.Reason, b.Message); got != tc.want {
				t.Errorf("\n%s\nStateOf(%+v) == StateOf(%+v): %v, want %v", tc.reason, a, b, got, tc.want)
			}
		})
	}
}

// TestEveryReasonInProviderREADME checks that package-provider/README.md's table of the
// Available condition lists every reason of Reasons, in order, with its status and the event
// a transition to it records, word for word.
func TestEveryReasonInProviderREADME(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "package-provider", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // Read only.
	var got []string
	in := false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			in = line == "### The `Available` condition"
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(line, " | ")
			if len(cells) < 3 {
				t.Fatalf("README row %q has fewer than 3 cells", line)
			}
			got = append(got, strings.TrimPrefix(strings.Join(cells[:3], " | "), "| "))
		}
	}
	var want []string
	for _, m := range Reasons {
		status, event := "False", "none"
		if m.Available {
			status = "True"
		}
		if m.Event != Silent {
			event = string(m.Event) + ": `" + m.Prefix + "<message>`"
			if m.ByMessage {
				event += ", again when the message changes"
			}
		}
		want = append(want, "`"+m.Reason+"` | "+status+" | "+event)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("package-provider/README.md, section \"The `Available` condition\": -want (readiness.Reasons), +got:\n%s", diff)
	}
}
