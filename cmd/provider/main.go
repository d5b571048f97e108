// Command provider runs the Memcached provider: the controllers that run Memcached
// Instances in other clusters. It only wires flags to a controller-runtime manager;
// everything it runs lives in internal/controller.
package main

import (
	"context"
	"io"
	"time"

	"github.com/alecthomas/kong"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/cluster"
	memcached "github.com/example/function-memcached/internal/controller"
	"github.com/example/function-memcached/internal/controller/instance"
)

// cli holds the flags Crossplane providers conventionally take. Crossplane's package
// manager sets the environment variables.
type cli struct {
	Debug                   bool          `short:"d" help:"Run with debug logging (and controller-runtime's own logs)."`
	LeaderElection          bool          `short:"l" help:"Use leader election, so that only one replica reconciles at a time." env:"LEADER_ELECTION"`
	LeaderElectionNamespace string        `help:"The provider's own namespace: where its leader election lease lives, and a control-plane namespace no Instance may place objects in through InjectedIdentity unless a ClusterProviderConfig lists it." default:"crossplane-system" env:"POD_NAMESPACE"`
	Sync                    time.Duration `short:"s" help:"How often every watched object is re-listed from the API server, re-checking all of them for drift." default:"1h"`
	Poll                    time.Duration `help:"How often each Instance that has not settled (not Available, not synced) is checked against what the provider's watches of its target cluster hold (a safety net: changes there wake it at once), how often each watch is renewed (re-checking the credentials), and the longest backoff of an Instance that cannot be reconciled." default:"1m"`
	SettledPoll             time.Duration `help:"How often each Instance that is Available and synced is checked (a safety net: every change it is judged by wakes it at once). Never shorter than --poll." default:"10m"`
	PollStateMetric         time.Duration `help:"How often the managed resource state metrics are recorded." default:"5s"`
	MaxReconcileRate        int           `help:"The most reconciles per second, across all controllers; also the number of concurrent reconciles." default:"10"`
	MetricsBindAddress      string        `help:"Address to serve Prometheus metrics on; 0 disables them." default:":8080"`
	Profile                 string        `help:"Serve runtime profiling data (pprof) at /debug/pprof on this address, e.g. 127.0.0.1:6060; empty serves none." placeholder:"host:port"`
	AllowBuiltinPolicy      bool          `help:"Let Instances use the built-in policy (any registry, any ProviderConfig) when no Composition is labelled memcached.example.com/instance-policy=true. Without it such Instances are refused." env:"ALLOW_BUILTIN_POLICY"`

	// Tenants share the provider: these bound what one Instance or one target cluster can
	// take of it. Their defaults are cluster.DefaultLimits' (TestInstanceOptions).
	MinPoll             time.Duration `help:"The shortest crossplane.io/poll-interval an Instance may ask for (shorter ones are raised to it), so that a few Instances cannot take most of the reconciles." default:"10s"`
	MaxTargetObjects    int           `help:"The most objects of one resource in one target namespace the provider lists and watches, so that one target cluster cannot fill the provider's memory." default:"2048"`
	MaxTargetMemoryMB   int64         `name:"max-target-memory-mb" help:"The memory, in MiB, the watches of one namespaced ProviderConfig's target cluster may hold (estimated from what they read; half of it bounds each answer read directly), so that one target cluster cannot take the provider's." default:"16"`
	MaxTenantMemoryMB   int64         `name:"max-tenant-memory-mb" help:"The memory, in MiB, the watches of all the namespaced ProviderConfigs of one namespace may hold together, so that more ProviderConfigs do not give a tenant more." default:"32"`
	MaxTargetNamespaces int           `help:"The most target namespaces the namespaced ProviderConfigs of one namespace watch at once, together, so that one tenant's watches stay bounded however many ProviderConfigs it writes." default:"8"`
	MaxTargetReconciles int           `help:"The most reconciles that use the namespaced ProviderConfigs of one namespace at once, so that a slow target cluster a tenant runs cannot hold every reconcile (a ClusterProviderConfig's is not limited)." default:"2"`
	TargetWakeRate      float64       `help:"How many Instances per second, on average, the watches of the namespaced ProviderConfigs of one namespace may wake (more wait, merged), so that a target cluster a tenant runs cannot flood the reconciles (a ClusterProviderConfig's is not limited)." default:"2"`
	TargetIdle          time.Duration `help:"How long a connection to a target cluster no Instance uses is kept before it is closed, so that unused ones hold no watches or memory." default:"10m"`
}

// Validate rejects flag values that would stall the controllers rather than run them.
func (c *cli) Validate() error {
	if c.MaxReconcileRate < 1 {
		return errors.Errorf("--max-reconcile-rate must be at least 1, not %d", c.MaxReconcileRate)
	}
	if c.Poll <= 0 || c.Sync <= 0 || c.SettledPoll <= 0 {
		return errors.New("--poll, --settled-poll and --sync must be positive durations")
	}
	if c.MinPoll <= 0 || c.TargetIdle <= 0 {
		return errors.New("--min-poll and --target-idle must be positive durations")
	}
	// A limit of zero would refuse every target cluster rather than bound it.
	for _, l := range []struct {
		flag  string
		value int64
	}{
		{flag: "--max-target-objects", value: int64(c.MaxTargetObjects)},
		{flag: "--max-target-memory-mb", value: c.MaxTargetMemoryMB},
		{flag: "--max-tenant-memory-mb", value: c.MaxTenantMemoryMB},
		{flag: "--max-target-namespaces", value: int64(c.MaxTargetNamespaces)},
		{flag: "--max-target-reconciles", value: int64(c.MaxTargetReconciles)},
	} {
		if l.value < 1 {
			return errors.Errorf("%s must be at least 1, not %d", l.flag, l.value)
		}
	}
	if !(c.TargetWakeRate > 0) {
		return errors.Errorf("--target-wake-rate must be positive, not %v", c.TargetWakeRate)
	}
	return nil
}

// instanceOptions are the Instance controller's settings the flags give.
func (c *cli) instanceOptions() instance.Options {
	return instance.Options{
		Namespace: c.LeaderElectionNamespace,
		Settled:   c.SettledPoll,
		MinPoll:   c.MinPoll,
		Targets: cluster.Limits{
			Objects:      c.MaxTargetObjects,
			ConfigMemory: c.MaxTargetMemoryMB << 20,
			TenantMemory: c.MaxTenantMemoryMB << 20,
			Namespaces:   c.MaxTargetNamespaces,
			Reconciles:   c.MaxTargetReconciles,
			WakeRate:     c.TargetWakeRate,
			Idle:         c.TargetIdle,
		},
	}
}

// Run starts the manager and blocks until SIGTERM or SIGINT.
func (c *cli) Run() error {
	zl := zap.New(zap.UseDevMode(c.Debug))
	log := logging.NewLogrLogger(zl.WithName("provider-memcached"))
	if c.Debug {
		// controller-runtime is verbose even at info level: give it a logger only when
		// debugging, and a silent one otherwise so that it does not warn about having none.
		ctrl.SetLogger(zl)
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return errors.Wrap(err, "cannot get the API server's REST config")
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ratelimiter.LimitRESTConfig(cfg, c.MaxReconcileRate), managerOptions(c, scheme))
	if err != nil {
		return errors.Wrap(err, "cannot create the controller manager")
	}

	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	metrics.Registry.MustRegister(mrMetrics, stateMetrics, cluster.Requests)

	o := controller.Options{
		Logger:                  log,
		MaxConcurrentReconciles: c.MaxReconcileRate,
		PollInterval:            c.Poll,
		GlobalRateLimiter:       ratelimiter.NewGlobal(c.MaxReconcileRate),
		Features:                c.features(),
		MetricOptions: &controller.MetricOptions{
			PollStateMetricInterval: c.PollStateMetric,
			MRMetrics:               mrMetrics,
			MRStateMetrics:          stateMetrics,
		},
	}
	ctx, stop := context.WithCancelCause(ctrl.SetupSignalHandler())
	defer stop(nil)
	gated, err := canWatchCRDs(ctx, mgr.GetClient())
	if err != nil {
		return err
	}
	if gated {
		// safe-start: Crossplane runs the provider once the Instance is activated, and may
		// create its CRD after the provider starts; each controller starts once its kinds are
		// served.
		o.Gate = new(gate.Gate[schema.GroupVersionKind])
		if err := customresourcesgate.Setup(mgr, controller.Options{Logger: log, Gate: o.Gate, MaxConcurrentReconciles: 1}); err != nil {
			return errors.Wrap(err, "cannot set up the CRD gate")
		}
		err = memcached.SetupGated(mgr, o, c.instanceOptions(), func(err error) { stop(err) })
	} else {
		log.Info("Cannot get, list and watch CustomResourceDefinitions: starting every controller now, so the provider's kinds must be served already")
		err = memcached.Setup(mgr, o, c.instanceOptions())
	}
	if err != nil {
		return errors.Wrap(err, "cannot set up the Memcached controllers")
	}
	log.Info("Starting the Memcached provider", "gated-on-crds", gated, "poll", c.Poll, "settled-poll", c.SettledPoll, "sync", c.Sync, "max-reconcile-rate", c.MaxReconcileRate, "allow-builtin-policy", c.AllowBuiltinPolicy,
		"min-poll", c.MinPoll, "max-target-objects", c.MaxTargetObjects, "max-target-memory-mb", c.MaxTargetMemoryMB, "max-tenant-memory-mb", c.MaxTenantMemoryMB,
		"max-target-namespaces", c.MaxTargetNamespaces, "max-target-reconciles", c.MaxTargetReconciles, "target-wake-rate", c.TargetWakeRate, "target-idle", c.TargetIdle)
	err = mgr.Start(ctx)
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return errors.Wrap(err, "cannot run the controller manager")
}

// canWatchCRDs asks the API server whether the provider may get, list and watch
// CustomResourceDefinitions, which the CRD gate needs: Crossplane's RBAC manager grants it to
// a provider that declares safe-start.
func canWatchCRDs(ctx context.Context, c client.Client) (bool, error) {
	for _, verb := range []string{"get", "list", "watch"} {
		r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions", Verb: verb},
		}}
		if err := c.Create(ctx, r); err != nil {
			return false, errors.Wrapf(err, "cannot ask whether the provider may %s CustomResourceDefinitions", verb)
		}
		if !r.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// features are the controllers' feature flags the provider's flags enable.
func (c *cli) features() *feature.Flags {
	f := &feature.Flags{}
	if c.AllowBuiltinPolicy {
		f.Enable(instance.FeatureBuiltinPolicy)
	}
	return f
}

// newScheme knows the provider's kinds and the built-in ones it reads and writes in the
// control plane: Secrets, events and leases, and CustomResourceDefinitions, which the CRD gate
// watches.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, errors.Wrap(err, "cannot add Kubernetes APIs to the scheme")
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, errors.Wrap(err, "cannot add CustomResourceDefinitions to the scheme")
	}
	return s, errors.Wrap(v1alpha1.AddToScheme(s), "cannot add the Memcached provider APIs to the scheme")
}

// managerOptions turns the flags into the manager's options.
func managerOptions(c *cli, s *runtime.Scheme) ctrl.Options {
	return ctrl.Options{
		Scheme: s,
		Cache: cache.Options{SyncPeriod: &c.Sync, ByObject: map[client.Object]cache.ByObject{
			// The CRD gate reads only names, versions and conditions: the schemas of every
			// CRD of the control plane would be most of the provider's memory.
			&apiextensionsv1.CustomResourceDefinition{}: {Transform: customresourcesgate.TransformStripCRDSchema},
		}},
		Metrics: metricsserver.Options{BindAddress: c.MetricsBindAddress},
		// Off unless asked for: profiles show how the provider spends its time under load.
		PprofBindAddress: c.Profile,
		// Secrets are read when an Instance connects, a few at a time: reading them directly
		// spares the provider a cache (and a watch) of every Secret in the cluster.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},

		// Leases only, with long leases: renewals that miss their deadline under load
		// otherwise cost the leadership, as other Crossplane providers have found.
		LeaderElection:             c.LeaderElection,
		LeaderElectionID:           "crossplane-leader-election-provider-memcached",
		LeaderElectionNamespace:    c.LeaderElectionNamespace,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaseDuration:              ptr.To(60 * time.Second),
		RenewDeadline:              ptr.To(50 * time.Second),
	}
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("A Crossplane provider that runs Memcached in other clusters."))
	ctx.FatalIfErrorf(ctx.Run())
}
