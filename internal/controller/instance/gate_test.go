package instance

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// blocking reconciles until released, counting what it was asked.
type blocking struct {
	mu      sync.Mutex
	started map[string]int
	release chan struct{}
	entered chan struct{}
}

func (b *blocking) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	b.mu.Lock()
	b.started[req.String()]++
	b.mu.Unlock()
	b.entered <- struct{}{}
	<-b.release
	return reconcile.Result{}, nil
}

// TestGate proves that a target that holds its reconciles (a server that lets every request
// run to the timeout) holds at most Gate.Most of the provider's workers: the next Instance of
// the same tenant waits its turn, without an error, while another tenant's goes on.
func TestGate(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	instance := func(ns, name, kind, config string) *v1alpha1.Instance {
		i := &v1alpha1.Instance{}
		i.SetNamespace(ns)
		i.SetName(name)
		i.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: kind, Name: config})
		return i
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		instance("team-h", "one", v1alpha1.ProviderConfigKind, "slow"),
		instance("team-h", "two", v1alpha1.ProviderConfigKind, "slow-too"),
		instance("team-h", "three", v1alpha1.ProviderConfigKind, "slow"),
		instance("team-a", "fine", v1alpha1.ProviderConfigKind, "fine"),
		instance("team-h", "platform", v1alpha1.ClusterProviderConfigKind, "platform"),
	).Build()
	b := &blocking{started: map[string]int{}, release: make(chan struct{}), entered: make(chan struct{}, 8)}
	g := &Gate{Instances: kube, Most: 2, Reconciler: b}
	req := func(ns, name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	var wg sync.WaitGroup
	for _, name := range []string{"one", "two"} {
		wg.Go(func() { _, _ = g.Reconcile(context.Background(), req("team-h", name)) })
		<-b.entered
	}
	// Two reconciles of team-h's ProviderConfigs hold their slots: a third waits its turn,
	// though it names a ProviderConfig of its own.
	r, err := g.Reconcile(context.Background(), req("team-h", "three"))
	if err != nil || r.RequeueAfter <= 0 {
		t.Errorf("the third reconcile of one tenant's target = %+v, %v; want it requeued without an error", r, err)
	}
	if n := b.started["team-h/three"]; n != 0 {
		t.Errorf("the third reconcile of one tenant's target ran %d times while two held it; want it turned away", n)
	}
	// Another tenant is not held up, nor the same namespace's Instance of the platform's
	// ClusterProviderConfig.
	wg.Go(func() { _, _ = g.Reconcile(context.Background(), req("team-a", "fine")) })
	<-b.entered
	wg.Go(func() { _, _ = g.Reconcile(context.Background(), req("team-h", "platform")) })
	<-b.entered
	close(b.release)
	wg.Wait()
	// Once they are done, the third runs.
	go func() { <-b.entered }()
	if _, err := g.Reconcile(context.Background(), req("team-h", "three")); err != nil || b.started["team-h/three"] != 1 {
		t.Errorf("the third reconcile after the others finished: ran %d times, %v; want once", b.started["team-h/three"], err)
	}
}
