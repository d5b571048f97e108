package instance

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/render"
)

// podHash is the pod-template-hash of the ReplicaSet the Deployment controller made for the
// Deployment sessions in these tests.
const podHash = "5d8f7c"

// memcachedPod is a pod of the Deployment sessions in the target namespace, as its ReplicaSet
// made it, with status s; mods change it.
func memcachedPod(t *testing.T, name string, s corev1.PodStatus, mods ...func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"pod-template-hash": podHash}
	maps.Copy(labels, render.SelectorLabels(memcached(t)))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "sessions-" + podHash, UID: "rs-uid", Controller: ptr.To(true)}},
		},
		Status: s,
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// serving is the status of a pod whose memcached serves.
var serving = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
	Name: render.ContainerName, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
}}}

// waitingFor is the status of a pod whose memcached container waits for reason.
func waitingFor(reason, message string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: render.ContainerName, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
	}}}
}

var pullBackOff = waitingFor("ImagePullBackOff", `Back-off pulling image "memcached:1.6.99"`)

// created creates objs in the target cluster.
func created(objs ...client.Object) func(*testing.T, client.Client) {
	return func(t *testing.T, c client.Client) {
		t.Helper()
		for _, o := range objs {
			if err := c.Create(context.Background(), o); err != nil {
				t.Fatalf("Create(%T %s): %v", o, o.GetName(), err)
			}
		}
	}
}

// listed is what one List of pods asked for.
type listed struct {
	Namespace, Selector string
	Limit               int64
}

func TestPodReasons(t *testing.T) {
	degraded := readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available"}
	pull := `sessions-5d8f7c-b: ImagePullBackOff (Back-off pulling image "memcached:1.6.99")`
	selector := "app.kubernetes.io/instance=sessions,app.kubernetes.io/name=memcached"
	forbidden := kerrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", fmt.Errorf(`User "memcached-provider" cannot list resource "pods" in API group "" in the namespace "team-a"`))

	type args struct {
		// kube is the target cluster.
		kube func(t *testing.T) client.WithWatch
		// listErr fails every List of pods.
		listErr error
		cr      *v1alpha1.Instance
		// update calls Update instead of Observe.
		update bool
	}
	type want struct {
		available readiness.Condition
		events    []string
		lists     []listed
		// logged is part of the debug line a failed list logs; empty for none.
		logged string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"AvailableReadsNoPods": {
			reason: "A healthy Instance costs no pod read: with every replica serving there is nothing to explain.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(), rollout(3), created(memcachedPod(t, "sessions-5d8f7c-a", serving)))
				},
				cr: instance(was(available)),
			},
			want: want{available: available},
		},
		"DegradedImagePull": {
			reason: "A replica lost with nothing changing is explained by its pod, in the function's words, from one bounded List by the selector labels in the target namespace; announcing Degraded is the only event.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(), rollout(2), created(
						memcachedPod(t, "sessions-5d8f7c-a", serving),
						memcachedPod(t, "sessions-5d8f7c-b", pullBackOff),
						memcachedPod(t, "sessions-5d8f7c-c", serving),
					))
				},
				cr: instance(was(available)),
			},
			want: want{
				available: readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available; " + pull},
				events:    []string{"Warning/Degraded"},
				lists:     []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
			},
		},
		"CreatingCrashLoop": {
			reason: "A Memcached that never served is explained too, with how its container last exited.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					crash := waitingFor("CrashLoopBackOff", "back-off 40s restarting failed container")
					crash.ContainerStatuses[0].RestartCount = 4
					crash.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 71}
					return applied(t, instance(), rollout(0), created(memcachedPod(t, "sessions-5d8f7c-a", crash)))
				},
				cr: instance(),
			},
			want: want{
				available: readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/3 replicas available; sessions-5d8f7c-a: CrashLoopBackOff: Error (exit code 71), restarted 4 times"},
				lists:     []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
			},
		},
		"StalledUnschedulable": {
			reason: "A stalled rollout names the pods no node fits, after the Deployment's own message.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					pending := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
						Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu.",
					}}}
					return applied(t, instance(), stall(1), created(memcachedPod(t, "sessions-5d8f7c-b", pending), memcachedPod(t, "sessions-5d8f7c-c", pending)))
				},
				cr: instance(was(degraded)),
			},
			want: want{
				available: readiness.Condition{Reason: readiness.ReasonStalled, Message: `rollout stalled: ReplicaSet "sessions-5d8f" has timed out progressing. 1/3 replicas available; ` +
					"sessions-5d8f7c-b: Pending: 0/3 nodes are available: 3 Insufficient cpu.; sessions-5d8f7c-c: Pending: 0/3 nodes are available: 3 Insufficient cpu."},
				events: []string{"Warning/Stalled"},
				lists:  []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
			},
		},
		"AtMostThree": {
			reason: "At most three pods are named, the worst first, and the others counted.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(size(1)), rollout(0), created(
						memcachedPod(t, "sessions-5d8f7c-a", waitingFor("ContainerCreating", "")),
						memcachedPod(t, "sessions-5d8f7c-b", pullBackOff),
						memcachedPod(t, "sessions-5d8f7c-c", pullBackOff),
						memcachedPod(t, "sessions-5d8f7c-d", pullBackOff),
						memcachedPod(t, "sessions-5d8f7c-e", pullBackOff),
					))
				},
				cr: instance(size(1)),
			},
			want: want{
				available: readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/1 replicas available; " + pull +
					`; sessions-5d8f7c-c: ImagePullBackOff (Back-off pulling image "memcached:1.6.99"); sessions-5d8f7c-d: ImagePullBackOff (Back-off pulling image "memcached:1.6.99"); and 2 more`},
				lists: []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
			},
		},
		"OnlyTheDeploymentsPods": {
			reason: "Pods with the Memcached's labels that no ReplicaSet of its Deployment controls (made by hand, another Deployment's, another namespace's) tell nothing and may not write into the Instance's status.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(), rollout(2), created(
						memcachedPod(t, "by-hand", pullBackOff, func(p *corev1.Pod) { p.OwnerReferences = nil }),
						memcachedPod(t, "shop-5d8f7c-a", pullBackOff, func(p *corev1.Pod) { p.OwnerReferences[0].Name = "shop-" + podHash }),
						memcachedPod(t, "other-hash", pullBackOff, func(p *corev1.Pod) { p.Labels["pod-template-hash"] = "0000" }),
						memcachedPod(t, "not-controller", pullBackOff, func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }),
						memcachedPod(t, "sessions-5d8f7c-x", pullBackOff, func(p *corev1.Pod) { p.Namespace = "team-b" }),
					))
				},
				cr: instance(was(available)),
			},
			want: want{
				available: degraded,
				events:    []string{"Warning/Degraded"},
				lists:     []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
			},
		},
		"NewReasonNoNewEvent": {
			reason: "A Degraded Instance whose pods now tell something else gets the new message, and no event: one is recorded per transition, never per reconcile.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(), rollout(2), created(memcachedPod(t, "sessions-5d8f7c-b", pullBackOff)))
				},
				cr: instance(was(readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available; sessions-5d8f7c-b: ErrImagePull (not found)"})),
			},
			want: want{
				available: readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available; " + pull},
				lists:     []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
			},
		},
		"ChangeOnItsWay": {
			reason: "While a change is not applied yet the pods of the old spec say nothing about it: no pod is read.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(), rollout(2), created(memcachedPod(t, "sessions-5d8f7c-b", pullBackOff)))
				},
				cr: instance(size(2), was(degraded)),
			},
			want: want{available: readiness.Condition{Reason: readiness.ReasonResizing, Message: "resizing from 3 to 2 replicas (2 available)"}, events: []string{"Normal/Resizing"}},
		},
		"NothingYet": {
			reason: "Before the Deployment exists there is nothing to read.",
			args:   args{kube: func(t *testing.T) client.WithWatch { return targetCluster(interceptor.Funcs{}) }, cr: instance()},
			want:   want{available: readiness.Available(nil, readiness.Want{Replicas: 3}, "")},
		},
		"ListForbidden": {
			reason: "An identity that may not list pods explains nothing and fails nothing: the counts stand, the failure is a debug line, and the only event is the transition's.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(), rollout(2), created(memcachedPod(t, "sessions-5d8f7c-b", pullBackOff)))
				},
				listErr: forbidden,
				cr:      instance(was(available)),
			},
			want: want{
				available: degraded,
				events:    []string{"Warning/Degraded"},
				lists:     []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
				logged:    `"msg"="Cannot read pods to explain why replicas are not available" "instance"="platform/sessions" "namespace"="team-a" "error"="pods is forbidden: User \"memcached-provider\" cannot list resource \"pods\"`,
			},
		},
		"UpdateExplains": {
			reason: "An apply that changes nothing the Deployment controller has not seen judges the Deployment it returned, explained the same way.",
			args: args{
				kube: func(t *testing.T) client.WithWatch {
					return applied(t, instance(), rollout(2), created(memcachedPod(t, "sessions-5d8f7c-b", pullBackOff)))
				},
				cr:     instance(was(degraded)),
				update: true,
			},
			want: want{
				available: readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available; " + pull},
				lists:     []listed{{Namespace: "team-a", Selector: selector, Limit: MaxPodsRead}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var lists []listed
			c := interceptor.NewClient(tc.args.kube(t), interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					if _, ok := l.(*corev1.PodList); !ok {
						t.Errorf("List(%T): want only pods listed", l)
					}
					o := (&client.ListOptions{}).ApplyOptions(opts)
					lists = append(lists, listed{Namespace: o.Namespace, Selector: o.LabelSelector.String(), Limit: o.Limit})
					if tc.args.listErr != nil {
						return tc.args.listErr
					}
					return c.List(ctx, l, opts...)
				},
			})
			var logged []string
			ctx := log.IntoContext(context.Background(), funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{Verbosity: 1}))
			rec := &recorder{}
			e := &External{Target: newTarget(c), Settings: settings(t), Recorder: rec}
			var err error
			if tc.args.update {
				_, err = e.Update(ctx, tc.args.cr)
			} else {
				_, err = e.Observe(ctx, tc.args.cr)
			}
			if err != nil {
				t.Errorf("\n%s\nwant no error, got %v", tc.reason, err)
			}
			a := tc.args.cr.GetCondition(v1alpha1.TypeAvailable)
			got := readiness.Condition{Available: a.Status == corev1.ConditionTrue, Reason: string(a.Reason), Message: a.Message}
			if diff := cmp.Diff(tc.want.available, got); diff != "" {
				t.Errorf("\n%s\nAvailable: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.events, rec.reasons); diff != "" {
				t.Errorf("\n%s\nevents: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.lists, lists); diff != "" {
				t.Errorf("\n%s\nLists of the target cluster: -want, +got:\n%s", tc.reason, diff)
			}
			all := strings.Join(logged, "\n")
			switch {
			case tc.want.logged == "" && all != "":
				t.Errorf("\n%s\nlogged %q, want nothing", tc.reason, all)
			case !strings.Contains(all, tc.want.logged):
				t.Errorf("\n%s\nlogged %q, want a line with %q", tc.reason, all, tc.want.logged)
			}
		})
	}
}
