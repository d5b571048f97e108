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
// A target cluster's server, which a tenant may run, is not trusted to be small, fast or
// honest (Limits): what the watches of one resource in one namespace hold is bounded in
// objects, what a tenant's connections hold in estimated memory, a namespace over a bound
// stops being watched for a while; a server that does not answer is sent nothing for a
// while; its watches wake Instances at a bounded rate; and a connection no Instance uses is
// closed.
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

	// conn is what Clusters gives each connection of its own.
	conn connection
}

// connection is what is a connection's own beside Options: set by Clusters, zero for a
// Cluster made with New alone (no memory ledger, a waker of its own, no namespace bound).
type connection struct {
	// label names the connection in metrics: a bounded value (Label).
	label string
	// ledger bounds what the connection's watches hold; nil holds anything.
	ledger *ledger
	// namespaces, when set, counts the target namespaces its tenant's connections watch,
	// against Limits.Namespaces: a namespaced ProviderConfig's.
	namespaces *watchedNamespaces
	// waker wakes Instances for it, shared by the connections of one tenant.
	waker *waker
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
	// watch is the configuration of the watches; base the transport every request of the
	// connection shares, over conns.
	watch *rest.Config
	base  http.RoundTripper
	conns *conns
	quiet *quiet
	waker *waker
	ctx   context.Context
	stop  context.CancelFunc

	mu         sync.Mutex
	namespaces map[string]*watches
	used       time.Time
}

// New connects to the cluster rc points at. It sends nothing until it is used. Neither its
// client nor its watches follow a redirect or repeat an answer but a Kubernetes Status
// (kubeconfig.Untrusted), whatever config rc is. Its requests share one transport of its
// own, whose connections Stop closes.
func New(rc *rest.Config, o Options) (*Cluster, error) {
	conns := &conns{open: map[*trackedConn]struct{}{}}
	shared := rest.CopyConfig(rc)
	// A Dial of its own keeps client-go from sharing (and keeping, for the life of the
	// process) one transport between every connection with the same TLS settings.
	shared.Dial = conns.dial
	base, err := rest.TransportFor(shared)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot connect to %s", rc.Host)
	}
	ctx, stop := context.WithCancel(context.Background())
	c := &Cluster{Host: rc.Host, opts: o, base: base, conns: conns, quiet: &quiet{}, waker: o.conn.waker, ctx: ctx, stop: stop, namespaces: map[string]*watches{}, used: time.Now()}
	if c.waker == nil {
		c.waker = newWaker(o.Wake, o.Limits.WakeRate)
	}
	// The watches and the client ask for JSON only: the provider counts what a list holds
	// before client-go decodes it, which it does in JSON.
	c.watch = rest.CopyConfig(rc)
	c.watch.ContentType, c.watch.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	c.watch.WrapTransport, c.watch.Dial = nil, nil
	var bound int64
	if o.conn.ledger != nil {
		bound = o.conn.ledger.limit / 2
	}
	// The provider's transport reads answers before kubeconfig.Untrusted does, so that it
	// refuses one as soon as what came is too much, rather than once all of it is in memory.
	direct := &http.Client{Transport: &timeout{next: &transport{next: kubeconfig.Untrusted(&bounding{next: base, bound: bound}), label: o.conn.label}, after: o.RequestTimeout, quiet: c.quiet}}
	if c.client, err = client.New(c.watch, client.Options{HTTPClient: direct, Scheme: kubeconfig.Scheme(), Mapper: kubeconfig.RESTMapper()}); err != nil {
		stop()
		return nil, errors.Wrapf(err, "cannot create a client for %s", rc.Host)
	}
	return c, nil
}

// Client writes to the target cluster, and reads what the watches do not hold.
func (c *Cluster) Client() client.Client { return c.client }

// Watched returns a reader of what the provider owns in namespace, kept current by
// watches, and registers instance to be woken when any of it changes, when the TLS Secret
// it names (tlsSecret; "" for none) changes, or when the namespace can no longer be observed
// (or can again). The first call for a namespace starts its watches and waits up to
// SyncTimeout for them to list; later calls never wait. It fails while the namespace cannot
// be observed, with the reason; a namespace whose watches would hold more than the limits
// allow is not watched, and fails, until the watch timeout has passed.
func (c *Cluster) Watched(ctx context.Context, namespace string, instance types.NamespacedName, tlsSecret string) (client.Reader, error) {
	c.mu.Lock()
	c.used = time.Now()
	n, ok := c.namespaces[namespace]
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return nil, errors.Errorf("cannot observe namespace %s of %s: the connection was closed", namespace, c.Host)
	}
	if ok && n.retry() {
		// Dropped over a limit a while ago: its Instances carry over to a fresh start.
		delete(c.namespaces, namespace)
		registered := n.registered()
		if n, ok = c.startNamespace(namespace); ok {
			for _, i := range registered {
				n.register(i.instance, i.tls)
			}
		} else {
			c.releaseNamespace()
		}
	}
	if !ok {
		if err := c.admitNamespace(namespace); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		var err error
		if n, err = c.startWatches(namespace); err != nil {
			c.releaseNamespace()
			c.mu.Unlock()
			return nil, err
		}
		c.namespaces[namespace] = n
	}
	if n.register(instance, tlsSecret) {
		c.waker.grow(1)
	}
	c.mu.Unlock()

	if err := n.waitSynced(ctx, c.opts.SyncTimeout); err != nil {
		return nil, errors.Wrapf(err, "cannot observe namespace %s of %s", namespace, c.Host)
	}
	if err := n.err(); err != nil {
		return nil, errors.Wrapf(err, "cannot observe namespace %s of %s", namespace, c.Host)
	}
	return reader{owned: n.cache, tls: n.tls}, nil
}

// startNamespace starts watching namespace again; c.mu is held.
func (c *Cluster) startNamespace(namespace string) (*watches, bool) {
	n, err := c.startWatches(namespace)
	if err != nil {
		return nil, false
	}
	c.namespaces[namespace] = n
	return n, true
}

// admitNamespace takes one of the tenant's Limits.Namespaces for a namespace a namespaced
// ProviderConfig's connection starts watching, or says why it may not; c.mu is held.
func (c *Cluster) admitNamespace(namespace string) error {
	w, most := c.opts.conn.namespaces, c.opts.Limits.Namespaces
	if w == nil || most <= 0 {
		return nil
	}
	if n, ok := w.take(most); !ok {
		return errors.Errorf("cannot observe namespace %s of %s: %s already watch %d target namespaces, the provider's limit (--max-target-namespaces=%d)", namespace, c.Host, w.what, n, most)
	}
	return nil
}

// releaseNamespace gives back the slot of a namespace no longer watched; c.mu is held.
func (c *Cluster) releaseNamespace() {
	if w := c.opts.conn.namespaces; w != nil && c.opts.Limits.Namespaces > 0 {
		w.give()
	}
}

// watchedNamespaces counts the target namespaces the connections of one tenant (the
// namespaced ProviderConfigs of one namespace) watch: each costs the provider six caches and
// their watches, however little they hold.
type watchedNamespaces struct {
	what string

	mu sync.Mutex
	n  int
}

// take takes a slot when fewer than most are taken, and says how many are.
func (w *watchedNamespaces) take(most int) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n >= most {
		return w.n, false
	}
	w.n++
	return w.n, true
}

func (w *watchedNamespaces) give() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n = max(0, w.n-1)
}

// touch records that an Instance is about to read through the connection.
func (c *Cluster) touch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used = time.Now()
}

// Used reports when an Instance last read through the connection, and whether one still
// does (a namespace is watched for it).
func (c *Cluster) Used() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, len(c.namespaces) > 0
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
	c.used = time.Now()
	n, ok := c.namespaces[namespace]
	if !ok {
		return
	}
	left, was := n.forget(instance)
	if was {
		c.waker.grow(-1)
	}
	if left == 0 {
		n.close()
		delete(c.namespaces, namespace)
		c.releaseNamespace()
	}
}

// Instances are the Instances that use this connection, sorted.
func (c *Cluster) Instances() []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []types.NamespacedName
	for _, n := range c.namespaces {
		for _, r := range n.registered() {
			out = append(out, r.instance)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Stop stops every watch, gives back what they held and closes the connection's network
// connections.
func (c *Cluster) Stop() {
	c.stop()
	c.mu.Lock()
	registered := 0
	for ns, n := range c.namespaces {
		registered += len(n.registered())
		n.close()
		delete(c.namespaces, ns)
		c.releaseNamespace()
	}
	c.mu.Unlock()
	c.waker.grow(-registered)
	c.conns.closeAll()
}

// wake wakes each instance, at the waker's rate.
func (c *Cluster) wake(instances []types.NamespacedName) {
	c.waker.wake(instances)
}

// startWatches starts watching what the provider owns in namespace, and the namespace's
// kubernetes.io/tls Secrets. Each set of watches has accounts of its own, charged to the
// connection's ledger; one over a limit drops the namespace (drop).
func (c *Cluster) startWatches(namespace string) (*watches, error) {
	ctx, cancel := context.WithCancel(c.ctx)
	n := &watches{instances: map[types.NamespacedName]string{}, synced: make(chan struct{}), dropped: make(chan struct{}), started: time.Now(), stop: cancel}
	n.health = newHealth(func() { c.wake(n.instanceNames()) })
	drop := func(err error) { c.drop(n, err) }

	n.owned = newAccounts(namespace, c.opts.Limits.Objects, c.opts.conn.ledger)
	owned, err := c.newCache(ctx, namespace, n.health, n.owned, drop, cache.Options{DefaultLabelSelector: Owned()})
	if err != nil {
		n.close()
		return nil, err
	}
	n.tlsOwned = newAccounts(namespace, c.opts.Limits.Objects, c.opts.conn.ledger)
	tls, err := c.newCache(ctx, namespace, n.health, n.tlsOwned, drop, cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {Field: TLSSecrets()}}})
	if err != nil {
		n.close()
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
	// A TLS Secret names no Instance: a change (a renewal) wakes the Instances that name
	// it, so that a tenant churning Secrets of its own in a shared namespace wakes no one
	// else's.
	naming := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { c.wake(n.naming(o)) },
		UpdateFunc: func(_, o any) { c.wake(n.naming(o)) },
		DeleteFunc: func(o any) { c.wake(n.naming(o)) },
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
			n.close()
			return nil, err
		}
	}
	if err := watch(tls, &corev1.Secret{}, naming); err != nil {
		n.close()
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

// drop stops watching n's namespace, whose watches would hold more than a limit allows,
// until the watch timeout has passed: its Instances fail with err until then, and are woken
// to say so. Watching it again sooner would only read the same answer again.
func (c *Cluster) drop(n *watches, err error) {
	if !n.fail(err, time.Now().Add(max(c.opts.WatchTimeout, time.Second))) {
		return
	}
	n.close()
	c.wake(n.instanceNames())
}

// newCache is a cache of namespace of the target cluster, with o's selectors, whose requests
// report to health and are charged to accounts; drop is called when they would hold more
// than the limits allow.
func (c *Cluster) newCache(ctx context.Context, namespace string, h *health, as *accounts, drop func(error), o cache.Options) (cache.Cache, error) {
	o.HTTPClient = &http.Client{Transport: &transport{next: kubeconfig.Untrusted(&bounding{next: c.base, accounts: as, drop: drop}), label: c.opts.conn.label, health: h}}
	timeout := c.opts.WatchTimeout
	o.Scheme = kubeconfig.Scheme()
	o.Mapper = kubeconfig.RESTMapper()
	o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	o.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		w := &renewedWatches{ListerWatcher: lw, timeout: timeout, account: as.of(resourceOf(obj)), drop: drop, done: ctx.Done()}
		return toolscache.NewSharedIndexInformer(w, obj, resync, idx)
	}
	cch, err := cache.New(c.watch, o)
	return cch, errors.Wrapf(err, "cannot watch namespace %s of %s", namespace, c.Host)
}

// resourceOf is the resource (plural) of obj's kind, as the transport names it from a URL.
func resourceOf(obj runtime.Object) string {
	gvks, _, err := kubeconfig.Scheme().ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return ""
	}
	m, err := kubeconfig.RESTMapper().RESTMapping(gvks[0].GroupKind(), gvks[0].Version)
	if err != nil {
		return ""
	}
	return m.Resource.Resource
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
	cache    cache.Cache
	tls      cache.Cache
	owned    *accounts
	tlsOwned *accounts
	health   *health
	synced   chan struct{}
	started  time.Time
	stop     context.CancelFunc

	mu        sync.Mutex
	instances map[types.NamespacedName]string // to the TLS Secret each names
	failure   error
	until     time.Time
	dropped   chan struct{}
}

// A registration is an Instance that reads a namespace, and the TLS Secret it names there.
type registration struct {
	instance types.NamespacedName
	tls      string
}

// register registers i, naming TLS Secret tls, and says whether i is new.
func (n *watches) register(i types.NamespacedName, tls string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.instances[i]
	n.instances[i] = tls
	return !ok
}

// forget forgets i, and returns how many are left and whether i was registered.
func (n *watches) forget(i types.NamespacedName) (int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.instances[i]
	delete(n.instances, i)
	return len(n.instances), ok
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

// naming returns the Instances that name Secret o as their TLS Secret.
func (n *watches) naming(o any) []types.NamespacedName {
	if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []types.NamespacedName
	for i, tls := range n.instances {
		if tls != "" && tls == m.GetName() {
			out = append(out, i)
		}
	}
	return out
}

func (n *watches) registered() []registration {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]registration, 0, len(n.instances))
	for i, tls := range n.instances {
		out = append(out, registration{instance: i, tls: tls})
	}
	return out
}

func (n *watches) instanceNames() []types.NamespacedName {
	r := n.registered()
	out := make([]types.NamespacedName, len(r))
	for i := range r {
		out[i] = r[i].instance
	}
	return out
}

// fail records that the namespace is dropped with err until until, and says whether it was
// not already.
func (n *watches) fail(err error, until time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failure != nil {
		return false
	}
	n.failure, n.until = err, until
	close(n.dropped)
	return true
}

// retry says whether the namespace was dropped and may be watched again.
func (n *watches) retry() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failure != nil && time.Now().After(n.until)
}

// err is why the namespace cannot be observed: dropped over a limit, or its requests' health.
func (n *watches) err() error {
	n.mu.Lock()
	err := n.failure
	n.mu.Unlock()
	if err != nil {
		return err
	}
	return n.health.err()
}

// close stops the watches and gives back what they held.
func (n *watches) close() {
	n.stop()
	if n.owned != nil {
		n.owned.close()
	}
	if n.tlsOwned != nil {
		n.tlsOwned.close()
	}
}

// waitSynced waits until the watches have listed once, but never beyond timeout after they
// started: a namespace that could not be listed by then fails at once from then on, with
// the reason its requests failed.
func (n *watches) waitSynced(ctx context.Context, timeout time.Duration) error {
	select {
	case <-n.synced:
		return nil
	case <-n.dropped:
		return n.err()
	default:
	}
	t := time.NewTimer(max(0, timeout-time.Since(n.started)))
	defer t.Stop()
	select {
	case <-n.synced:
		return nil
	case <-n.dropped:
		return n.err()
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	if err := n.err(); err != nil {
		return err
	}
	return errors.Errorf("the watches have not listed what they watch after %s", timeout)
}

// renewedWatches ends every watch after about timeout, so that the informer renews it:
// each renewal proves the cluster reachable and the credentials still good, at the cost of
// one watch request per resource and namespace per timeout, however many Instances there are.
// It also tells account which objects the informer's store holds, from the lists it decoded
// and the watch events it hands on, in order, and drops the namespace before the store holds
// more objects than the account allows.
type renewedWatches struct {
	toolscache.ListerWatcher
	timeout time.Duration
	account *account
	drop    func(error)
	done    <-chan struct{}
}

// IsWatchListSemanticsUnSupported says the informer must list: the provider counts a list's
// objects before client-go decodes them (transport), which it cannot do for a watch that
// streams its initial events.
func (w *renewedWatches) IsWatchListSemanticsUnSupported() bool { return true }

// List lists, and tells the account which objects the page holds.
func (w *renewedWatches) List(o metav1.ListOptions) (runtime.Object, error) {
	obj, err := w.ListerWatcher.List(o)
	if err != nil || w.account == nil {
		return obj, err
	}
	var keys []string
	_ = meta.EachListItem(obj, func(i runtime.Object) error {
		if k, err := toolscache.MetaNamespaceKeyFunc(i); err == nil {
			keys = append(keys, k)
		}
		return nil
	})
	if err := w.account.decoded(keys, o.Continue != ""); err != nil {
		w.drop(err)
		return nil, err
	}
	return obj, nil
}

func (w *renewedWatches) Watch(o metav1.ListOptions) (watch.Interface, error) {
	if w.timeout > 0 {
		limit := int64((w.timeout + time.Duration(rand.Int64N(int64(w.timeout)/5+1))).Seconds())
		if o.TimeoutSeconds == nil || *o.TimeoutSeconds > limit {
			o.TimeoutSeconds = &limit
		}
	}
	in, err := w.ListerWatcher.Watch(o)
	if err != nil || w.account == nil {
		return in, err
	}
	return counted(in, w), nil
}

// counted passes in's events on, telling the account which object each holds or frees before
// the informer has it, and drops the namespace instead of passing on one the account cannot
// hold.
func counted(in watch.Interface, w *renewedWatches) watch.Interface {
	out := &countedWatch{in: in, events: make(chan watch.Event), stopped: make(chan struct{})}
	go func() {
		defer close(out.events)
		defer in.Stop()
		for {
			var e watch.Event
			var ok bool
			select {
			case e, ok = <-in.ResultChan():
			case <-out.stopped:
				return
			case <-w.done:
				return
			}
			if !ok {
				return
			}
			key, kind := "", other
			if k, err := toolscache.MetaNamespaceKeyFunc(e.Object); err == nil {
				switch e.Type {
				case watch.Added, watch.Modified:
					key, kind = k, upsert
				case watch.Deleted:
					key, kind = k, remove
				}
			}
			if err := w.account.handOn(key, kind); err != nil {
				w.drop(err)
				return
			}
			select {
			case out.events <- e:
			case <-out.stopped:
				return
			case <-w.done:
				return
			}
		}
	}()
	return out
}

type countedWatch struct {
	in      watch.Interface
	events  chan watch.Event
	once    sync.Once
	stopped chan struct{}
}

func (c *countedWatch) Stop() {
	c.once.Do(func() { close(c.stopped); c.in.Stop() })
}

func (c *countedWatch) ResultChan() <-chan watch.Event { return c.events }

// A Key names a ProviderConfig or ClusterProviderConfig.
type Key struct {
	Kind, Namespace, Name string
}

// Clusters are the connections of every ProviderConfig in use, each kept for one version of
// its credentials (kubeconfig.Credentials.Version) and closed once no Instance has used it
// for Limits.Idle. The connections of the namespaced ProviderConfigs of one namespace (one
// tenant's) share a memory ledger and a waker.
type Clusters struct {
	opts Options
	// connect makes a connection; New, but for tests.
	connect func(*rest.Config, Options) (*Cluster, error)

	mu      sync.Mutex
	m       map[Key]*entry
	tenants map[string]*tenant
}

type entry struct {
	version string
	secret  types.NamespacedName
	cluster *Cluster
}

// A tenant is what the connections of the namespaced ProviderConfigs of one namespace share.
type tenant struct {
	ledger     *ledger
	waker      *waker
	namespaces *watchedNamespaces
	users      int
}

// NewClusters returns an empty set of connections.
func NewClusters(o Options) *Clusters {
	return &Clusters{opts: o, connect: New, m: map[Key]*entry{}, tenants: map[string]*tenant{}}
}

// Get returns the connection of config k with credentials of version (kept in Secret
// secret; empty for InjectedIdentity), making one from config() when there is none yet or
// the credentials changed. A connection replaced by one with newer credentials stops, and
// the Instances that used it are woken. Connections idle for Limits.Idle are closed first.
func (cs *Clusters) Get(k Key, version string, secret types.NamespacedName, config func() (*rest.Config, error)) (*Cluster, error) {
	cs.Sweep(time.Now())
	cs.mu.Lock()
	e, ok := cs.m[k]
	if ok && e.version == version {
		// Used now: a sweep before the Instance reads through it must not close it.
		e.cluster.touch()
		cs.mu.Unlock()
		return e.cluster, nil
	}
	cs.mu.Unlock()
	rc, err := config()
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	o := cs.options(k)
	cs.mu.Unlock()
	c, err := cs.connect(rc, o)
	if err != nil {
		cs.release(k)
		return nil, err
	}
	cs.mu.Lock()
	old, ok := cs.m[k]
	if ok && old.version == version {
		// Another Instance connected meanwhile: use its connection.
		cs.mu.Unlock()
		c.Stop()
		cs.release(k)
		return old.cluster, nil
	}
	cs.m[k] = &entry{version: version, secret: secret, cluster: c}
	cs.mu.Unlock()
	if ok {
		cs.stop(k, old)
	}
	return c, nil
}

// options are the Options of a new connection of config k, taking a share of its tenant's;
// cs.mu is held.
func (cs *Clusters) options(k Key) Options {
	o := cs.opts
	o.conn = connection{label: Label(k)}
	if k.Namespace == "" {
		// A ClusterProviderConfig's target is the platform's: its wakes are not limited.
		o.conn.waker = newWaker(o.Wake, 0)
		return o
	}
	t, ok := cs.tenants[k.Namespace]
	if !ok {
		what := "the ProviderConfigs of namespace " + k.Namespace
		t = &tenant{
			ledger:     &ledger{what: what, flag: "--max-tenant-memory-mb", limit: limitOrMax(o.Limits.TenantMemory)},
			waker:      newWaker(o.Wake, o.Limits.WakeRate),
			namespaces: &watchedNamespaces{what: what},
		}
		cs.tenants[k.Namespace] = t
	}
	t.users++
	o.conn.ledger = &ledger{what: "ProviderConfig " + k.Namespace + "/" + k.Name, flag: "--max-target-memory-mb", limit: limitOrMax(o.Limits.ConfigMemory), parent: t.ledger}
	o.conn.namespaces = t.namespaces
	o.conn.waker = t.waker
	return o
}

// limitOrMax is n, or no limit when n is not positive.
func limitOrMax(n int64) int64 {
	if n <= 0 {
		return int64(^uint64(0) >> 1)
	}
	return n
}

// release gives back a connection's share of config k's tenant.
func (cs *Clusters) release(k Key) {
	if k.Namespace == "" {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if t, ok := cs.tenants[k.Namespace]; ok {
		if t.users--; t.users <= 0 {
			delete(cs.tenants, k.Namespace)
		}
	}
}

// stop stops connection e of config k, which is no longer in cs.m, and wakes the Instances
// that used it.
func (cs *Clusters) stop(k Key, e *entry) {
	instances := e.cluster.Instances()
	e.cluster.Stop()
	cs.release(k)
	e.cluster.wake(instances)
}

// Drop stops the connection of config k, whose credentials are gone, and wakes the
// Instances that used it so that they say so.
func (cs *Clusters) Drop(k Key) {
	cs.mu.Lock()
	e, ok := cs.m[k]
	delete(cs.m, k)
	cs.mu.Unlock()
	if ok {
		cs.stop(k, e)
	}
}

// Sweep closes the connections no Instance has used for Limits.Idle before now.
func (cs *Clusters) Sweep(now time.Time) {
	if cs.opts.Limits.Idle <= 0 {
		return
	}
	cs.mu.Lock()
	idle := map[Key]*entry{}
	for k, e := range cs.m {
		if used, inUse := e.cluster.Used(); !inUse && now.Sub(used) >= cs.opts.Limits.Idle {
			idle[k] = e
			delete(cs.m, k)
		}
	}
	cs.mu.Unlock()
	for k, e := range idle {
		cs.stop(k, e)
	}
}

// Start sweeps idle connections every tenth of Limits.Idle until ctx is done: a manager's
// Runnable.
func (cs *Clusters) Start(ctx context.Context) error {
	if cs.opts.Limits.Idle <= 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(max(cs.opts.Limits.Idle/10, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			cs.Sweep(now)
		}
	}
}

// Len is how many connections are open.
func (cs *Clusters) Len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.m)
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
