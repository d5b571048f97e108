// Package config runs the ProviderConfig and ClusterProviderConfig controllers, which count
// the Instances using each config and keep a config from being deleted while any does.
//
// Both count namespaced ProviderConfigUsages, the only usages Instances create: the usage
// tracker labels each with the config's name and kind, a ProviderConfig counts the usages of
// its own namespace and a ClusterProviderConfig those of every namespace.
package config

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// ProviderConfigKinds are the kinds the ProviderConfig reconciler works with.
var ProviderConfigKinds = resource.ProviderConfigKinds{
	Config:    v1alpha1.ProviderConfigGroupVersionKind,
	Usage:     v1alpha1.ProviderConfigUsageGroupVersionKind,
	UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind,
}

// ClusterProviderConfigKinds are the kinds the ClusterProviderConfig reconciler works with:
// its usages are the namespaced ProviderConfigUsages that name a ClusterProviderConfig.
var ClusterProviderConfigKinds = resource.ProviderConfigKinds{
	Config:    v1alpha1.ClusterProviderConfigGroupVersionKind,
	Usage:     v1alpha1.ProviderConfigUsageGroupVersionKind,
	UsageList: v1alpha1.ProviderConfigUsageListGroupVersionKind,
}

// Setup adds the ProviderConfig and ClusterProviderConfig controllers to mgr.
func Setup(mgr ctrl.Manager, o controller.Options) error {
	if err := setup(mgr, o, v1alpha1.ProviderConfigGroupKind, v1alpha1.ProviderConfigKind, ProviderConfigKinds, &v1alpha1.ProviderConfig{}); err != nil {
		return errors.Wrap(err, "cannot set up the ProviderConfig controller")
	}
	return errors.Wrap(setup(mgr, o, v1alpha1.ClusterProviderConfigGroupKind, v1alpha1.ClusterProviderConfigKind, ClusterProviderConfigKinds, &v1alpha1.ClusterProviderConfig{}),
		"cannot set up the ClusterProviderConfig controller")
}

// setup adds the controller of one config kind. Usages wake only the controller of the kind
// they name, so a ProviderConfig and a ClusterProviderConfig of the same name never count
// each other's users.
func setup(mgr ctrl.Manager, o controller.Options, groupKind, kind string, of resource.ProviderConfigKinds, config resource.ProviderConfig) error {
	name := providerconfig.ControllerName(groupKind)
	r := providerconfig.NewReconciler(mgr, of,
		providerconfig.WithLogger(o.Logger.WithValues("controller", name)),
		providerconfig.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name)))) //nolint:staticcheck // crossplane-runtime's recorder still takes the legacy events API.
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(o.ForControllerRuntime()).
		For(config).
		Watches(&v1alpha1.ProviderConfigUsage{}, &resource.EnqueueRequestForProviderConfig{Kind: kind}).
		Complete(ratelimiter.NewReconciler(name, r, o.GlobalRateLimiter))
}
