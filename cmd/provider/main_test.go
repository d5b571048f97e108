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
	"github.com/example/function-memcached/internal/clients/cluster"
	"github.com/example/function-memcached/internal/controller/instance"
)

func TestFlags(t *testing.T) {
	type want struct {
		cli cli
		err string
	}
	defaults := cli{
		LeaderElectionNamespace: "crossplane-system", Sync: time.Hour, Poll: time.Minute, SettledPoll: 10 * time.Minute, PollStateMetric: 5 * time.Second, MaxReconcileRate: 10, MetricsBindAddress: ":8080",
		MinPoll: 10 * time.Second, MaxTargetObjects: 2048, MaxTargetMemoryMB: 16, MaxTenantMemoryMB: 32, MaxTargetNamespaces: 8, MaxTargetReconciles: 2, TargetWakeRate: 2, TargetIdle: 10 * time.Minute,
	}
	with := func(f func(*cli)) cli { c := defaults; f(&c); return c }
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
			want: want{cli: with(func(c *cli) {
				c.Debug, c.LeaderElection, c.Sync, c.Poll, c.SettledPoll = true, true, 10*time.Minute, 30*time.Second, 5*time.Minute
				c.MaxReconcileRate, c.MetricsBindAddress, c.Profile = 50, ":9090", "127.0.0.1:6060"
			})},
		},
		"AllowBuiltinPolicy": {
			reason: "Instances get the built-in policy without a labelled Composition only when the operator says so.",
			args:   []string{"--allow-builtin-policy"},
			want:   want{cli: with(func(c *cli) { c.AllowBuiltinPolicy = true })},
		},
		"Limits": {
			reason: "Every bound on what one Instance or target cluster may take of the shared provider can be set.",
			args: []string{"--min-poll=30s", "--max-target-objects=500", "--max-target-memory-mb=64", "--max-tenant-memory-mb=128", "--max-target-namespaces=3",
				"--max-target-reconciles=4", "--target-wake-rate=0.5", "--target-idle=1h"},
			want: want{cli: with(func(c *cli) {
				c.MinPoll, c.MaxTargetObjects, c.MaxTargetMemoryMB, c.MaxTenantMemoryMB = 30*time.Second, 500, 64, 128
				c.MaxTargetNamespaces, c.MaxTargetReconciles, c.TargetWakeRate, c.TargetIdle = 3, 4, 0.5, time.Hour
			})},
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
		"ZeroMinPoll": {
			reason: "A zero floor would let an Instance's poll-interval annotation take most of the reconciles again.",
			args:   []string{"--min-poll=0s"},
			want:   want{cli: cli{}, err: "--min-poll and --target-idle must be positive durations"},
		},
		"ZeroTargetIdle": {
			reason: "A connection closed as soon as it is idle would be made again at every reconcile.",
			args:   []string{"--target-idle=0s"},
			want:   want{cli: cli{}, err: "--min-poll and --target-idle must be positive durations"},
		},
		"ZeroTargetObjects": {
			reason: "A bound of zero objects would refuse every target cluster.",
			args:   []string{"--max-target-objects=0"},
			want:   want{cli: cli{}, err: "--max-target-objects must be at least 1, not 0"},
		},
		"NegativeTargetMemory": {
			reason: "A negative memory bound would refuse every target cluster.",
			args:   []string{"--max-target-memory-mb=-1"},
			want:   want{cli: cli{}, err: "--max-target-memory-mb must be at least 1, not -1"},
		},
		"ZeroTenantMemory": {
			reason: "A tenant memory bound of zero would refuse every namespaced ProviderConfig.",
			args:   []string{"--max-tenant-memory-mb=0"},
			want:   want{cli: cli{}, err: "--max-tenant-memory-mb must be at least 1, not 0"},
		},
		"ZeroTargetNamespaces": {
			reason: "A namespaced ProviderConfig that may watch no namespace could serve no Instance.",
			args:   []string{"--max-target-namespaces=0"},
			want:   want{cli: cli{}, err: "--max-target-namespaces must be at least 1, not 0"},
		},
		"ZeroTargetReconciles": {
			reason: "No reconcile at a time would stall every Instance.",
			args:   []string{"--max-target-reconciles=0"},
			want:   want{cli: cli{}, err: "--max-target-reconciles must be at least 1, not 0"},
		},
		"ZeroWakeRate": {
			reason: "A wake rate of zero would stop target clusters' watches from waking any Instance.",
			args:   []string{"--target-wake-rate=0"},
			want:   want{cli: cli{}, err: "--target-wake-rate must be positive, not 0"},
		},
		"NaNWakeRate": {
			reason: "A wake rate that is not a number is refused, not compared as if it were one.",
			args:   []string{"--target-wake-rate=NaN"},
			want:   want{cli: cli{}, err: "--target-wake-rate must be positive, not NaN"},
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

func TestInstanceOptions(t *testing.T) {
	// The flags' defaults are the target clusters' default limits, and reach the Instance
	// controller as they were given (memory in MiB).
	type want struct {
		o instance.Options
	}
	defaults := instance.Options{Namespace: "crossplane-system", Settled: 10 * time.Minute, MinPoll: 10 * time.Second, Targets: cluster.DefaultLimits()}
	cases := map[string]struct {
		reason string
		args   []string
		want   want
	}{
		"Defaults": {
			reason: "Without flags the Instance controller gets cluster.DefaultLimits and a 10s floor.",
			want:   want{o: defaults},
		},
		"Flags": {
			reason: "Each flag sets its limit, the memory ones in MiB.",
			args: []string{"--leader-election-namespace=provider", "--settled-poll=5m", "--min-poll=30s", "--max-target-objects=500", "--max-target-memory-mb=64",
				"--max-tenant-memory-mb=128", "--max-target-namespaces=3", "--max-target-reconciles=4", "--target-wake-rate=0.5", "--target-idle=1h"},
			want: want{o: instance.Options{Namespace: "provider", Settled: 5 * time.Minute, MinPoll: 30 * time.Second, Targets: cluster.Limits{
				Objects: 500, ConfigMemory: 64 << 20, TenantMemory: 128 << 20, Namespaces: 3, Reconciles: 4, WakeRate: 0.5, Idle: time.Hour,
			}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, env := range []string{"POD_NAMESPACE", "LEADER_ELECTION", "ALLOW_BUILTIN_POLICY"} {
				t.Setenv(env, "")
				os.Unsetenv(env)
			}
			var c cli
			p, err := kong.New(&c)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, want{o: c.instanceOptions()}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\ninstanceOptions() after Parse(%v): -want, +got:\n%s", tc.reason, tc.args, diff)
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
