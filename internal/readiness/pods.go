package readiness

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/function-memcached/internal/render"
)

// MaxPodsTold is how many pods Pods names at most: enough to show a pattern, short enough
// for a condition message people read in `kubectl get`.
const MaxPodsTold = 3

// maxDetail bounds what is quoted of a kubelet's or scheduler's own message.
const maxDetail = 120

// Pods says why replicas are not available, from the Memcached's own pods: the most telling
// ones (at most MaxPodsTold, worst first), each with what keeps it from serving, for example
//
//	sessions-7d9f-x2: ImagePullBackOff (Back-off pulling image "memcached:1.6.99")
//	sessions-7d9f-x3: sidecar exporter CrashLoopBackOff: OOMKilled, restarted 5 times
//
// It is empty when no pod has anything to tell: pods still being deleted and ready pods are
// not a reason.
func Pods(pods []corev1.Pod) string {
	type told struct {
		rank int
		name string
		why  string
	}
	var all []told
	for _, p := range pods {
		if rank, why := diagnose(p); rank > 0 {
			all = append(all, told{rank, p.Name, why})
		}
	}
	slices.SortFunc(all, func(a, b told) int {
		if a.rank != b.rank {
			return b.rank - a.rank
		}
		return strings.Compare(a.name, b.name)
	})
	var parts []string
	for i, t := range all {
		if i == MaxPodsTold {
			parts = append(parts, fmt.Sprintf("and %d more", len(all)-MaxPodsTold))
			break
		}
		parts = append(parts, t.name+": "+t.why)
	}
	return strings.Join(parts, "; ")
}

// Explain appends to an Available message why replicas are not available, from the
// Memcached's own pods (see Pods); it is message itself when no pod has anything to tell.
// The composition function and the provider explain with it, so a claim says the same
// wherever its Memcached runs.
func Explain(message string, pods []corev1.Pod) string {
	if why := Pods(pods); why != "" {
		return message + "; " + why
	}
	return message
}

// Ranks of what keeps a pod from serving: what needs a person first.
const (
	rankStarting    = 1 // Being scheduled or started; usually resolves itself.
	rankNotReady    = 2 // Running, but its probes fail.
	rankCrashing    = 3 // Its container keeps exiting, or was OOM-killed.
	rankCannotStart = 4 // It cannot run at all: no node fits, the image cannot be pulled, ...
)

// diagnose ranks what keeps pod p from serving and words it; rank 0 means nothing does.
func diagnose(p corev1.Pod) (int, string) {
	if p.DeletionTimestamp != nil {
		return 0, ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			if v, ok := ephemeralVolume(p); ok && strings.Contains(strings.ToLower(c.Message), "persistentvolumeclaim") {
				// The scheduler waits for the volume's claim, which it names generically; the
				// claim's events (ProvisioningFailed) say why it is not bound.
				return rankCannotStart, "Pending: its volume " + v + " is not bound (its events say why, such as ProvisioningFailed): " + detail(c.Message)
			}
			return rankCannotStart, "Pending: " + detail(c.Message)
		}
	}
	rank, why := 0, ""
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		r, w := container(cs)
		if r > 0 && cs.Name != render.ContainerName {
			// A sidecar (the exporter, the auth proxy) is named: what keeps the pod out of
			// its Service is then not memcached, whose cache may be intact.
			w = "sidecar " + cs.Name + " " + w
		}
		if r > rank {
			rank, why = r, w
		}
	}
	if rank == 0 && p.Status.Phase == corev1.PodPending {
		return rankStarting, "Pending"
	}
	if v, ok := ephemeralVolume(p); ok && why == "ContainerCreating" {
		// A volume that cannot be mounted keeps a container here; only the pod's events
		// (FailedMount) say so.
		why += " (mounting its volume " + v + "; the pod's FailedMount events say if it cannot be)"
	}
	return rank, why
}

// ephemeralVolume names p's generic ephemeral volume (external storage's) as the
// PersistentVolumeClaim Kubernetes makes for it, <pod>-<volume>, with its StorageClass.
func ephemeralVolume(p corev1.Pod) (string, bool) {
	for _, v := range p.Spec.Volumes {
		if e := v.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
			what := "PersistentVolumeClaim " + p.Name + "-" + v.Name
			if sc := e.VolumeClaimTemplate.Spec.StorageClassName; sc != nil {
				what += " of StorageClass " + *sc
			}
			return what, true
		}
	}
	return "", false
}

// container ranks and words what keeps one container from serving.
func container(cs corev1.ContainerStatus) (int, string) {
	restarts := ""
	if n := cs.RestartCount; n > 0 {
		restarts = fmt.Sprintf(", restarted %d time%s", n, plural(n))
	}
	last := cs.LastTerminationState.Terminated
	// Only memcached's own words are quoted: a sidecar's exit code says enough.
	quote := cs.Name == render.ContainerName
	switch w := cs.State.Waiting; {
	case w != nil && w.Reason == "CrashLoopBackOff":
		why := "CrashLoopBackOff"
		if last != nil {
			why += ": " + terminated(last, quote)
		}
		return rankCrashing, why + restarts
	case w != nil && (w.Reason == "ContainerCreating" || w.Reason == "PodInitializing"):
		return rankStarting, w.Reason
	case w != nil:
		// ErrImagePull, ImagePullBackOff, InvalidImageName, CreateContainerConfigError, ...
		if w.Message == "" {
			return rankCannotStart, w.Reason + restarts
		}
		return rankCannotStart, w.Reason + " (" + detail(w.Message) + ")" + restarts
	case cs.State.Terminated != nil:
		return rankCrashing, terminated(cs.State.Terminated, quote) + restarts
	case last != nil && last.Reason == "OOMKilled" && !cs.Ready:
		return rankCrashing, "OOMKilled" + restarts
	case cs.State.Running != nil && !cs.Ready:
		return rankNotReady, "running, not ready (readiness probe failing)" + restarts
	}
	return 0, ""
}

// terminated words how a container ended: its reason (OOMKilled, Error) and exit code, and,
// when quote, its termination message when it has one: with external storage, memcached's
// container ends its log there (FallbackToLogsOnError), which says why it could not open its
// disk. Only printable characters of it are kept.
func terminated(t *corev1.ContainerStateTerminated, quote bool) string {
	if t.Reason == "OOMKilled" {
		return t.Reason
	}
	printable := strings.Map(func(r rune) rune {
		if r == '\n' || unicode.IsPrint(r) {
			return r
		}
		return -1
	}, t.Message)
	if msg := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(printable), "\n", "; ")), " "); quote && msg != "" {
		return fmt.Sprintf("%s (exit code %d: %s)", t.Reason, t.ExitCode, detail(msg))
	}
	return fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
}

// detail shortens a kubelet's or scheduler's message: the gRPC wrapping the container runtime
// adds says nothing a person needs.
func detail(msg string) string {
	if _, after, ok := strings.Cut(msg, " desc = "); ok {
		msg = after
	}
	msg = strings.TrimSpace(msg)
	if r := []rune(msg); len(r) > maxDetail {
		msg = string(r[:maxDetail-1]) + "…"
	}
	return msg
}

func plural(n int32) string {
	if n == 1 {
		return ""
	}
	return "s"
}
