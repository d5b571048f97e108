// Package readiness decides, from observed state alone, whether a Memcached's composed
// resources are ready and what its Available condition says. It is shared by the
// composition function and the managed-resource controller so that both tell a user the same
// thing about the same Deployment. Every function is pure: observed objects in, a verdict out.
package readiness

import (
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/internal/render"
)

// Reasons of the Available condition. They are part of the API: users and alerts match on
// them.
const (
	// ReasonAvailable: every replica of the current spec is available.
	ReasonAvailable = "Available"
	// ReasonCreating: the Memcached has not served yet.
	ReasonCreating = "Creating"
	// ReasonResizing: the number of replicas is changing.
	ReasonResizing = "Resizing"
	// ReasonProgressing: a new spec is rolling out, or is not applied yet.
	ReasonProgressing = "Progressing"
	// ReasonStalled: a rollout exceeded its progress deadline; it will not finish by itself.
	ReasonStalled = "Stalled"
	// ReasonDegraded: the Memcached served, and now, with nothing changing, some replicas are
	// unavailable.
	ReasonDegraded = "Degraded"
	// ReasonInvalidSpec: the spec breaks a rule; nothing was changed.
	ReasonInvalidSpec = "InvalidSpec"
)

// Want is what a Deployment must run to be ready: its size, and the spec the renderer stamped
// on it (render.AnnotationSpec). A change not yet applied shows as a Deployment whose stamp is
// not the one wanted.
type Want struct {
	Replicas int32
	Spec     string
}

// Wanted is what the rendered Deployment d asks for.
func Wanted(d *appsv1.Deployment) Want {
	return Want{Replicas: ptr.Deref(d.Spec.Replicas, 1), Spec: d.GetAnnotations()[render.AnnotationSpec]}
}

// applied reports whether the observed Deployment d holds the wanted spec and the Deployment
// controller has seen it.
func applied(d *appsv1.Deployment, w Want) bool {
	return d.GetAnnotations()[render.AnnotationSpec] == w.Spec &&
		ptr.Deref(d.Spec.Replicas, 1) == w.Replicas &&
		d.Status.ObservedGeneration >= d.Generation
}

// Deployment reports whether d runs exactly w: the wanted spec is applied and observed, every
// replica is updated and available, and the Deployment's own Available condition is True.
func Deployment(d *appsv1.Deployment, w Want) bool {
	if d == nil {
		return false
	}
	s := d.Status
	return applied(d, w) &&
		s.UpdatedReplicas == w.Replicas &&
		s.AvailableReplicas == w.Replicas &&
		s.Replicas == w.Replicas &&
		condition(d, appsv1.DeploymentAvailable).Status == corev1.ConditionTrue
}

// Applied reports whether everything wanted has reached the observed Deployment d, so that
// whatever keeps it from being ready is in its pods: the moment to ask why.
func Applied(d *appsv1.Deployment, w Want) bool {
	return d != nil && applied(d, w)
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return appsv1.DeploymentCondition{}
}

// served reports whether d has ever finished a rollout: the Deployment controller's
// Progressing condition says NewReplicaSetAvailable once every replica of a rollout was
// available, and keeps saying it when replicas are lost later.
func served(d *appsv1.Deployment) bool {
	return condition(d, appsv1.DeploymentProgressing).Reason == "NewReplicaSetAvailable"
}

// stalled reports whether d's rollout exceeded its progress deadline.
func stalled(d *appsv1.Deployment) bool {
	c := condition(d, appsv1.DeploymentProgressing)
	return c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded"
}

// Condition is the verdict behind the Available condition.
type Condition struct {
	// Available is the condition's status.
	Available bool
	// Reason is one of the Reason constants.
	Reason string
	// Message tells a person what is happening, with replica counts.
	Message string
}

// Available derives the Available condition of a Memcached that wants w from its observed
// Deployment (nil when not yet observed) and the reason the condition had before, which keeps
// Resizing from flickering into Progressing while replicas start.
func Available(d *appsv1.Deployment, w Want, previous string) Condition {
	if d == nil {
		return Condition{Reason: ReasonCreating, Message: fmt.Sprintf("creating: 0/%d replicas available", w.Replicas)}
	}
	avail := d.Status.AvailableReplicas
	// Not fmt: this runs on every call of the function.
	counts := strconv.Itoa(int(avail)) + "/" + strconv.Itoa(int(w.Replicas)) + " replicas available"
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	switch {
	case Deployment(d, w):
		return Condition{Available: true, Reason: ReasonAvailable, Message: counts}
	case applied(d, w) && stalled(d):
		return Condition{Reason: ReasonStalled, Message: fmt.Sprintf("rollout stalled: %s %s", condition(d, appsv1.DeploymentProgressing).Message, counts)}
	case previous == "" || previous == ReasonCreating || (previous == ReasonInvalidSpec && !served(d)):
		return Condition{Reason: ReasonCreating, Message: "creating: " + counts}
	case replicas != w.Replicas:
		return Condition{Reason: ReasonResizing, Message: fmt.Sprintf("resizing from %d to %d replicas (%d available)", replicas, w.Replicas, avail)}
	case d.GetAnnotations()[render.AnnotationSpec] != w.Spec:
		return Condition{Reason: ReasonProgressing, Message: "rolling out: the new spec is not applied yet, " + counts}
	case previous == ReasonResizing:
		// The new size is applied (the provider judges the Deployment its apply returned,
		// which the Deployment controller has not seen yet): still a resize.
		return Condition{Reason: ReasonResizing, Message: fmt.Sprintf("resizing to %d replicas: %s", w.Replicas, counts)}
	case d.Status.ObservedGeneration < d.Generation:
		return Condition{Reason: ReasonProgressing, Message: "rolling out: the Deployment controller has not seen the new spec yet, " + counts}
	case d.Status.UpdatedReplicas < d.Status.Replicas || d.Status.Replicas > w.Replicas:
		// Pods of an older template, or a surge pod beside them: a rollout. Fewer pods than
		// wanted, all of the current template, is a loss (an eviction, a node gone) that the
		// ReplicaSet is making up for, not a rollout.
		return Condition{Reason: ReasonProgressing, Message: fmt.Sprintf("rolling out: %d/%d replicas updated, %s", d.Status.UpdatedReplicas, w.Replicas, counts)}
	case previous == ReasonProgressing:
		// Every replica runs the new spec and some are not available yet: the rollout is
		// not over. Degraded is for a Memcached that lost replicas with nothing changing.
		return Condition{Reason: ReasonProgressing, Message: "rolling out: " + counts}
	default:
		return Condition{Reason: ReasonDegraded, Message: counts}
	}
}
