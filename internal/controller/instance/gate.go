package instance

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/cluster"
)

// gateRetry is about how soon an Instance the Gate turned away is tried again.
const gateRetry = time.Second

// A Gate lets at most Most reconciles use the namespaced ProviderConfigs of one namespace at
// once (one tenant's targets, however many ProviderConfigs it writes): a target a tenant runs
// that answers slowly then holds at most Most of the provider's workers, not all of them. A
// ClusterProviderConfig's target is the platform's, and not gated. An Instance turned away is tried again in a second or two, without an error, an event
// or a change of its status: waiting its turn is not a failure.
type Gate struct {
	// Instances reads Instances, from the manager's cache.
	Instances client.Reader
	// Most is how many reconciles may use one target at once; 0 does not limit.
	Most int
	// Reconciler reconciles what the gate lets through.
	Reconciler reconcile.Reconciler

	mu       sync.Mutex
	inFlight map[cluster.Key]int
}

// Reconcile reconciles req if its target has a reconcile to spare.
func (g *Gate) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	i := &v1alpha1.Instance{}
	if g.Most <= 0 || g.Instances.Get(ctx, req.NamespacedName, i) != nil {
		return g.Reconciler.Reconcile(ctx, req)
	}
	k, ok := TargetOf(i)
	if !ok {
		return g.Reconciler.Reconcile(ctx, req)
	}
	if !g.take(k) {
		return reconcile.Result{RequeueAfter: gateRetry + time.Duration(rand.Int64N(int64(gateRetry)))}, nil
	}
	defer g.give(k)
	return g.Reconciler.Reconcile(ctx, req)
}

// TargetOf is the tenant whose reconciles i's count against: its namespace's namespaced
// ProviderConfigs together; none for a ClusterProviderConfig's.
func TargetOf(i *v1alpha1.Instance) (cluster.Key, bool) {
	ref := i.GetProviderConfigReference()
	if ref == nil || ref.Kind == v1alpha1.ClusterProviderConfigKind {
		return cluster.Key{}, false
	}
	return cluster.Key{Kind: v1alpha1.ProviderConfigKind, Namespace: i.GetNamespace()}, true
}

func (g *Gate) take(k cluster.Key) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight == nil {
		g.inFlight = map[cluster.Key]int{}
	}
	if g.inFlight[k] >= g.Most {
		return false
	}
	g.inFlight[k]++
	return true
}

func (g *Gate) give(k cluster.Key) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[k]--; g.inFlight[k] <= 0 {
		delete(g.inFlight, k)
	}
}
