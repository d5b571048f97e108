package readiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/internal/render"
)

// spec is the stamp of the wanted spec in these cases; "old" stamps a Deployment that has
// not received it yet.
const spec = "new"

// want is a Memcached of size replicas with the wanted spec.
func want(size int32) Want { return Want{Replicas: size, Spec: spec} }

// deployment builds an observed Deployment that has served (its last rollout completed);
// mutate adjusts the one field a case is about.
func deployment(specReplicas, replicas, updated, available int32, mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Generation: 2, Annotations: map[string]string{render.AnnotationSpec: spec}},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(specReplicas)},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 2, Replicas: replicas, UpdatedReplicas: updated, AvailableReplicas: available,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
			},
		},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

// neverServed is a Deployment whose first rollout has not completed.
func neverServed(d *appsv1.Deployment) {
	d.Status.Conditions[1].Reason = "ReplicaSetUpdated"
}

// stamped sets the spec stamp of a Deployment.
func stamped(s string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Annotations[render.AnnotationSpec] = s }
}

// stuck is a Deployment whose rollout exceeded its progress deadline.
func stuck(d *appsv1.Deployment) {
	d.Status.Conditions[1] = appsv1.DeploymentCondition{
		Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		Message: `ReplicaSet "sessions-7d9f" has timed out progressing.`,
	}
}

func TestDeployment(t *testing.T) {
	type args struct {
		d *appsv1.Deployment
		w Want
	}
	cases := map[string]struct {
		reason string
		args   args
		want   bool
	}{
		"NotObserved":  {reason: "Nothing is ready before it is observed.", args: args{nil, want(1)}, want: false},
		"AllAvailable": {reason: "Every replica updated and available, generation observed, Available=True.", args: args{deployment(3, 3, 3, 3), want(3)}, want: true},
		"StaleGeneration": {
			reason: "A spec change the controller has not observed yet may change everything.",
			args:   args{deployment(3, 3, 3, 3, func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 }), want(3)},
			want:   false,
		},
		"NotApplied": {
			reason: "A Deployment fully available with the old spec is not ready while the new one is still to be applied.",
			args:   args{deployment(3, 3, 3, 3, stamped("old")), want(3)},
			want:   false,
		},
		"NotAllUpdated":   {reason: "Old replicas are still serving during a rollout.", args: args{deployment(3, 3, 2, 3), want(3)}, want: false},
		"NotAllAvailable": {reason: "A replica that is not available is not serving its keys.", args: args{deployment(3, 3, 3, 2), want(3)}, want: false},
		"WrongSize":       {reason: "Three available replicas do not make a size-1 Memcached ready.", args: args{deployment(3, 3, 3, 3), want(1)}, want: false},
		"SurplusOldPods":  {reason: "Pods beyond the size (a surge still terminating) mean the rollout is not finished.", args: args{deployment(3, 4, 3, 3), want(3)}, want: false},
		"AvailableConditionFalse": {
			reason: "The Deployment's own Available condition must agree.",
			args: args{deployment(3, 3, 3, 3, func(d *appsv1.Deployment) {
				d.Status.Conditions[0].Status = corev1.ConditionFalse
			}), want(3)},
			want: false,
		},
		"NoConditions": {
			reason: "A Deployment the controller has not reported on is not ready.",
			args:   args{deployment(1, 1, 1, 1, func(d *appsv1.Deployment) { d.Status.Conditions = nil }), want(1)},
			want:   false,
		},
		"HeldAsItRuns": {
			reason: "A Deployment held as it runs (an invalid spec) is judged against what it asks for itself.",
			args:   args{deployment(2, 2, 2, 2, stamped("old")), Wanted(deployment(2, 2, 2, 2, stamped("old")))},
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Deployment(tc.args.d, tc.args.w); got != tc.want {
				t.Errorf("%s\nDeployment(...): want %t, got %t", tc.reason, tc.want, got)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	type args struct {
		d        *appsv1.Deployment
		w        Want
		previous string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   Condition
	}{
		"NotObserved": {
			reason: "Before the Deployment exists the Memcached is being created.",
			args:   args{nil, want(3), ""},
			want:   Condition{Reason: ReasonCreating, Message: "creating: 0/3 replicas available"},
		},
		"Available": {
			reason: "Every replica available is Available=True with the count.",
			args:   args{deployment(3, 3, 3, 3), want(3), ReasonCreating},
			want:   Condition{Available: true, Reason: ReasonAvailable, Message: "3/3 replicas available"},
		},
		"StillCreating": {
			reason: "Until it has been available once, a starting Memcached is Creating, even while the Deployment's status is still catching up.",
			args:   args{deployment(3, 0, 0, 0, neverServed), want(3), ReasonCreating},
			want:   Condition{Reason: ReasonCreating, Message: "creating: 0/3 replicas available"},
		},
		"FixedAfterInvalidSpec": {
			reason: "A spec that was invalid on create and is now fixed starts a Memcached that never served: Creating, not Degraded.",
			args:   args{deployment(3, 3, 3, 1, neverServed), want(3), ReasonInvalidSpec},
			want:   Condition{Reason: ReasonCreating, Message: "creating: 1/3 replicas available"},
		},
		"FixedAfterInvalidResize": {
			reason: "A Memcached that served, then had an invalid resize, and has lost a replica since, is Degraded.",
			args:   args{deployment(3, 3, 3, 2), want(3), ReasonInvalidSpec},
			want:   Condition{Reason: ReasonDegraded, Message: "2/3 replicas available"},
		},
		"ResizeRequested": {
			reason: "A size that differs from the running Deployment's is a resize.",
			args:   args{deployment(3, 3, 3, 3), want(1), ReasonAvailable},
			want:   Condition{Reason: ReasonResizing, Message: "resizing from 3 to 1 replicas (3 available)"},
		},
		"ResizeInProgress": {
			reason: "Once the Deployment has the new size, Resizing lasts until the new replicas are available.",
			args:   args{deployment(3, 3, 1, 1), want(3), ReasonResizing},
			want:   Condition{Reason: ReasonResizing, Message: "resizing to 3 replicas: 1/3 replicas available"},
		},
		"ChangeNotApplied": {
			reason: "A new spec (memoryLimitMB 64→128) that has not reached the Deployment yet is rolling out, never available with the old settings.",
			args:   args{deployment(3, 3, 3, 3, stamped("old")), want(3), ReasonAvailable},
			want:   Condition{Reason: ReasonProgressing, Message: "rolling out: the new spec is not applied yet, 3/3 replicas available"},
		},
		"RollingOut": {
			reason: "A new spec rolling out is Progressing with updated and available counts.",
			args:   args{deployment(3, 4, 1, 3), want(3), ReasonAvailable},
			want:   Condition{Reason: ReasonProgressing, Message: "rolling out: 1/3 replicas updated, 3/3 replicas available"},
		},
		"GenerationNotObserved": {
			reason: "A spec change not yet seen by the Deployment controller is Progressing.",
			args:   args{deployment(3, 3, 3, 3, func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 }), want(3), ReasonAvailable},
			want:   Condition{Reason: ReasonProgressing, Message: "rolling out: the Deployment controller has not seen the new spec yet, 3/3 replicas available"},
		},
		"Stalled": {
			reason: "A rollout past its progress deadline is Stalled with the Deployment's own message.",
			args:   args{deployment(3, 4, 1, 3, stuck), want(3), ReasonProgressing},
			want:   Condition{Reason: ReasonStalled, Message: `rollout stalled: ReplicaSet "sessions-7d9f" has timed out progressing. 3/3 replicas available`},
		},
		"StalledOnCreate": {
			reason: "A Memcached whose first rollout is stuck says so, rather than Creating forever.",
			args:   args{deployment(3, 1, 1, 0, stuck), want(3), ReasonCreating},
			want:   Condition{Reason: ReasonStalled, Message: `rollout stalled: ReplicaSet "sessions-7d9f" has timed out progressing. 0/3 replicas available`},
		},
		"StalledButNewSpecComing": {
			reason: "A stuck rollout that a new spec is about to replace is rolling out again, not Stalled.",
			args:   args{deployment(3, 4, 1, 3, stuck, stamped("old")), want(3), ReasonStalled},
			want:   Condition{Reason: ReasonProgressing, Message: "rolling out: the new spec is not applied yet, 3/3 replicas available"},
		},
		"ResizeAppliedNotObserved": {
			reason: "A resize whose new size is applied but not yet seen by the Deployment controller (what the provider's apply returns) is still Resizing, not a rollout.",
			args:   args{deployment(3, 1, 1, 1, func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 1 }), want(3), ReasonResizing},
			want:   Condition{Reason: ReasonResizing, Message: "resizing to 3 replicas: 1/3 replicas available"},
		},
		"RolloutUpdatedNotAllAvailable": {
			reason: "A rollout whose replicas all run the new spec, some not available yet, is still Progressing: it never served at this spec, so it is not Degraded.",
			args:   args{deployment(3, 3, 3, 2), want(3), ReasonProgressing},
			want:   Condition{Reason: ReasonProgressing, Message: "rolling out: 2/3 replicas available"},
		},
		"EvictedNotReplacedYet": {
			reason: "A replica evicted (a node drain) before the ReplicaSet made its replacement leaves fewer pods than wanted, all of the current template: Degraded, not a rollout.",
			args:   args{deployment(2, 1, 1, 1), want(2), ReasonAvailable},
			want:   Condition{Reason: ReasonDegraded, Message: "1/2 replicas available"},
		},
		"EvictedReplacementStarting": {
			reason: "Its replacement created but not ready yet: still Degraded.",
			args:   args{deployment(2, 2, 2, 1), want(2), ReasonDegraded},
			want:   Condition{Reason: ReasonDegraded, Message: "1/2 replicas available"},
		},
		"RolloutOldScaledDown": {
			reason: "A rollout that has scaled an old replica down and not yet surged the next new one still has pods of the old template: Progressing.",
			args:   args{deployment(3, 3, 2, 3), want(3), ReasonProgressing},
			want:   Condition{Reason: ReasonProgressing, Message: "rolling out: 2/3 replicas updated, 3/3 replicas available"},
		},
		"Degraded": {
			reason: "A replica lost with nothing changing is Degraded.",
			args:   args{deployment(3, 3, 3, 2), want(3), ReasonAvailable},
			want:   Condition{Reason: ReasonDegraded, Message: "2/3 replicas available"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Available(tc.args.d, tc.args.w, tc.args.previous)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nAvailable(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
