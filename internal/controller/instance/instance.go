// Package instance is the Instance controller: crossplane-runtime's managed reconciler
// around an external client whose "external system" is another Kubernetes cluster. It
// resolves an Instance like the composition function resolves a claim, renders the same
// Deployment, Service and PodDisruptionBudget with package render, server-side applies them
// to the target cluster and judges them with package readiness, so a Memcached looks and
// reports the same whichever way it was asked for.
//
// The managed reconciler decides when to create, update and delete (and honours
// managementPolicies: without Delete, deleting the Instance leaves everything running);
// this package only answers its questions about the target cluster.
package instance

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kube"
	"github.com/example/function-memcached/resolve"
)

// FieldManager owns, in target clusters, every field the provider applies. Observe compares
// only the fields this manager owns, so fields that the API server defaults or that other
// controllers add never look like drift, while a field someone else changed (and so took
// from this manager) does.
const FieldManager = "memcached-provider"

// Setup adds the Instance controller to mgr.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	name := managed.ControllerName(v1alpha1.InstanceGroupKind)

	// The provider's built-in policy, the function's defaults without an Input. It cannot
	// fail: the defaults are valid by construction, and resolve's tests say so.
	settings, err := resolve.NewSettings(nil)
	if err != nil {
		return errors.Wrap(err, "cannot build the default Memcached policy")
	}

	opts := append(ReconcilerOptions(&Connector{
		Kube:      mgr.GetClient(),
		Usage:     resource.NewProviderConfigUsageTracker(mgr.GetClient(), &v1alpha1.ProviderConfigUsage{}),
		Identity:  mgr.GetConfig(),
		NewClient: kube.New,
		Settings:  settings,
	}, o.PollInterval),
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name))), //nolint:staticcheck // crossplane-runtime's recorder still takes the legacy events API.
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

	r := managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.InstanceGroupVersionKind), opts...)
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		WithEventFilter(resource.DesiredStateChanged()).
		For(&v1alpha1.Instance{}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}

// ReconcilerOptions are how the Instance controller uses crossplane-runtime's managed
// reconciler, apart from logging, events and metrics. They are exported so that tests run
// the same reconciler as the provider.
func ReconcilerOptions(c *Connector, poll time.Duration) []managed.ReconcilerOption {
	return []managed.ReconcilerOption{
		managed.WithTypedExternalConnector[*v1alpha1.Instance](c),
		managed.WithPollInterval(poll),
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
		// The provider does not watch target clusters: it learns that a rollout finished
		// only by polling. Poll soon while the Instance is not Available, or a new or
		// resized Memcached would report Creating or Resizing for a whole poll interval.
		managed.WithPollIntervalHook(PollInterval),
	}
}

// UnavailablePoll is how soon an Instance that is not Available (Creating, Resizing,
// Progressing, Degraded) is checked again, when the poll interval is longer.
const UnavailablePoll = 5 * time.Second

// PollInterval is the managed reconciler's poll interval hook: poll for an Instance whose
// Ready condition is True, at most UnavailablePoll for any other.
func PollInterval(mg resource.Managed, poll time.Duration) time.Duration {
	if mg.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
		return poll
	}
	return min(poll, UnavailablePoll)
}

// A Connector connects an Instance to its target cluster. Its fields are its dependencies,
// so that tests can replace each one.
type Connector struct {
	// Kube reads (Cluster)ProviderConfigs and credential Secrets in the control plane.
	Kube client.Client
	// Usage records that an Instance uses its ProviderConfig, before the config is read, so
	// that a config in use cannot be deleted.
	Usage resource.ModernTracker
	// Identity is the provider's own configuration, for InjectedIdentity.
	Identity *rest.Config
	// NewClient makes a client of a target cluster.
	NewClient func(*rest.Config) (client.Client, error)
	// Settings are the defaults and limits Instances are resolved with.
	Settings resolve.Settings
}

// Connect tracks the Instance's use of its ProviderConfig, reads the config's credentials
// and returns an external client of the target cluster. It does not contact the target
// cluster: the first request is Observe's.
func (c *Connector) Connect(ctx context.Context, cr *v1alpha1.Instance) (managed.TypedExternalClient[*v1alpha1.Instance], error) {
	if cr.GroupVersionKind().Empty() {
		// The usage records the Instance's kind, which a typed object read from an API
		// client that strips type metadata lacks.
		cr.SetGroupVersionKind(v1alpha1.InstanceGroupVersionKind)
	}
	if err := c.Usage.Track(ctx, cr); err != nil {
		return nil, errors.Wrap(err, "cannot track ProviderConfig usage")
	}
	creds, err := kube.CredentialsFor(ctx, c.Kube, cr.GetNamespace(), cr.GetProviderConfigReference())
	if err != nil {
		return nil, err
	}
	rc, err := kube.RESTConfig(ctx, c.Kube, c.Identity, creds)
	if err != nil {
		return nil, err
	}
	k, err := c.NewClient(rc)
	if err != nil {
		return nil, err
	}
	return &External{Kube: k, Settings: c.Settings}, nil
}
