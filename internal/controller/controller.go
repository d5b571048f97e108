// Package controller sets up every controller of the Memcached provider: the Instance
// controller and the two provider-config controllers.
package controller

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"

	"github.com/example/function-memcached/internal/controller/config"
	"github.com/example/function-memcached/internal/controller/instance"
)

// Setup adds every controller of the provider to mgr. namespace is the provider's own
// namespace in the control plane; settled how often an Instance that has settled is polled.
func Setup(mgr ctrl.Manager, o controller.Options, namespace string, settled time.Duration) error {
	if err := config.Setup(mgr, o); err != nil {
		return err
	}
	return instance.Setup(mgr, o, namespace, settled)
}
