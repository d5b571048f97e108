package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodTrouble(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 6, 20, 7, s, 0, time.UTC)) }
	readyAt := func(s int) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(0)},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(s)},
		}}}
	}
	event := func(reason, message string, count int32, last int) corev1.Event {
		return corev1.Event{Reason: reason, Message: message, Count: count, LastTimestamp: at(last)}
	}
	refused := "Readiness probe failed: dial tcp 10.210.0.20:11211: connect: connection refused"
	type want struct {
		trouble, starting []string
	}
	cases := map[string]struct {
		reason string
		pod    *corev1.Pod
		events []corev1.Event
		want   want
	}{
		"Clean": {
			reason: "A pod whose events are only the kubelet's usual ones has no trouble.",
			pod:    readyAt(4),
			events: []corev1.Event{event("Pulled", "image present", 1, 2), event("Started", "started", 1, 2)},
		},
		"ReadinessBeforeReady": {
			reason: "A readiness probe refused before the pod was first Ready is a slow start, also in the very second it became Ready.",
			pod:    readyAt(4),
			events: []corev1.Event{event("Unhealthy", refused, 1, 4)},
			want:   want{starting: []string{"Unhealthy x1 at 20:07:04: " + refused}},
		},
		"ReadinessAfterReady": {
			reason: "A readiness probe that fails once the pod is Ready takes a serving replica out of its Service.",
			pod:    readyAt(4),
			events: []corev1.Event{event("Unhealthy", refused, 1, 5)},
			want:   want{trouble: []string{"Unhealthy x1 at 20:07:05: " + refused}},
		},
		"ReadinessNeverReady": {
			reason: "A readiness failure on a pod that was never Ready is trouble: nothing shows it only started slowly.",
			pod:    &corev1.Pod{},
			events: []corev1.Event{event("Unhealthy", refused, 3, 9)},
			want:   want{trouble: []string{"Unhealthy x3 at 20:07:09: " + refused}},
		},
		"Liveness": {
			reason: "A failed liveness probe is trouble whenever it came: three of them restart the container.",
			pod:    readyAt(4),
			events: []corev1.Event{event("Unhealthy", "Liveness probe failed: dial tcp 10.210.0.20:11211: i/o timeout", 1, 3)},
			want:   want{trouble: []string{"Unhealthy x1 at 20:07:03: Liveness probe failed: dial tcp 10.210.0.20:11211: i/o timeout"}},
		},
		"BackOff": {
			reason: "A back-off means a container exited and is being restarted.",
			pod:    readyAt(4),
			events: []corev1.Event{event("BackOff", "Back-off restarting failed container memcached", 2, 3)},
			want:   want{trouble: []string{"BackOff x2 at 20:07:03: Back-off restarting failed container memcached"}},
		},
		"EventTimeOnly": {
			reason: "An event written through events.k8s.io carries its time in eventTime, not lastTimestamp.",
			pod:    readyAt(4),
			events: []corev1.Event{{Reason: "Unhealthy", Message: refused, EventTime: metav1.NewMicroTime(at(2).Time)}},
			want:   want{starting: []string{"Unhealthy x1 at 20:07:02: " + refused}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			trouble, starting := PodTrouble(tc.pod, tc.events)
			if diff := cmp.Diff(tc.want, want{trouble: trouble, starting: starting}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nPodTrouble(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
