// Package cluster holds the provider's connections to target clusters, one per
// ProviderConfig and version of its credentials, shared by every Instance that uses it. A
// connection is a client with request timeouts for what the provider writes, and, for each
// target namespace in use, watches of the kinds the provider manages (Options.Kinds:
// Deployments, Services, PodDisruptionBudgets, NetworkPolicies, Secrets) that it owns there
// (those labelled memcached.example.com/instance-uid), and of the kubernetes.io/tls Secrets
// there, which Instances name as their TLS Secrets (cert-manager writes them, unlabelled).
// Instances read what they own and their TLS Secrets from the watches, so an idle provider
// sends no request per Instance; a change
// in the target cluster wakes the Instance it belongs to within the watch's latency; and a
// namespace whose watches fail (the cluster is gone, credentials were revoked, permissions
// withdrawn) is reported as such, waking every Instance there, and again when it recovers.
// What the watches of one kind in one namespace hold is bounded (MaxWatched): a target
// cluster's server, which a tenant may run, cannot grow the provider's memory without end.
package cluster

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kubeconfig"
)

// Options configure connections to target clusters.
type Options struct {
	// RequestTimeout bounds each request of the client (reads, applies, deletes); watches
	// have their own.
	RequestTimeout time.Duration
	// WatchTimeout is how long each watch runs before it is renewed (plus up to a fifth,
	// at random, so that watches do not renew together). A renewal is authenticated and
	// authorized again, so revoked credentials or permissions show within it.
	WatchTimeout time.Duration
	// SyncTimeout bounds the wait for a namespace's watches to list what they watch the
	// first time, before an Instance there is told the namespace cannot be observed.
	SyncTimeout time.Duration
	// Wake asks for an Instance to be reconciled.
	Wake func(types.NamespacedName)
	// Kinds are the kinds to watch what the provider owns of, one empty object each.
	Kinds []client.Object
	// Limits bound what one target cluster can make the provider hold or wait for.
	Limits Limits
}

// TLSSecrets selects the Secrets an Instance may name as its TLS Secret: those of type
// kubernetes.io/tls, labelled or not.
func TLSSecrets() fields.Selector {
	return fields.OneTermEqualSelector("type", string(corev1.SecretTypeTLS))
}

// Owned selects what the provider owns in a target cluster: objects labelled with an
// Instance's UID.
func Owned() labels.Selector {
	r, err := labels.NewRequirement(v1alpha1.LabelInstanceUID, selection.Exists, nil)
	if err != nil {
		// The label key is a constant, valid by construction.
		panic(err)
	}
	return labels.NewSelector().Add(*r)
}

// A Cluster is the provider's connection to one target cluster with one version of one
// ProviderConfig's credentials.
type Cluster struct {
	// Host is the target cluster's server URL.
	Host string

	opts   Options
	client client.Client
	watch  *rest.Config
	ctx    context.Context
	stop   context.CancelFunc

	mu         sync.Mutex
	namespaces map[string]*watches
}

// New connects to the cluster rc points at. It sends nothing until it is used. Neither its
// client nor its watches follow a redirect or repeat an answer but a Kubernetes Status
// (kubeconfig.Untrusted), whatever config rc is.
func New(rc *rest.Config, o Options) (*Cluster, error) {
	direct := rest.CopyConfig(rc)
	direct.Timeout = o.RequestTimeout
	direct.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &transport{next: rt, host: rc.Host} })
	c, err := kubeconfig.New(direct)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	return &Cluster{Host: rc.Host, opts: o, client: c, watch: kubeconfig.Guard(rest.CopyConfig(rc)), ctx: ctx, stop: stop, namespaces: map[string]*watches{}}, nil
}

// Client writes to the target cluster, and reads what the watches do not hold.
func (c *Cluster) Client() client.Client { return c.client }

// Watched returns a reader of what the provider owns in namespace, kept current by
// watches, and registers instance to be woken when any of it changes or when the namespace
// can no longer be observed (or can again). The first call for a namespace starts its
// watches and waits up to SyncTimeout for them to list; later calls never wait. It fails
// while the namespace cannot be observed, with the reason.
func (c *Cluster) Watched(ctx context.Context, namespace string, instance types.NamespacedName) (client.Reader, error) {
	c.mu.Lock()
	n, ok := c.namespaces[namespace]
	if !ok {
		var err error
		if n, err = c.startWatches(namespace); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.namespaces[namespace] = n
	}
	n.register(instance)
	c.mu.Unlock()

	if err := n.waitSynced(ctx, c.opts.SyncTimeout); err != nil {
		return nil, errors.Wrapf(err, "cannot observe namespace %s of %s", namespace, c.Host)
	}
	if err := n.health.err(); err != nil {
		return nil, errors.Wrapf(err, "cannot observe namespace %s of %s", namespace, c.Host)
	}
	return reader{owned: n.cache, tls: n.tls}, nil
}

// reader reads what the provider owns from the owned watches and, for a Secret it does not
// own, the kubernetes.io/tls Secrets' watch.
type reader struct {
	owned, tls client.Reader
}

func (r reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.owned.Get(ctx, key, obj, opts...)
	if _, secret := obj.(*corev1.Secret); secret && kerrors.IsNotFound(err) {
		return r.tls.Get(ctx, key, obj, opts...)
	}
	return err
}

func (r reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.owned.List(ctx, list, opts...)
}

// Forget stops waking instance for namespace, and stops watching a namespace no Instance
// uses any more.
func (c *Cluster) Forget(namespace string, instance types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.namespaces[namespace]
	if !ok {
		return
	}
	if n.forget(instance) == 0 {
		n.stop()
		delete(c.namespaces, namespace)
	}
}

// Instances are the Instances that use this connection, sorted.
func (c *Cluster) Instances() []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []types.NamespacedName
	for _, n := range c.namespaces {
		out = append(out, n.registered()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Stop stops every watch.
func (c *Cluster) Stop() {
	c.stop()
}

// wake wakes each instance.
func (c *Cluster) wake(instances []types.NamespacedName) {
	if c.opts.Wake == nil {
		return
	}
	for _, i := range instances {
		c.opts.Wake(i)
	}
}

// startWatches starts watching what the provider owns in namespace, and the namespace's
// kubernetes.io/tls Secrets. Each set of watches has its own budget (MaxWatched per resource).
func (c *Cluster) startWatches(namespace string) (*watches, error) {
	ctx, cancel := context.WithCancel(c.ctx)
	n := &watches{instances: map[types.NamespacedName]struct{}{}, synced: make(chan struct{}), started: time.Now(), stop: cancel}
	n.health = newHealth(func() { c.wake(n.registered()) })

	owned, err := c.newCache(namespace, n.health, cache.Options{DefaultLabelSelector: Owned()})
	if err != nil {
		cancel()
		return nil, err
	}
	// A TLS Secret names no Instance: a change (a renewal) wakes every Instance of the
	// namespace, which is rare.
	tls, err := c.newCache(namespace, n.health, cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {Field: TLSSecrets()}}})
	if err != nil {
		cancel()
		return nil, err
	}
	// An object wakes the Instance its annotation names only when that Instance reads this
	// namespace: a tenant sharing it cannot keep waking another team's Instances by churning
	// objects of its own that name them.
	byOwner := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.wake(n.only(owner(o))) },
		UpdateFunc: func(_, o any) { c.wake(n.only(owner(o))) },
		DeleteFunc: func(o any) { c.wake(n.only(owner(o))) },
	}
	everyone := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.wake(n.registered()) },
		UpdateFunc: func(any, any) { c.wake(n.registered()) },
		DeleteFunc: func(any) { c.wake(n.registered()) },
	}
	watch := func(cch cache.Cache, o client.Object, h toolscache.ResourceEventHandler) error {
		inf, err := cch.GetInformer(ctx, o, cache.BlockUntilSynced(false))
		if err == nil {
			_, err = inf.AddEventHandler(h)
		}
		return errors.Wrapf(err, "cannot watch %T in namespace %s of %s", o, namespace, c.Host)
	}
	for _, o := range c.opts.Kinds {
		if err := watch(owned, o, byOwner); err != nil {
			cancel()
			return nil, err
		}
	}
	if err := watch(tls, &corev1.Secret{}, everyone); err != nil {
		cancel()
		return nil, err
	}
	n.cache, n.tls = owned, tls
	go func() { _ = owned.Start(ctx) }()
	go func() { _ = tls.Start(ctx) }()
	go func() {
		if owned.WaitForCacheSync(ctx) && tls.WaitForCacheSync(ctx) {
			close(n.synced)
		}
	}()
	return n, nil
}

// newCache is a cache of namespace of the target cluster, with o's selectors, whose requests
// report to health and spend a budget of their own.
func (c *Cluster) newCache(namespace string, h *health, o cache.Options) (cache.Cache, error) {
	rc := rest.CopyConfig(c.watch)
	b := newBudget()
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &transport{next: rt, host: c.Host, health: h, budget: b}
	})
	timeout := c.opts.WatchTimeout
	o.Scheme = kubeconfig.Scheme()
	o.Mapper = kubeconfig.RESTMapper()
	o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	o.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(renewedWatches{ListerWatcher: lw, timeout: timeout}, obj, resync, idx)
	}
	cch, err := cache.New(rc, o)
	return cch, errors.Wrapf(err, "cannot watch namespace %s of %s", namespace, c.Host)
}

// owner is the Instance an object in a target cluster belongs to, from its annotation.
func owner(o any) []types.NamespacedName {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	ns, name, ok := strings.Cut(m.GetAnnotations()[v1alpha1.AnnotationInstance], "/")
	if !ok || ns == "" || name == "" {
		return nil
	}
	return []types.NamespacedName{{Namespace: ns, Name: name}}
}

// watches are the watches of one namespace of a target cluster, and the Instances that read
// them.
type watches struct {
	cache   cache.Cache
	tls     cache.Cache
	health  *health
	synced  chan struct{}
	started time.Time
	stop    context.CancelFunc

	mu        sync.Mutex
	instances map[types.NamespacedName]struct{}
}

func (n *watches) register(i types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.instances[i] = struct{}{}
}

func (n *watches) forget(i types.NamespacedName) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.instances, i)
	return len(n.instances)
}

// only returns those of instances that read the namespace.
func (n *watches) only(instances []types.NamespacedName) []types.NamespacedName {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.DeleteFunc(instances, func(i types.NamespacedName) bool {
		_, ok := n.instances[i]
		return !ok
	})
}

func (n *watches) registered() []types.NamespacedName {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(n.instances))
	for i := range n.instances {
		out = append(out, i)
	}
	return out
}

// waitSynced waits until the watches have listed once, but never beyond timeout after they
// started: a namespace that could not be listed by then fails at once from then on, with
// the reason its requests failed.
func (n *watches) waitSynced(ctx context.Context, timeout time.Duration) error {
	select {
	case <-n.synced:
		return nil
	default:
	}
	t := time.NewTimer(max(0, timeout-time.Since(n.started)))
	defer t.Stop()
	select {
	case <-n.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	if err := n.health.err(); err != nil {
		return err
	}
	return errors.Errorf("the watches have not listed what they watch after %s", timeout)
}

// renewedWatches ends every watch after about timeout, so that the informer renews it:
// each renewal proves the cluster reachable and the credentials still good, at the cost of
// one watch request per resource and namespace per timeout, however many Instances there are.
type renewedWatches struct {
	toolscache.ListerWatcher
	timeout time.Duration
}

// IsWatchListSemanticsUnSupported passes on whether the wrapped ListerWatcher can stream
// its initial list in a watch, which the informer asks before using it.
func (w renewedWatches) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(w.ListerWatcher)
}

func (w renewedWatches) Watch(o metav1.ListOptions) (watch.Interface, error) {
	if w.timeout > 0 {
		limit := int64((w.timeout + time.Duration(rand.Int64N(int64(w.timeout)/5+1))).Seconds())
		if o.TimeoutSeconds == nil || *o.TimeoutSeconds > limit {
			o.TimeoutSeconds = &limit
		}
	}
	return w.ListerWatcher.Watch(o)
}

// A Key names a ProviderConfig or ClusterProviderConfig.
type Key struct {
	Kind, Namespace, Name string
}

// Clusters are the connections of every ProviderConfig in use, each kept for one version of
// its credentials (kubeconfig.Credentials.Version).
type Clusters struct {
	opts Options
	// connect makes a connection; New, but for tests.
	connect func(*rest.Config, Options) (*Cluster, error)

	mu sync.Mutex
	m  map[Key]*entry
}

type entry struct {
	version string
	secret  types.NamespacedName
	cluster *Cluster
}

// NewClusters returns an empty set of connections.
func NewClusters(o Options) *Clusters {
	return &Clusters{opts: o, connect: New, m: map[Key]*entry{}}
}

// Get returns the connection of config k with credentials of version (kept in Secret
// secret; empty for InjectedIdentity), making one from config() when there is none yet or
// the credentials changed. A connection replaced by one with newer credentials stops, and
// the Instances that used it are woken.
func (cs *Clusters) Get(k Key, version string, secret types.NamespacedName, config func() (*rest.Config, error)) (*Cluster, error) {
	cs.mu.Lock()
	e, ok := cs.m[k]
	cs.mu.Unlock()
	if ok && e.version == version {
		return e.cluster, nil
	}
	rc, err := config()
	if err != nil {
		return nil, err
	}
	c, err := cs.connect(rc, cs.opts)
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	old, ok := cs.m[k]
	if ok && old.version == version {
		// Another Instance connected meanwhile: use its connection.
		cs.mu.Unlock()
		c.Stop()
		return old.cluster, nil
	}
	cs.m[k] = &entry{version: version, secret: secret, cluster: c}
	cs.mu.Unlock()
	if ok {
		old.cluster.Stop()
		old.cluster.wake(old.cluster.Instances())
	}
	return c, nil
}

// Drop stops the connection of config k, whose credentials are gone, and wakes the
// Instances that used it so that they say so.
func (cs *Clusters) Drop(k Key) {
	cs.mu.Lock()
	e, ok := cs.m[k]
	delete(cs.m, k)
	cs.mu.Unlock()
	if ok {
		e.cluster.Stop()
		e.cluster.wake(e.cluster.Instances())
	}
}

// SecretChanged wakes every Instance that uses a connection made from the credentials in
// Secret secret: after the Secret changed (or went), each of them reconnects with what it
// holds now (or says that it cannot).
func (cs *Clusters) SecretChanged(secret types.NamespacedName) {
	cs.mu.Lock()
	var hit []*Cluster
	for _, e := range cs.m {
		if e.secret == secret {
			hit = append(hit, e.cluster)
		}
	}
	cs.mu.Unlock()
	for _, c := range hit {
		c.wake(c.Instances())
	}
}
