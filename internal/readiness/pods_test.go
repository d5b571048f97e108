package readiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pod is a running, ready memcached pod; mutate gives it the failure a case is about.
func pod(name string, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "memcached", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}},
		},
	}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func waiting(reason, message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses[0].Ready = false
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	}
}

func restarted(n int32, lastReason string, exit int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].RestartCount = n
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{Reason: lastReason, ExitCode: exit},
		}
	}
}

func notReady(p *corev1.Pod) { p.Status.ContainerStatuses[0].Ready = false }

func unschedulable(message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: message,
		}}}
	}
}

// withEphemeral gives a pod external storage's generic ephemeral volume of storageClass.
func withEphemeral(storageClass string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "extstore", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
			VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &storageClass}},
		}}})
	}
}

func TestPods(t *testing.T) {
	cases := map[string]struct {
		reason string
		pods   []corev1.Pod
		want   string
	}{
		"AllReady": {
			reason: "Ready pods are no reason.",
			pods:   []corev1.Pod{pod("a"), pod("b")},
		},
		"ImagePull": {
			reason: "An image that cannot be pulled is named with the kubelet's message, without the runtime's gRPC wrapping.",
			pods: []corev1.Pod{pod("sessions-x2", waiting("ErrImagePull",
				`rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/memcached:1.6.99": not found`))},
			want: `sessions-x2: ErrImagePull (failed to pull and unpack image "docker.io/library/memcached:1.6.99": not found)`,
		},
		"ImagePullBackOff": {
			reason: "The back-off after a failed pull says which image.",
			pods:   []corev1.Pod{pod("sessions-x2", waiting("ImagePullBackOff", `Back-off pulling image "memcached:1.6.99"`))},
			want:   `sessions-x2: ImagePullBackOff (Back-off pulling image "memcached:1.6.99")`,
		},
		"CrashLoop": {
			reason: "A crash loop says how the container last ended and how often it restarted.",
			pods: []corev1.Pod{pod("sessions-x2", waiting("CrashLoopBackOff", "back-off 40s restarting failed container"),
				restarted(4, "Error", 71))},
			want: "sessions-x2: CrashLoopBackOff: Error (exit code 71), restarted 4 times",
		},
		"SidecarCrashLoop": {
			reason: "A sidecar that keeps crashing keeps its pod out of the Service (a container that is not running is not Ready): it is named, so that no one blames memcached.",
			pods: []corev1.Pod{pod("sessions-x2", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: "exporter", RestartCount: 5,
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}},
				})
			})},
			want: "sessions-x2: sidecar exporter CrashLoopBackOff: OOMKilled, restarted 5 times",
		},
		"SidecarMessageNotQuoted": {
			reason: "Only memcached's own termination message is quoted: a sidecar's (an image the claim may name) says no more than its exit code.",
			pods: []corev1.Pod{pod("sessions-x2", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: "exporter", RestartCount: 2,
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, Message: "token=abc"}},
				})
			})},
			want: "sessions-x2: sidecar exporter CrashLoopBackOff: Error (exit code 1), restarted 2 times",
		},
		"TerminationMessageControlCharacters": {
			reason: "Control characters in memcached's termination message (a terminal's escapes) are dropped, not carried into the condition.",
			pods: []corev1.Pod{pod("sessions-x2", waiting("CrashLoopBackOff", ""), func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "Error", ExitCode: 1, Message: "\x1b[31mextstore open:\x07 Permission denied\x1b[0m\n",
				}}
			})},
			want: "sessions-x2: CrashLoopBackOff: Error (exit code 1: [31mextstore open: Permission denied[0m)",
		},
		"OOMKilled": {
			reason: "A container the kernel killed for memory says OOMKilled, whether it is starting again or backing off; one that serves again is no reason.",
			pods: []corev1.Pod{
				pod("sessions-a", notReady, restarted(1, "OOMKilled", 137)),
				pod("sessions-b", waiting("CrashLoopBackOff", ""), restarted(4, "OOMKilled", 137)),
				pod("sessions-c", restarted(1, "OOMKilled", 137)),
			},
			want: "sessions-a: OOMKilled, restarted 1 time; sessions-b: CrashLoopBackOff: OOMKilled, restarted 4 times",
		},
		"Unschedulable": {
			reason: "A pod no node fits is Pending with the scheduler's reason.",
			pods: []corev1.Pod{pod("sessions-x2", unschedulable(
				"0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."))},
			want: "sessions-x2: Pending: 0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for inc…",
		},
		"ProbeFailing": {
			reason: "A running container whose readiness probe fails is not serving; liveness restarts are counted.",
			pods:   []corev1.Pod{pod("sessions-x2", notReady, restarted(2, "Error", 137))},
			want:   "sessions-x2: running, not ready (readiness probe failing), restarted 2 times",
		},
		"StartingPodsAreLeastTelling": {
			reason: "At most three pods are named, the worst first; a pod still being created tells least.",
			pods: []corev1.Pod{
				pod("e", waiting("ContainerCreating", "")),
				pod("d", notReady),
				pod("c", waiting("ImagePullBackOff", "Back-off pulling image \"x\"")),
				pod("b", waiting("ImagePullBackOff", "Back-off pulling image \"x\"")),
				pod("a"),
			},
			want: `b: ImagePullBackOff (Back-off pulling image "x"); c: ImagePullBackOff (Back-off pulling image "x"); d: running, not ready (readiness probe failing); and 1 more`,
		},
		"ExternalStorageCannotOpen": {
			reason: "A memcached that cannot open its external storage exits; the end of its log, its termination message, says why.",
			pods: []corev1.Pod{pod("sessions-x2", waiting("CrashLoopBackOff", "back-off 40s restarting failed container"), func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].RestartCount = 3
				p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "Error", ExitCode: 1,
					Message: "Failed to initialize external storage: failed to open file\nextstore open: Permission denied\n",
				}}
			})},
			want: "sessions-x2: CrashLoopBackOff: Error (exit code 1: Failed to initialize external storage: failed to open file; extstore open: Permission denied), restarted 3 times",
		},
		"ExternalStorageClaimPending": {
			reason: "A pod whose generic ephemeral volume is not bound names the claim and its StorageClass, where ProvisioningFailed shows.",
			pods: []corev1.Pod{pod("sessions-x2", unschedulable("0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available."),
				withEphemeral("local-ssd"))},
			want: "sessions-x2: Pending: its volume PersistentVolumeClaim sessions-x2-extstore of StorageClass local-ssd is not bound (its events say why, such as ProvisioningFailed): " +
				"0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available.",
		},
		"ExternalStorageMounting": {
			reason: "A pod still creating its container with a generic ephemeral volume says which volume it mounts and where a failure shows.",
			pods:   []corev1.Pod{pod("sessions-x2", waiting("ContainerCreating", ""), withEphemeral("local-ssd"))},
			want:   "sessions-x2: ContainerCreating (mounting its volume PersistentVolumeClaim sessions-x2-extstore of StorageClass local-ssd; the pod's FailedMount events say if it cannot be)",
		},
		"UnschedulableWithoutClaim": {
			reason: "A pod with a generic ephemeral volume that no node fits for another reason gets the scheduler's words only.",
			pods:   []corev1.Pod{pod("sessions-x2", unschedulable("0/3 nodes are available: 3 Insufficient memory."), withEphemeral("local-ssd"))},
			want:   "sessions-x2: Pending: 0/3 nodes are available: 3 Insufficient memory.",
		},
		"Terminating": {
			reason: "A pod being deleted (a rollout or a scale-down) is no reason.",
			pods: []corev1.Pod{pod("old", notReady, func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{}
			})},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Pods(tc.pods)); diff != "" {
				t.Errorf("%s\nPods(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	type args struct {
		message string
		pods    []corev1.Pod
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"Reasons": {
			reason: "What the pods tell follows the message, after a semicolon.",
			args: args{message: "0/1 replicas available", pods: []corev1.Pod{
				pod("sessions-x2", waiting("ImagePullBackOff", `Back-off pulling image "memcached:1.6.99"`)),
			}},
			want: `0/1 replicas available; sessions-x2: ImagePullBackOff (Back-off pulling image "memcached:1.6.99")`,
		},
		"NothingToTell": {
			reason: "Pods with nothing to tell, or none, leave the message as it is.",
			args:   args{message: "2/3 replicas available", pods: []corev1.Pod{pod("a")}},
			want:   "2/3 replicas available",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Explain(tc.args.message, tc.args.pods)); diff != "" {
				t.Errorf("%s\nExplain(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
