// Package instance is the Instance controller: crossplane-runtime's managed reconciler
// around an external client whose "external system" is another Kubernetes cluster. It
// resolves an Instance like the composition function resolves a claim (with the platform's
// policy, read from the Composition that carries it), renders the same objects (managedKinds:
// Deployment, Service, PodDisruptionBudget, NetworkPolicy, auth Secret, TLS pair's copy) with
// package render, server-side applies them to the target
// cluster and judges them with package readiness, so a Memcached looks and reports the same
// whichever way it was asked for.
//
// It is built to share target clusters between many teams: it only ever applies over or
// deletes objects labelled with the Instance's UID (or adopted on request), each Instance
// applies with a field manager of its own, a ClusterProviderConfig serves only the
// namespaces and target namespaces it allows, and the connections to target clusters are
// shared and watched (package cluster) so that an idle provider sends nothing per Instance.
//
// The managed reconciler decides when to create, update and delete (and honours
// managementPolicies: without Delete, deleting the Instance leaves everything running);
// this package only answers its questions about the target cluster.
package instance

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/cluster"
	"github.com/example/function-memcached/internal/clients/kubeconfig"
	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/resolve"
)

// Timeouts of the provider's requests to target clusters.
const (
	// RequestTimeout bounds each read, apply and delete.
	RequestTimeout = 10 * time.Second
	// SyncTimeout bounds the first listing of a target namespace's watches.
	SyncTimeout = 10 * time.Second
	// controlPlaneTimeout bounds the wait for the provider's caches of Compositions and
	// namespaces in the control plane, which never fill when the provider may not read them.
	controlPlaneTimeout = 10 * time.Second
)

// instanceMemoSize bounds each memo the provider keeps per Instance (Transitions, Drifts,
// Expiries, UnchangedStatus). It is far above the Instances one provider serves, so that an
// Instance that is reconciled is never evicted in practice, and it is a bound so that the
// entries of Instances that went without being forgotten (let go under managementPolicies
// without Delete, which the managed reconciler does without observing them, or whose
// finalizer was removed by hand) cannot pile up for the life of the process. An evicted
// entry only costs work (each memo says which), never a wrong answer.
const instanceMemoSize = 1 << 16 // 65,536

// FeatureBuiltinPolicy, enabled by the provider's --allow-builtin-policy, lets Instances use
// the built-in policy (any registry, any ProviderConfig) when no Composition is labelled
// memcached.example.com/instance-policy=true. Without it they are refused: the policy
// fails closed.
const FeatureBuiltinPolicy feature.Flag = "AllowBuiltinPolicy"

// Options are the Instance controller's settings beyond crossplane-runtime's.
type Options struct {
	// Namespace is the provider's own namespace in the control plane.
	Namespace string
	// Settled is how often an Instance that has settled is polled (PollIntervalHook).
	Settled time.Duration
	// MinPoll is the shortest poll interval an Instance's crossplane.io/poll-interval
	// annotation may ask for.
	MinPoll time.Duration
	// Targets bound what one target cluster can make the provider hold or wait for.
	Targets cluster.Limits
}

// Setup adds the Instance controller to mgr.
func Setup(mgr ctrl.Manager, o controller.Options, io Options) error {
	namespace := io.Namespace
	name := managed.ControllerName(v1alpha1.InstanceGroupKind)

	// Watches of target clusters, changed credentials and what the control plane says of
	// Instances wake them through the controller's queue.
	wakes := &Wakes{}
	wake := wakes.Wake
	clusters := cluster.NewClusters(cluster.Options{
		RequestTimeout: RequestTimeout,
		WatchTimeout:   o.PollInterval,
		SyncTimeout:    SyncTimeout,
		Kinds:          WatchedObjects(),
		Wake:           wake,
		Limits:         io.Targets,
	})
	if err := watchSecrets(mgr, clusters, wake); err != nil {
		return err
	}
	if err := watchControlPlane(mgr, wake); err != nil {
		return err
	}

	// Connections no Instance uses are closed after io.Targets.Idle.
	if err := mgr.Add(clusters); err != nil {
		return errors.Wrap(err, "cannot add the sweep of idle target connections")
	}
	recorder := event.NewAPIRecorder(mgr.GetEventRecorderFor(name)) //nolint:staticcheck // crossplane-runtime's recorder still takes the legacy events API.
	opts := append(ReconcilerOptions(&Connector{
		Kube:     mgr.GetClient(),
		Metadata: mgr.GetCache(),
		Usage:    resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1alpha1.ProviderConfigUsage{}),
		Identity: mgr.GetConfig(),
		Clusters: func(k cluster.Key, version string, secret types.NamespacedName, config func() (*rest.Config, error)) (Target, error) {
			c, err := clusters.Get(k, version, secret, config)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		Drop:        clusters.Drop,
		Policy:      &Policy{Kube: mgr.GetCache(), Builtin: o.Features.Enabled(FeatureBuiltinPolicy)},
		Tenancy:     Tenancy{Metadata: mgr.GetCache(), ControlPlaneNamespaces: []string{namespace}},
		Recorder:    recorder,
		Transitions: NewTransitions(),
		Drifts:      NewDrifts(),
		Credentials: credentials.NewStore(),
		Expiries:    NewExpiries(),
	}, o.PollInterval, io),
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithRecorder(recorder),
	)
	if o.MetricOptions != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
		if o.MetricOptions.MRStateMetrics != nil {
			sr := statemetrics.NewMRStateRecorder(mgr.GetClient(), o.Logger, o.MetricOptions.MRStateMetrics, &v1alpha1.InstanceList{}, o.MetricOptions.PollStateMetricInterval)
			if err := mgr.Add(sr); err != nil {
				return errors.Wrap(err, "cannot add the Instance state metrics recorder")
			}
		}
	}

	r := managed.NewReconciler(withClient{Manager: mgr, client: NewUnchangedStatus(mgr.GetClient())}, resource.ManagedKind(v1alpha1.InstanceGroupVersionKind), opts...)
	co := o.ForControllerRuntime()
	co.RateLimiter = NewBackoff(time.Second, o.PollInterval)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(co).
		For(&v1alpha1.Instance{}, builder.WithPredicates(resource.DesiredStateChanged())).
		WatchesRawSource(wakes.Source()).
		Complete(&Gate{Instances: mgr.GetCache(), Most: io.Targets.Reconciles, Reconciler: ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter)})
}

// watchSecrets wakes the Instances whose connection was made from a Secret that changed or
// went, so that rotated credentials take effect, and deleted ones show, at once, and the
// Instance whose connection Secret (the one it controls) changed or went, so that one
// deleted or edited by hand is published again at once rather than at the next poll. Only
// the Secrets' metadata is watched: the provider reads a Secret's data once per version. The
// watch starts with the manager, whose cache it uses.
func watchSecrets(mgr ctrl.Manager, clusters *cluster.Clusters, wake func(types.NamespacedName)) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return onChange(mgr, m, "Secrets", func(old, s client.Object) {
		if s == nil {
			s = old
		}
		clusters.SecretChanged(types.NamespacedName{Namespace: s.GetNamespace(), Name: s.GetName()})
		if n, ok := ConnectionSecretOwner(s); ok {
			wake(n)
		}
	})
}

// ReconcilerOptions are how the Instance controller uses crossplane-runtime's managed
// reconciler, apart from logging, events and metrics: it polls every poll, or as io's
// Settled and MinPoll say. They are exported so that tests run the same reconciler as the
// provider.
func ReconcilerOptions(c *Connector, poll time.Duration, io Options) []managed.ReconcilerOption {
	return []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[*v1alpha1.Instance](c),
		managed.WithPollInterval(poll),
		// Instances share the reconciles the provider may make: one that asks for a
		// crossplane.io/poll-interval of 1ms would otherwise take most of them.
		managed.WithMinPollInterval(io.MinPoll),
		// managementPolicies are honoured: without Delete (Crossplane v2's replacement
		// for deletionPolicy: Orphan) deleting an Instance leaves its Memcached running.
		managed.WithManagementPolicies(),
		// Names come from forProvider, not from a crossplane.io/external-name annotation,
		// so there is nothing to initialize, and a create that was interrupted can safely be
		// retried under the same names.
		managed.WithInitializers(),
		managed.WithDeterministicExternalName(true),
		// The target is a Kubernetes API server: what Create applied is readable at once,
		// so there is no eventual consistency to wait out (and applying again is harmless).
		managed.WithCreationGracePeriod(0),
		// The provider watches what it owns in target clusters, and what the control plane
		// says of each Instance, so a rollout's progress and changes made by hand wake the
		// Instance: polling is only the safety net, rarer once an Instance has settled.
		managed.WithPollIntervalHook(PollIntervalHook(io.Settled, io.MinPoll, c.Expiries)),
	}
}

// PollIntervalHook is the managed reconciler's poll interval hook. An Instance that is
// Settled is polled every settled (the provider's --settled-poll), or when its TLS
// certificate expires (as expiries remember it) if that is sooner; any other every poll
// (--poll), so that one on its way up keeps reading its pods' reasons. Either is less up to a
// tenth at random, so that Instances created together do not poll together, and neither is
// shorter than poll. The settled poll only re-checks what no watch reports: everything an
// Instance is judged by wakes it when it changes (its target cluster's objects and watches'
// health, its credentials, its policy, its ProviderConfig and usage, its namespace, its
// connection Secret), so a longer one costs nothing but the time to notice a change no watch
// saw. A crossplane.io/poll-interval annotation is honoured, settled or not, but never below
// minPoll (--min-poll; the managed reconciler raises a shorter one to it, and the jitter does
// not take it below), so that no Instance takes most of the reconciles the provider shares.
func PollIntervalHook(settled, minPoll time.Duration, expiries *Expiries) managed.PollIntervalHook {
	return func(mg resource.Managed, poll time.Duration) time.Duration {
		_, annotated := meta.GetPollInterval(mg)
		if !annotated && settled > poll && Settled(mg) {
			next := settled
			if at, ok := expiries.At(mg.GetUID()); ok && time.Until(at)+time.Second < next {
				next = max(time.Until(at)+time.Second, poll)
			}
			poll = next
		}
		next := poll - time.Duration(rand.Int64N(int64(poll)/10+1))
		if annotated {
			next = max(next, min(poll, minPoll))
		}
		return next
	}
}

// Settled reports whether mg is Available and Ready at its current generation, its last
// reconcile succeeded, and it manages what it observes: nothing is on its way, and every
// change that could make it otherwise wakes it. An Instance that only observes is never
// settled: it judges a Deployment it does not own, which carries no label of the
// provider's, so no watch sees it change.
func Settled(mg resource.Managed) bool {
	if i, ok := mg.(*v1alpha1.Instance); !ok || onlyObserves(i) {
		return false
	}
	a := mg.GetCondition(v1alpha1.TypeAvailable)
	return a.Status == corev1.ConditionTrue && a.ObservedGeneration == mg.GetGeneration() &&
		mg.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue &&
		mg.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionTrue
}

// Backoff is the Instance controller's rate limiter for reconciles that failed (the
// target cluster cannot be reached, an apply failed): exponential from base, with jitter (a
// delay between half and all of the exponential one) so that Instances failing together do
// not retry together, capped at max (--poll). A success forgets an Instance's failures.
type Backoff struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[reconcile.Request]int
}

var _ workqueue.TypedRateLimiter[reconcile.Request] = &Backoff{}

// NewBackoff returns a Backoff from base to max.
func NewBackoff(base, max time.Duration) *Backoff {
	return &Backoff{base: base, max: max, failures: map[reconcile.Request]int{}}
}

// When returns how long to wait before retrying r, counting one more failure.
func (b *Backoff) When(r reconcile.Request) time.Duration {
	b.mu.Lock()
	n := b.failures[r]
	b.failures[r] = n + 1
	b.mu.Unlock()
	d := b.max
	if n < 32 && b.base<<n < b.max {
		d = b.base << n
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// Forget forgets r's failures.
func (b *Backoff) Forget(r reconcile.Request) {
	b.mu.Lock()
	delete(b.failures, r)
	b.mu.Unlock()
}

// NumRequeues is how many times r failed in a row.
func (b *Backoff) NumRequeues(r reconcile.Request) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[r]
}

// A Target is what an Instance needs of its target cluster; *cluster.Cluster is one.
type Target interface {
	// Client writes to the target cluster, and reads what the watches do not hold.
	Client() client.Client
	// Watched reads what the provider owns in namespace from watches, registering instance
	// to be woken by changes of what it owns and of the TLS Secret it names (tlsSecret, ""
	// for none); it fails while the namespace cannot be observed.
	Watched(ctx context.Context, namespace string, instance types.NamespacedName, tlsSecret string) (client.Reader, error)
	// Forget stops waking instance for namespace.
	Forget(namespace string, instance types.NamespacedName)
}

// A Connector connects an Instance to its target cluster. Its fields are its dependencies,
// so that tests can replace each one.
type Connector struct {
	// Kube reads (Cluster)ProviderConfigs, from a cache, and credential Secrets, directly.
	Kube client.Client
	// Metadata reads Secrets' versions, from a cache of their metadata.
	Metadata client.Reader
	// Usage records that an Instance uses its ProviderConfig, once it is allowed to and
	// before the config's credentials are read, so that a config in use cannot be deleted.
	Usage resource.ModernTracker
	// Identity is the provider's own configuration, for InjectedIdentity.
	Identity *rest.Config
	// Clusters returns the connection of a config with credentials of a version, making it
	// from config() when there is none (cluster.Clusters.Get).
	Clusters func(k cluster.Key, version string, secret types.NamespacedName, config func() (*rest.Config, error)) (Target, error)
	// Drop forgets the connection of a config whose credentials are gone.
	Drop func(k cluster.Key)
	// Policy is the platform's policy for Instances.
	Policy PolicySource
	// Tenancy decides who may place what where.
	Tenancy Tenancy
	// Recorder records events on Instances.
	Recorder event.Recorder
	// Transitions remember what each Instance last reported.
	Transitions *Transitions
	// Drifts remember the drift each Instance was last judged to have.
	Drifts *Drifts
	// Credentials keep generated credentials until their auth Secret is observed.
	Credentials *credentials.Store
	// Expiries remember when each Instance's TLS certificate expires.
	Expiries *Expiries
}

// Connect reads the Instance's ProviderConfig and the platform's policy, decides whether
// the Instance may use that config to place its objects where it asks, and only then
// records the use and returns an external client of the target cluster, through the
// connection shared by every Instance of that config. An Instance that is refused reads
// nothing of the config's credentials and reaches nothing: it learns that it is not allowed,
// never the config's Secret or the cluster it reaches, and leaves no usage behind that would
// keep the platform from deleting a config it may not use. It contacts the target cluster
// only to make a new connection's first watches of the Instance's namespace (in Observe).
// When the provider cannot connect, the Instance's Available condition says so.
func (c *Connector) Connect(ctx context.Context, cr *v1alpha1.Instance) (managed.TypedExternalClient[*v1alpha1.Instance], error) {
	if cr.GroupVersionKind().Empty() {
		// The usage records the Instance's kind, which a typed object read from an API
		// client that strips type metadata lacks.
		cr.SetGroupVersionKind(v1alpha1.InstanceGroupVersionKind)
	}
	e := &External{Recorder: c.Recorder, Transitions: c.Transitions, Drifts: c.Drifts, Credentials: c.Credentials, Expiries: c.Expiries}
	ref := cr.GetProviderConfigReference()
	cfg, err := kubeconfig.ConfigFor(ctx, c.Kube, cr.GetNamespace(), ref)
	if err != nil {
		return nil, e.unreachable(cr, err)
	}
	if e.Refused, err = c.admit(ctx, cr, ref, cfg, e); err != nil {
		return nil, err
	}
	if len(e.Refused) > 0 {
		if meta.WasDeleted(cr) {
			// Let go without reaching the target cluster; the connection, if there is one,
			// only to stop waking the Instance.
			e.Target, _ = c.target(ctx, cr, ref, cfg)
		}
		return e, nil
	}
	if err := c.Usage.Track(ctx, cr); err != nil {
		return nil, errors.Wrap(err, "cannot track ProviderConfig usage")
	}
	e.Adoption = Adoption{Allowed: cfg.Adoption == v1alpha1.AdoptionAllowed, Config: ref.Kind + " " + ref.Name, Instances: c.Kube}
	if e.Target, err = c.target(ctx, cr, ref, cfg); err != nil {
		return nil, e.unreachable(cr, err)
	}
	return e, nil
}

// admit returns why the Instance may not use cfg (which ref names) to place its objects
// where it asks, and sets e's policy. The policy and namespaces are read from caches that
// never fill when the provider may not read them: the wait is bounded, so that the error
// says so instead of the reconcile timing out. A deleted Instance whose policy cannot be
// read is judged by its config's rules alone: deleting only ever deletes what is the
// Instance's own, and a platform without a policy must still be able to let Instances go.
func (c *Connector) admit(ctx context.Context, cr *v1alpha1.Instance, ref *xpv2.ProviderConfigReference, cfg kubeconfig.Config, e *External) (field.ErrorList, error) {
	pctx, cancel := context.WithTimeout(ctx, controlPlaneTimeout)
	defer cancel()
	var err error
	if e.Settings, err = c.Policy.Settings(pctx); err != nil {
		if !meta.WasDeleted(cr) {
			return nil, err
		}
		e.Settings = resolve.Settings{}
	}
	_, target := remote.Target(cr)
	return c.Tenancy.Admit(pctx, cr, ref, cfg, target, e.Settings)
}

// target returns the connection of the Instance's config, reading the credentials' version
// from metadata and their data only when the version is new.
func (c *Connector) target(ctx context.Context, cr *v1alpha1.Instance, ref *xpv2.ProviderConfigReference, cfg kubeconfig.Config) (Target, error) {
	k := cluster.Key{Kind: ref.Kind, Name: ref.Name}
	if ref.Kind == v1alpha1.ProviderConfigKind {
		k.Namespace = cr.GetNamespace()
	}
	mctx, cancel := context.WithTimeout(ctx, controlPlaneTimeout)
	defer cancel()
	version, err := cfg.Version(mctx, c.Metadata)
	if err != nil {
		if kerrors.IsNotFound(err) {
			c.Drop(k)
		}
		return nil, err
	}
	var secret types.NamespacedName
	if s := cfg.SecretRef; s != nil && cfg.Source == xpv2.CredentialsSourceSecret {
		secret = types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	}
	return c.Clusters(k, version, secret, func() (*rest.Config, error) {
		return kubeconfig.RESTConfig(ctx, c.Kube, c.Identity, cfg.Credentials)
	})
}

// A PolicySource returns the defaults and limits Instances are resolved with; *Policy is one.
type PolicySource interface {
	Settings(ctx context.Context) (resolve.Settings, error)
}
