// Package controller sets up every controller of the Memcached provider: the Instance
// controller and the two provider-config controllers.
package controller

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/controller/config"
	"github.com/example/function-memcached/internal/controller/instance"
)

// Setup adds every controller of the provider to mgr.
func Setup(mgr ctrl.Manager, o controller.Options, io instance.Options) error {
	if err := config.Setup(mgr, o); err != nil {
		return err
	}
	return instance.Setup(mgr, o, io)
}

// ConfigKinds are the kinds the provider-config controllers work with. Crossplane installs
// their CRDs with the package: they are not managed resources, so no activation is needed.
var ConfigKinds = []schema.GroupVersionKind{
	v1alpha1.ProviderConfigGroupVersionKind,
	v1alpha1.ClusterProviderConfigGroupVersionKind,
	v1alpha1.ProviderConfigUsageGroupVersionKind,
}

// InstanceKinds are the kinds the Instance controller works with: the Instance, whose CRD
// Crossplane creates only once a ManagedResourceActivationPolicy activates its
// ManagedResourceDefinition (the package declares safe-start), and the configs it reads.
var InstanceKinds = append([]schema.GroupVersionKind{v1alpha1.InstanceGroupVersionKind}, ConfigKinds...)

// SetupGated adds each controller of the provider to mgr once o.Gate says the CRDs of its
// kinds are served (crossplane-runtime's customresourcesgate tells it), rather than at once:
// a controller of a kind that is not served would stop the manager. Controllers are added
// while the manager runs; failed is told of one that cannot be (the provider then stops).
func SetupGated(mgr ctrl.Manager, o controller.Options, io instance.Options, failed func(error)) error {
	if o.Gate == nil {
		return errors.New("cannot gate the controllers without a gate")
	}
	o.Gate.Register(func() {
		if err := config.Setup(mgr, o); err != nil {
			failed(errors.Wrap(err, "cannot set up the provider-config controllers"))
		}
	}, ConfigKinds...)
	o.Gate.Register(func() {
		if err := instance.Setup(mgr, o, io); err != nil {
			failed(errors.Wrap(err, "cannot set up the Instance controller"))
		}
	}, InstanceKinds...)
	return nil
}
