package instance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/readiness"
)

func TestFieldManager(t *testing.T) {
	long := strings.Repeat("x", 200)
	cases := map[string]struct {
		reason    string
		namespace string
		name      string
		want      string
	}{
		"Short": {reason: "An Instance's manager names it.", namespace: "team-a", name: "sessions", want: "memcached-provider/team-a/sessions"},
		"Long": {
			reason:    "A manager longer than the API server allows is cut, with a hash that keeps two Instances apart.",
			namespace: "team-a", name: long,
			want: ("memcached-provider/team-a/" + long)[:119] + "-887fa304",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := FieldManager(&v1alpha1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: tc.namespace, Name: tc.name}})
			if diff := cmp.Diff(tc.want, got); diff != "" || len(got) > 128 {
				t.Errorf("\n%s\nFieldManager(...) (%d bytes): -want, +got:\n%s", tc.reason, len(got), diff)
			}
		})
	}
	other := FieldManager(&v1alpha1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: long + "y"}})
	if other == cases["Long"].want {
		t.Error("two long names share a field manager")
	}
}

func TestOwnershipOf(t *testing.T) {
	applied := func(manager string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply}}
	}
	cases := map[string]struct {
		reason string
		o      metav1.ObjectMeta
		want   ownership
	}{
		"Ours":         {reason: "Labelled with the Instance's UID.", o: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelInstanceUID: uid}}, want: ours},
		"OtherUID":     {reason: "Labelled with another Instance's UID, even if an earlier provider applied it.", o: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.LabelInstanceUID: "other"}, ManagedFields: applied(LegacyFieldManager)}, want: foreign},
		"Legacy":       {reason: "Applied by earlier providers' shared manager, unlabelled.", o: metav1.ObjectMeta{ManagedFields: applied(LegacyFieldManager)}, want: legacy},
		"LegacyUpdate": {reason: "Only an apply by the shared manager counts.", o: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: LegacyFieldManager, Operation: metav1.ManagedFieldsOperationUpdate}}}, want: foreign},
		"Unlabelled":   {reason: "Anybody else's.", o: metav1.ObjectMeta{ManagedFields: applied("kubectl")}, want: foreign},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ownershipOf(&appsv1.Deployment{ObjectMeta: tc.o}, uid); got != tc.want {
				t.Errorf("\n%s\nownershipOf(...) = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

func TestMigration(t *testing.T) {
	fields := func(managers ...string) []metav1.ManagedFieldsEntry {
		var out []metav1.ManagedFieldsEntry
		for _, m := range managers {
			out = append(out, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1"})
		}
		return out
	}
	const manager = "memcached-provider/platform/sessions"
	cases := map[string]struct {
		reason string
		fields []metav1.ManagedFieldsEntry
		want   []metav1.ManagedFieldsEntry
	}{
		"Rename": {
			reason: "The shared manager's entry becomes the Instance's, beside everyone else's.",
			fields: fields("kube-controller-manager", LegacyFieldManager),
			want:   fields("kube-controller-manager", manager),
		},
		"AlreadyOwn": {
			reason: "When the Instance applied under its own name already, the old entry goes.",
			fields: fields(LegacyFieldManager, manager),
			want:   fields(manager),
		},
		"Nothing": {reason: "Nothing to move, no patch.", fields: fields(manager)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			patch, err := migration(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42", ManagedFields: tc.fields,
				Labels: map[string]string{"app.kubernetes.io/name": "memcached"}}}, manager, "uid-1")
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if patch != nil {
					t.Errorf("\n%s\nmigration(...) = %s, want none", tc.reason, patch)
				}
				return
			}
			var ops []struct {
				Op    string          `json:"op"`
				Path  string          `json:"path"`
				Value json.RawMessage `json:"value"`
			}
			if err := json.Unmarshal(patch, &ops); err != nil {
				t.Fatal(err)
			}
			var got []metav1.ManagedFieldsEntry
			var labels map[string]string
			if len(ops) != 3 || ops[0].Op != "test" || ops[0].Path != "/metadata/resourceVersion" || string(ops[0].Value) != `"42"` ||
				ops[1].Op != "replace" || ops[1].Path != "/metadata/managedFields" || json.Unmarshal(ops[1].Value, &got) != nil ||
				ops[2].Op != "add" || ops[2].Path != "/metadata/labels" || json.Unmarshal(ops[2].Value, &labels) != nil {
				t.Fatalf("\n%s\nmigration(...) = %s, want a resourceVersion test, a managedFields replace and the labels", tc.reason, patch)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nmigration(...) managedFields: -want, +got:\n%s", tc.reason, diff)
			}
			// Labelled in the same write, the object stays the Instance's should the apply
			// after the move fail.
			if want := map[string]string{"app.kubernetes.io/name": "memcached", v1alpha1.LabelInstanceUID: "uid-1"}; !cmp.Equal(want, labels) {
				t.Errorf("\n%s\nmigration(...) labels = %v, want %v: the object's own and the Instance's UID", tc.reason, labels, want)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	// A reconcile working on a copy of the Instance older than what this process reported
	// last does not announce the same transition again.
	tr := NewTransitions()
	st := func(reason string) readiness.State { return readiness.StateOf(reason, "") }
	steps := []struct {
		reason         string
		persisted, now string
		want           bool
	}{
		{reason: "The first report after a start compares with the status.", persisted: "Creating", now: "Available", want: true},
		{reason: "A stale copy still saying Creating is no new transition.", persisted: "Creating", now: "Available", want: false},
		{reason: "The copy caught up.", persisted: "Available", now: "Available", want: false},
		{reason: "A real change is one.", persisted: "Available", now: "Degraded", want: true},
	}
	for _, s := range steps {
		if got := tr.Changed("uid-1", st(s.persisted), st(s.now)); got != s.want {
			t.Errorf("%s\nChanged(%q, %q) = %v, want %v", s.reason, s.persisted, s.now, got, s.want)
		}
	}
	if !tr.Changed("uid-2", st("Creating"), st("Available")) {
		t.Error("another Instance's first transition was not announced")
	}
	tr.Forget("uid-1")
	if !tr.Changed("uid-1", st("Creating"), st("Available")) {
		t.Error("a forgotten Instance compares with its status again")
	}
	var none *Transitions
	if !none.Changed("uid-3", st("Creating"), st("Available")) || none.Changed("uid-3", st("Available"), st("Available")) {
		t.Error("without Transitions, the status alone decides")
	}
}
