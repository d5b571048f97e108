package resolve

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/render"
)

// TestSchedulingPolicy covers which nodes a tenant's claim may reach: by default neither a
// toleration of every taint nor the node-role.kubernetes.io/ keys of control-plane and
// dedicated nodes; with the platform's policy.scheduling, only the keys it lists.
func TestSchedulingPolicy(t *testing.T) {
	const cp = "node-role.kubernetes.io/control-plane"
	exists := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
	}
	policy := func(tolerations, selectors []string) *v1beta1.Input {
		return &v1beta1.Input{Policy: v1beta1.Policy{Scheduling: v1beta1.SchedulingPolicy{
			AllowedTolerationKeys: tolerations, AllowedNodeSelectorKeys: selectors,
		}}}
	}
	type args struct {
		sc *v1alpha1.Scheduling
		in *v1beta1.Input
	}
	type want struct {
		errs []string
		// scheduling is what reaches the renderer when the claim is accepted.
		scheduling *render.Scheduling
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"ControlPlaneByDefault": {
			reason: "The issue's claim: tolerate everything and select the control plane. Both fields are refused, naming the policy that could allow them.",
			args: args{sc: &v1alpha1.Scheduling{
				NodeSelector: map[string]string{cp: ""},
				Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			}},
			want: want{errs: []string{
				`spec.scheduling.nodeSelector[node-role.kubernetes.io/control-plane]: Invalid value: "node-role.kubernetes.io/control-plane": must not be a node-role.kubernetes.io/ key, which marks control-plane and dedicated nodes, unless policy.scheduling.allowedNodeSelectorKeys names it`,
				`spec.scheduling.tolerations[0].key: Invalid value: "": must be set: a toleration without a key tolerates every taint, the control plane's and dedicated nodes' too (policy.scheduling.allowedTolerationKeys may name the keys claims may tolerate)`,
			}},
		},
		"KeylessExistsWithEffect": {
			reason: "A key-less toleration limited to one effect still tolerates every NoSchedule taint.",
			args:   args{sc: &v1alpha1.Scheduling{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}},
			want: want{errs: []string{
				`spec.scheduling.tolerations[0].key: Invalid value: "": must be set: a toleration without a key tolerates every taint, the control plane's and dedicated nodes' too (policy.scheduling.allowedTolerationKeys may name the keys claims may tolerate)`,
			}},
		},
		"NodeRoleTolerationByDefault": {
			reason: "Tolerating the control plane's taint by name is refused too, at its index.",
			args: args{sc: &v1alpha1.Scheduling{Tolerations: []corev1.Toleration{
				{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule},
				exists("node-role.kubernetes.io/master"),
			}}},
			want: want{errs: []string{
				`spec.scheduling.tolerations[1].key: Invalid value: "node-role.kubernetes.io/master": must not be a node-role.kubernetes.io/ key, which marks control-plane and dedicated nodes, unless policy.scheduling.allowedTolerationKeys names it`,
			}},
		},
		"SystemTaintsByDefault": {
			reason: "Tolerating the taints Kubernetes and cloud providers set (cordoned, unreachable, system pools) is refused too; their node labels stay selectable.",
			args: args{sc: &v1alpha1.Scheduling{
				NodeSelector: map[string]string{"node.kubernetes.io/instance-type": "m5.large"},
				Tolerations: []corev1.Toleration{
					exists("node.kubernetes.io/unschedulable"),
					{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
					exists("node.cloudprovider.kubernetes.io/uninitialized"),
					exists("CriticalAddonsOnly"),
				},
			}},
			want: want{errs: []string{
				`spec.scheduling.tolerations[0].key: Invalid value: "node.kubernetes.io/unschedulable": must not be a node.kubernetes.io/ taint, which Kubernetes sets on cordoned, unreachable or unready nodes, unless policy.scheduling.allowedTolerationKeys names it`,
				`spec.scheduling.tolerations[1].key: Invalid value: "node.kubernetes.io/unreachable": must not be a node.kubernetes.io/ taint, which Kubernetes sets on cordoned, unreachable or unready nodes, unless policy.scheduling.allowedTolerationKeys names it`,
				`spec.scheduling.tolerations[2].key: Invalid value: "node.cloudprovider.kubernetes.io/uninitialized": must not be a node.cloudprovider.kubernetes.io/ taint, which Kubernetes sets on cordoned, unreachable or unready nodes, unless policy.scheduling.allowedTolerationKeys names it`,
				`spec.scheduling.tolerations[3].key: Invalid value: "CriticalAddonsOnly": must not be CriticalAddonsOnly, the taint of system node pools, unless policy.scheduling.allowedTolerationKeys names it`,
			}},
		},
		"OtherKeysByDefault": {
			reason: "Without a policy, keys of the platform's own pools still work as before.",
			args: args{sc: &v1alpha1.Scheduling{
				NodeSelector: map[string]string{"pool": "cache", "node-role.example.com/cache": ""},
				Tolerations:  []corev1.Toleration{exists("dedicated")},
			}},
			want: want{scheduling: &render.Scheduling{
				NodeSelector: map[string]string{"pool": "cache", "node-role.example.com/cache": ""},
				Tolerations:  []corev1.Toleration{exists("dedicated")},
			}},
		},
		"PolicyAllowsListed": {
			reason: "A platform that hands out its cache nodes, node-role keys included, lists them.",
			args: args{
				sc: &v1alpha1.Scheduling{
					NodeSelector: map[string]string{"node-role.kubernetes.io/cache": ""},
					Tolerations:  []corev1.Toleration{exists("node-role.kubernetes.io/cache")},
				},
				in: policy([]string{"node-role.kubernetes.io/cache"}, []string{"node-role.kubernetes.io/cache", "pool"}),
			},
			want: want{scheduling: &render.Scheduling{
				NodeSelector: map[string]string{"node-role.kubernetes.io/cache": ""},
				Tolerations:  []corev1.Toleration{exists("node-role.kubernetes.io/cache")},
			}},
		},
		"PolicyRefusesUnlisted": {
			reason: "With a policy only the listed keys are allowed; a key-less toleration never is.",
			args: args{
				sc: &v1alpha1.Scheduling{
					NodeSelector: map[string]string{"disk": "ssd", "pool": "cache"},
					Tolerations:  []corev1.Toleration{exists("gpu"), {Operator: corev1.TolerationOpExists}, exists("dedicated")},
				},
				in: policy([]string{"dedicated"}, []string{"pool"}),
			},
			want: want{errs: []string{
				`spec.scheduling.nodeSelector[disk]: Invalid value: "disk": must be one of pool (policy.scheduling.allowedNodeSelectorKeys)`,
				`spec.scheduling.tolerations[0].key: Invalid value: "gpu": must be one of dedicated (policy.scheduling.allowedTolerationKeys)`,
				`spec.scheduling.tolerations[1].key: Invalid value: "": must be one of dedicated (policy.scheduling.allowedTolerationKeys)`,
			}},
		},
		"PolicyEmptyAllowsNone": {
			reason: "An empty list lets no claim tolerate a taint or select nodes.",
			args: args{
				sc: &v1alpha1.Scheduling{NodeSelector: map[string]string{"pool": "cache"}, Tolerations: []corev1.Toleration{exists("dedicated")}},
				in: policy([]string{}, []string{}),
			},
			want: want{errs: []string{
				`spec.scheduling.nodeSelector[pool]: Invalid value: "pool": must not be set: policy.scheduling.allowedNodeSelectorKeys allows no key`,
				`spec.scheduling.tolerations[0].key: Invalid value: "dedicated": must not be set: policy.scheduling.allowedTolerationKeys allows no key`,
			}},
		},
		"PolicyEmptyStillAllowsPriorityClass": {
			reason: "A scheduling policy on keys leaves a claim without selector or tolerations alone.",
			args:   args{sc: &v1alpha1.Scheduling{PriorityClassName: "cache"}, in: policy([]string{}, []string{})},
			want:   want{scheduling: &render.Scheduling{PriorityClassName: "cache"}},
		},
		"MalformedKeyReportedOnce": {
			reason: "A key that is not a key at all is reported as such, not a second time against the policy.",
			args: args{sc: &v1alpha1.Scheduling{
				NodeSelector: map[string]string{"node-role.kubernetes.io/": ""},
				Tolerations:  []corev1.Toleration{{Key: "node-role.kubernetes.io/", Operator: corev1.TolerationOpExists}},
			}},
			want: want{errs: []string{
				`spec.scheduling.nodeSelector[node-role.kubernetes.io/]: Invalid value: "node-role.kubernetes.io/": must be a label key: name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`spec.scheduling.tolerations[0].key: Invalid value: "node-role.kubernetes.io/": must be a taint key: name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSettings(tc.args.in)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := Memcached(field.NewPath("spec"), v1alpha1.MemcachedSpec{Scheduling: tc.args.sc}, "sessions", "team-a", s)
			if diff := cmp.Diff(tc.want.errs, messages(errs)); diff != "" {
				t.Errorf("%s\nMemcached(...) errors: -want, +got:\n%s", tc.reason, diff)
			}
			if len(tc.want.errs) > 0 {
				return
			}
			if diff := cmp.Diff(tc.want.scheduling, got.Scheduling); diff != "" {
				t.Errorf("%s\nMemcached(...).Scheduling: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNewSettingsScheduling(t *testing.T) {
	checkNewSettings(t, map[string]settingsCase{
		"ListedKeys": {
			reason: "Keys, node-role ones included, are the platform's to hand out.",
			in: &v1beta1.Input{Policy: v1beta1.Policy{Scheduling: v1beta1.SchedulingPolicy{
				AllowedTolerationKeys: []string{"node-role.kubernetes.io/cache"}, AllowedNodeSelectorKeys: []string{"pool"},
			}}},
		},
		"BadKeys": {
			reason: "A listed key no node could carry is the platform's mistake, named by Input field and index.",
			in: &v1beta1.Input{Policy: v1beta1.Policy{Scheduling: v1beta1.SchedulingPolicy{
				AllowedTolerationKeys: []string{"dedicated", ""}, AllowedNodeSelectorKeys: []string{"disk type"},
			}}},
			want: `invalid function Input: [policy.scheduling.allowedTolerationKeys[1]: Invalid value: "": must be a label key: name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), policy.scheduling.allowedNodeSelectorKeys[0]: Invalid value: "disk type": must be a label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]`,
		},
	})
}
