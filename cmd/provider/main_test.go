package main

import (
	"os"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/controller/instance"
)

func TestFlags(t *testing.T) {
	type want struct {
		cli cli
		err string
	}
	defaults := cli{LeaderElectionNamespace: "crossplane-system", Sync: time.Hour, Poll: time.Minute, SettledPoll: 10 * time.Minute, PollStateMetric: 5 * time.Second, MaxReconcileRate: 10, MetricsBindAddress: ":8080"}
	cases := map[string]struct {
		reason string
		args   []string
		want   want
	}{
		"Defaults": {
			reason: "Without flags the provider polls every minute (every ten once an Instance has settled) and resyncs every hour, like other Crossplane providers.",
			want:   want{cli: defaults},
		},
		"Flags": {
			reason: "Every conventional provider flag is accepted.",
			args:   []string{"--debug", "--leader-election", "--poll=30s", "--settled-poll=5m", "--sync=10m", "--max-reconcile-rate=50", "--metrics-bind-address=:9090", "--profile=127.0.0.1:6060"},
			want: want{cli: cli{
				Debug: true, LeaderElection: true, LeaderElectionNamespace: "crossplane-system", Sync: 10 * time.Minute, Poll: 30 * time.Second, SettledPoll: 5 * time.Minute,
				PollStateMetric: 5 * time.Second, MaxReconcileRate: 50, MetricsBindAddress: ":9090", Profile: "127.0.0.1:6060",
			}},
		},
		"AllowBuiltinPolicy": {
			reason: "Instances get the built-in policy without a labelled Composition only when the operator says so.",
			args:   []string{"--allow-builtin-policy"},
			want:   want{cli: func() cli { c := defaults; c.AllowBuiltinPolicy = true; return c }()},
		},
		"ZeroRate": {
			reason: "A reconcile rate of zero would stall every controller.",
			args:   []string{"--max-reconcile-rate=0"},
			want:   want{cli: cli{}, err: "--max-reconcile-rate must be at least 1, not 0"},
		},
		"ZeroPoll": {
			reason: "A zero poll interval is refused rather than busy-looping.",
			args:   []string{"--poll=0s"},
			want:   want{cli: cli{}, err: "--poll, --settled-poll and --sync must be positive durations"},
		},
		"ZeroSettledPoll": {
			reason: "A zero settled poll interval is refused rather than busy-looping.",
			args:   []string{"--settled-poll=0s"},
			want:   want{cli: cli{}, err: "--poll, --settled-poll and --sync must be positive durations"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Crossplane sets these in a provider's pod; the test wants the flags alone.
			for _, env := range []string{"POD_NAMESPACE", "LEADER_ELECTION", "ALLOW_BUILTIN_POLICY"} {
				t.Setenv(env, "")
				os.Unsetenv(env)
			}
			var c cli
			p, err := kong.New(&c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Parse(tc.args)
			got := want{cli: c}
			if err != nil {
				got = want{err: err.Error()}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nParse(%v): -want, +got:\n%s", tc.reason, tc.args, diff)
			}
		})
	}
}

func TestFeatures(t *testing.T) {
	// The policy fails closed unless --allow-builtin-policy is given.
	for _, allow := range []bool{false, true} {
		if got := (&cli{AllowBuiltinPolicy: allow}).features().Enabled(instance.FeatureBuiltinPolicy); got != allow {
			t.Errorf("--allow-builtin-policy=%v: the built-in policy feature is enabled: %v", allow, got)
		}
	}
}

func TestManagerOptions(t *testing.T) {
	s, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	// The provider's kinds, and the Secrets credentials live in.
	for _, o := range []runtime.Object{&v1alpha1.Instance{}, &v1alpha1.ClusterProviderConfig{}, &corev1.Secret{}} {
		if _, _, err := s.ObjectKinds(o); err != nil {
			t.Errorf("newScheme() does not know %T: %v", o, err)
		}
	}
	c := &cli{Sync: time.Hour, LeaderElection: true, LeaderElectionNamespace: "crossplane-system", MetricsBindAddress: ":8080", Profile: "127.0.0.1:6060"}
	o := managerOptions(c, s)
	if *o.Cache.SyncPeriod != time.Hour || !o.LeaderElection || o.LeaderElectionNamespace != "crossplane-system" || o.Metrics.BindAddress != ":8080" || o.PprofBindAddress != "127.0.0.1:6060" {
		t.Errorf("managerOptions(...) = %+v, does not follow the flags", o)
	}
	if len(o.Client.Cache.DisableFor) != 1 {
		t.Errorf("managerOptions(...) caches Secrets; want them read directly")
	}
}
