// Package readiness decides, from observed state alone, whether a Memcached's composed
// resources are ready and what its Available condition says. It is shared by the
// composition function and the managed-resource controller so that both tell a user the same
// thing about the same Deployment. Every function is pure: observed objects in, a verdict out.
package readiness

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Reasons of the Available condition. They are part of the API: users and alerts match on
// them.
const (
	// ReasonAvailable: every replica of the current spec is available.
	ReasonAvailable = "Available"
	// ReasonCreating: the Memcached has not been available yet.
	ReasonCreating = "Creating"
	// ReasonResizing: the number of replicas is changing.
	ReasonResizing = "Resizing"
	// ReasonProgressing: a new spec is rolling out.
	ReasonProgressing = "Progressing"
	// ReasonDegraded: nothing is changing, yet some replicas are unavailable.
	ReasonDegraded = "Degraded"
	// ReasonInvalidSpec: the spec breaks a rule; nothing was changed.
	ReasonInvalidSpec = "InvalidSpec"
)

// Deployment reports whether d runs exactly size available replicas of its current spec:
// the controller has observed the latest generation, every replica is updated and
// available, and the Deployment's own Available condition is True.
func Deployment(d *appsv1.Deployment, size int32) bool {
	if d == nil {
		return false
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation &&
		s.UpdatedReplicas == size &&
		s.AvailableReplicas == size &&
		s.Replicas == size &&
		deploymentAvailable(d)
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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

// Available derives the Available condition of a Memcached of size replicas from its
// observed Deployment (nil when not yet observed) and the reason the condition had before,
// which keeps Creating and Resizing from flickering into Progressing while replicas start.
func Available(d *appsv1.Deployment, size int32, previous string) Condition {
	if d == nil {
		return Condition{Reason: ReasonCreating, Message: fmt.Sprintf("creating: 0/%d replicas available", size)}
	}
	avail := d.Status.AvailableReplicas
	counts := fmt.Sprintf("%d/%d replicas available", avail, size)
	if Deployment(d, size) {
		return Condition{Available: true, Reason: ReasonAvailable, Message: counts}
	}
	replicas := int32(-1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	switch {
	case previous == "" || previous == ReasonCreating:
		return Condition{Reason: ReasonCreating, Message: "creating: " + counts}
	case replicas != size:
		return Condition{Reason: ReasonResizing, Message: fmt.Sprintf("resizing from %d to %d replicas (%d available)", replicas, size, avail)}
	case previous == ReasonResizing:
		return Condition{Reason: ReasonResizing, Message: fmt.Sprintf("resizing to %d replicas: %s", size, counts)}
	case d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != size || d.Status.Replicas != size:
		return Condition{Reason: ReasonProgressing, Message: fmt.Sprintf("rolling out: %d/%d replicas updated, %s", d.Status.UpdatedReplicas, size, counts)}
	default:
		return Condition{Reason: ReasonDegraded, Message: counts}
	}
}
