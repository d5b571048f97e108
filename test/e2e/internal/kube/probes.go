package kube

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodTrouble reads a pod's events as an SRE reads them after a start: a failed liveness or
// startup probe, a back-off, or a readiness probe that failed after the pod was Ready is
// trouble; a readiness probe that failed while the pod had not yet been Ready is only a slow
// start. The kubelet cannot avoid the latter on a node short of CPU: it probes a second after
// the container starts, and a starved memcached may not listen yet. Such a failure costs one
// probe period out of the Service and a warning, nothing more, so it is returned apart.
func PodTrouble(p *corev1.Pod, events []corev1.Event) (trouble, starting []string) {
	var ready time.Time
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = c.LastTransitionTime.Time
		}
	}
	for _, e := range events {
		if e.Reason != "Unhealthy" && e.Reason != "BackOff" {
			continue
		}
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		line := fmt.Sprintf("%s x%d at %s: %s", e.Reason, max(e.Count, 1), last.UTC().Format(time.TimeOnly), e.Message)
		// Events and conditions carry whole seconds: a failure in the second the pod became
		// Ready came before it.
		if e.Reason == "Unhealthy" && strings.HasPrefix(e.Message, "Readiness probe failed") && !ready.IsZero() && !last.After(ready) {
			starting = append(starting, line)
			continue
		}
		trouble = append(trouble, line)
	}
	return trouble, starting
}
