package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/cluster"
	"github.com/example/function-memcached/internal/controller/instance"
)

func TestSetup(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// The manager is never started, so its API server need not exist.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(mgr, controller.DefaultOptions(), instance.Options{Namespace: "crossplane-system", Settled: 10 * time.Minute, Targets: cluster.DefaultLimits()}); err != nil {
		t.Errorf("Setup(...): %v", err)
	}
	// A second Setup stops at the first controller whose name is taken.
	if err := Setup(mgr, controller.DefaultOptions(), instance.Options{Namespace: "crossplane-system", Settled: 10 * time.Minute, Targets: cluster.DefaultLimits()}); err == nil {
		t.Error("Setup(...) twice: want an error, got none")
	}
}
