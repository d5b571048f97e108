// Package controller sets up every controller of the Memcached provider: the Instance
// controller and the two provider-config controllers.
package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"

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
