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
)

func TestFlags(t *testing.T) {
	type want struct {
		cli cli
		err string
	}
	defaults := cli{LeaderElectionNamespace: "crossplane-system", Sync: time.Hour, Poll: time.Minute, PollStateMetric: 5 * time.Second, MaxReconcileRate: 10, MetricsBindAddress: ":8080"}
	cases := map[string]struct {
		reason string
		args   []string
		want   want
	}{
		"Defaults": {
			reason: "Without flags the provider polls every minute and resyncs every hour, like other Crossplane providers.",
			want:   want{cli: defaults},
		},
		"Flags": {
			reason: "Every conventional provider flag is accepted.",
			args:   []string{"--debug", "--leader-election", "--poll=30s", "--sync=10m", "--max-reconcile-rate=50", "--metrics-bind-address=:9090", "--profile=127.0.0.1:6060"},
			want: want{cli: cli{
				Debug: true, LeaderElection: true, LeaderElectionNamespace: "crossplane-system", Sync: 10 * time.Minute, Poll: 30 * time.Second,
				PollStateMetric: 5 * time.Second, MaxReconcileRate: 50, MetricsBindAddress: ":9090", Profile: "127.0.0.1:6060",
			}},
		},
		"ZeroRate": {
			reason: "A reconcile rate of zero would stall every controller.",
			args:   []string{"--max-reconcile-rate=0"},
			want:   want{cli: cli{}, err: "--max-reconcile-rate must be at least 1, not 0"},
		},
		"ZeroPoll": {
			reason: "A zero poll interval is refused rather than busy-looping.",
			args:   []string{"--poll=0s"},
			want:   want{cli: cli{}, err: "--poll and --sync must be positive durations"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Crossplane sets these in a provider's pod; the test wants the flags alone.
			for _, env := range []string{"POD_NAMESPACE", "LEADER_ELECTION"} {
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
