package instance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/cluster"
)

// informers is a cache whose informers deliver the events a test makes, and whose List reads
// a fake client.
type informers struct {
	cache.Cache
	list client.Reader

	mu   sync.Mutex
	byGK map[schema.GroupKind]*informer
}

func (c *informers) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	return c.list.List(ctx, l, opts...)
}

func (c *informers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	return c.informer(kindOfObject(obj)), nil
}

func (c *informers) informer(gk schema.GroupKind) *informer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byGK[gk] == nil {
		c.byGK[gk] = &informer{}
	}
	return c.byGK[gk]
}

// kindOfObject is the kind of the objects the wake rules and watchSecrets watch.
func kindOfObject(obj client.Object) schema.GroupKind {
	switch obj.(type) {
	case *v1alpha1.ClusterProviderConfig:
		return schema.GroupKind{Group: v1alpha1.Group, Kind: v1alpha1.ClusterProviderConfigKind}
	case *v1alpha1.ProviderConfig:
		return schema.GroupKind{Group: v1alpha1.Group, Kind: v1alpha1.ProviderConfigKind}
	case *v1alpha1.ProviderConfigUsage:
		return schema.GroupKind{Group: v1alpha1.Group, Kind: "ProviderConfigUsage"}
	}
	return obj.GetObjectKind().GroupVersionKind().GroupKind()
}

// informer records its handlers.
type informer struct {
	cache.Informer

	mu       sync.Mutex
	handlers []toolscache.ResourceEventHandler
}

func (i *informer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
	return nil, nil
}

func (i *informer) each(f func(toolscache.ResourceEventHandler)) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, h := range i.handlers {
		f(h)
	}
}

// runner is a manager that runs what is added to it until the test ends.
type runner struct {
	manager.Manager
	cache *informers
	ctx   context.Context
}

func (m runner) GetCache() cache.Cache { return m.cache }

func (m runner) Add(r manager.Runnable) error {
	go func() { _ = r.Start(m.ctx) }()
	return nil
}

// A change is what a test does to one watched object.
type change struct {
	kind schema.GroupKind
	// initial delivers o as part of the informer's first listing.
	initial bool
	// old is what o was before an update; both nil and not deleted is a create.
	old, o  client.Object
	deleted bool
}

func (e change) deliver(h toolscache.ResourceEventHandler) {
	switch {
	case e.deleted:
		h.OnDelete(e.o)
	case e.old != nil:
		h.OnUpdate(e.old, e.o)
	default:
		h.OnAdd(e.o, e.initial)
	}
}

func TestWakes(t *testing.T) {
	// A settled Instance is polled rarely, so what it is judged by in the control plane wakes
	// it when it changes: exactly the Instances a change concerns, and none for a change that
	// cannot change a verdict (a resync, a ProviderConfig's status, another Composition).
	compositionGK := schema.GroupKind{Group: CompositionListGVK.Group, Kind: "Composition"}
	secretGK := schema.GroupKind{Kind: "Secret"}
	namespaceGK := schema.GroupKind{Kind: "Namespace"}
	cpcGK := schema.GroupKind{Group: v1alpha1.Group, Kind: v1alpha1.ClusterProviderConfigKind}
	pcGK := schema.GroupKind{Group: v1alpha1.Group, Kind: v1alpha1.ProviderConfigKind}
	usageGK := schema.GroupKind{Group: v1alpha1.Group, Kind: "ProviderConfigUsage"}

	composition := func(rv string, generation int64, labels map[string]string) client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(CompositionListGVK.GroupVersion().WithKind("Composition"))
		u.SetName("memcached")
		u.SetResourceVersion(rv)
		u.SetGeneration(generation)
		u.SetLabels(labels)
		return u
	}
	policy := map[string]string{v1alpha1.LabelInstancePolicy: "true"}
	cpc := func(name, rv string, generation int64) client.Object {
		return &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Generation: generation}}
	}
	pc := func(namespace, rv string, generation int64) client.Object {
		return &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "own", ResourceVersion: rv, Generation: generation}}
	}
	ns := func(name, rv string, labels map[string]string) client.Object {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Labels: labels}}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		return m
	}
	secret := func(namespace, rv string, owners ...metav1.OwnerReference) client.Object {
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "sessions-memcached", ResourceVersion: rv, OwnerReferences: owners}}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		return m
	}
	usage := func(namespace, instance string) client.Object {
		u := &v1alpha1.ProviderConfigUsage{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "usage-" + instance, ResourceVersion: "1"}}
		u.ResourceReference = xpv2.TypedReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.InstanceKind, Name: instance}
		return u
	}
	ownedBy := func(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "uid", Controller: &controller}
	}
	instances := []client.Object{
		instanceUsing("platform", "a", v1alpha1.ClusterProviderConfigKind, "shared"),
		instanceUsing("team-a", "b", v1alpha1.ProviderConfigKind, "own"),
		instanceUsing("team-b", "c", v1alpha1.ClusterProviderConfigKind, "other"),
	}
	a := types.NamespacedName{Namespace: "platform", Name: "a"}
	b := types.NamespacedName{Namespace: "team-a", Name: "b"}
	c := types.NamespacedName{Namespace: "team-b", Name: "c"}

	cases := map[string]struct {
		reason string
		event  change
		want   []types.NamespacedName
	}{
		"PolicyEdited": {
			reason: "An edit of the labelled Composition's spec changes every Instance's policy.",
			event:  change{kind: compositionGK, old: composition("1", 1, policy), o: composition("2", 2, policy)},
			want:   []types.NamespacedName{a, b, c},
		},
		"PolicyLabelled": {
			reason: "Labelling a Composition makes its Input every Instance's policy.",
			event:  change{kind: compositionGK, old: composition("1", 1, nil), o: composition("2", 1, policy)},
			want:   []types.NamespacedName{a, b, c},
		},
		"PolicyUnlabelled": {
			reason: "Unlabelling the policy Composition leaves every Instance without a policy.",
			event:  change{kind: compositionGK, old: composition("1", 1, policy), o: composition("2", 1, nil)},
			want:   []types.NamespacedName{a, b, c},
		},
		"PolicyCreated": {
			reason: "A second labelled Composition refuses every Instance.",
			event:  change{kind: compositionGK, o: composition("1", 1, policy)},
			want:   []types.NamespacedName{a, b, c},
		},
		"PolicyDeleted": {
			reason: "Deleting the policy Composition leaves every Instance without a policy.",
			event:  change{kind: compositionGK, o: composition("1", 1, policy), deleted: true},
			want:   []types.NamespacedName{a, b, c},
		},
		"PolicyOtherLabel": {
			reason: "Another label on the labelled Composition (GitOps tooling's) does not change the policy.",
			event:  change{kind: compositionGK, old: composition("1", 1, policy), o: composition("2", 1, map[string]string{v1alpha1.LabelInstancePolicy: "true", "argocd.argoproj.io/instance": "platform"})},
		},
		"PolicyMetadataOnly": {
			reason: "An annotation on the labelled Composition does not change the policy.",
			event:  change{kind: compositionGK, old: composition("1", 1, policy), o: composition("2", 1, policy)},
		},
		"OtherComposition": {
			reason: "Another Composition is no Instance's policy.",
			event:  change{kind: compositionGK, old: composition("1", 1, nil), o: composition("2", 2, nil)},
		},
		"PolicyInitialList": {
			reason: "What is there when the provider starts wakes nothing: every Instance is reconciled then.",
			event:  change{kind: compositionGK, o: composition("1", 1, policy), initial: true},
		},
		"PolicyResync": {
			reason: "A resync changes nothing.",
			event:  change{kind: compositionGK, old: composition("1", 1, policy), o: composition("1", 1, policy)},
		},
		"ClusterProviderConfigEdited": {
			reason: "A ClusterProviderConfig's spec decides where the Instances naming it may go.",
			event:  change{kind: cpcGK, old: cpc("shared", "1", 1), o: cpc("shared", "2", 2)},
			want:   []types.NamespacedName{a},
		},
		"ClusterProviderConfigDeleted": {
			reason: "The Instances naming a deleted ClusterProviderConfig can no longer reach their cluster.",
			event:  change{kind: cpcGK, o: cpc("shared", "1", 1), deleted: true},
			want:   []types.NamespacedName{a},
		},
		"ClusterProviderConfigStatus": {
			reason: "A ClusterProviderConfig's status changes with every Instance that starts using it, which must not wake them all.",
			event:  change{kind: cpcGK, old: cpc("shared", "1", 1), o: cpc("shared", "2", 1)},
		},
		"ProviderConfigEdited": {
			reason: "A namespaced ProviderConfig serves only the Instances of its namespace.",
			event:  change{kind: pcGK, old: pc("team-a", "1", 1), o: pc("team-a", "2", 2)},
			want:   []types.NamespacedName{b},
		},
		"ProviderConfigOfAnotherNamespace": {
			reason: "A ProviderConfig named like another namespace's is not the one its Instances use.",
			event:  change{kind: pcGK, old: pc("team-b", "1", 1), o: pc("team-b", "2", 2)},
		},
		"UsageDeleted": {
			reason: "A ProviderConfigUsage deleted by hand is recorded again at once, so that the config in use cannot be deleted.",
			event:  change{kind: usageGK, o: usage("team-a", "b"), deleted: true},
			want:   []types.NamespacedName{b},
		},
		"UsageOfAnotherNamespace": {
			reason: "A usage names an Instance of its own namespace only.",
			event:  change{kind: usageGK, o: usage("team-b", "b"), deleted: true},
		},
		"UsageCreated": {
			reason: "An Instance records its own usage: that wakes nothing.",
			event:  change{kind: usageGK, o: usage("team-a", "b")},
		},
		"NamespaceRelabelled": {
			reason: "A namespace's labels decide which ClusterProviderConfigs serve its Instances.",
			event:  change{kind: namespaceGK, old: ns("team-b", "1", nil), o: ns("team-b", "2", map[string]string{"allowed": "true"})},
			want:   []types.NamespacedName{c},
		},
		"NamespaceAnnotated": {
			reason: "Nothing but a namespace's labels is read.",
			event:  change{kind: namespaceGK, old: ns("team-b", "1", nil), o: ns("team-b", "2", nil)},
		},
		"ConnectionSecretDeleted": {
			reason: "An Instance's connection Secret deleted by hand is published again at once.",
			event:  change{kind: secretGK, o: secret("team-a", "1", ownedBy(v1alpha1.SchemeGroupVersion.String(), v1alpha1.InstanceKind, "b", true)), deleted: true},
			want:   []types.NamespacedName{b},
		},
		"SecretOfAnotherController": {
			reason: "A Secret controlled by something else, or only owned by an Instance, is no Instance's connection Secret.",
			event: change{kind: secretGK, old: secret("team-a", "1", ownedBy("v1", "ConfigMap", "b", true), ownedBy(v1alpha1.SchemeGroupVersion.String(), v1alpha1.InstanceKind, "b", false)),
				o: secret("team-a", "2", ownedBy("v1", "ConfigMap", "b", true), ownedBy(v1alpha1.SchemeGroupVersion.String(), v1alpha1.InstanceKind, "b", false))},
		},
		"ConnectionSecretResync": {
			reason: "A resync of a connection Secret changes nothing.",
			event:  change{kind: secretGK, old: secret("team-a", "1", ownedBy(v1alpha1.SchemeGroupVersion.String(), v1alpha1.InstanceKind, "b", true)), o: secret("team-a", "1", ownedBy(v1alpha1.SchemeGroupVersion.String(), v1alpha1.InstanceKind, "b", true))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &informers{list: controlPlane(t, instances...), byGK: map[schema.GroupKind]*informer{}}
			mgr := runner{cache: c, ctx: ctx}
			var mu sync.Mutex
			var got []types.NamespacedName
			wake := func(n types.NamespacedName) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, n)
			}
			if err := watchControlPlane(mgr, wake); err != nil {
				t.Fatal(err)
			}
			if err := watchSecrets(mgr, cluster.NewClusters(cluster.Options{}), wake); err != nil {
				t.Fatal(err)
			}
			// Every watch registers its handler once the manager has started it.
			deadline := time.Now().Add(10 * time.Second)
			for !registered(c, len(wakeRules)+1) {
				if time.Now().After(deadline) {
					t.Fatal("the watches did not start")
				}
				time.Sleep(time.Millisecond)
			}
			c.informer(tc.event.kind).each(tc.event.deliver)

			mu.Lock()
			defer mu.Unlock()
			slices.SortFunc(got, func(x, y types.NamespacedName) int { return strings.Compare(x.String(), y.String()) })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nwoken Instances: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// registered reports whether c has at least kinds informers and every one has a handler.
func registered(c *informers, kinds int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byGK) < kinds {
		return false
	}
	for _, i := range c.byGK {
		i.mu.Lock()
		n := len(i.handlers)
		i.mu.Unlock()
		if n == 0 {
			return false
		}
	}
	return true
}

// instanceUsing is an Instance namespace/name naming the ProviderConfig of kind and name.
func instanceUsing(namespace, name, kind, config string) *v1alpha1.Instance {
	i := &v1alpha1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: kind, Name: config}
	return i
}

func TestWakesNeverBlock(t *testing.T) {
	// A policy change wakes every Instance at once, from an informer's handler: Wake must
	// return however many Instances it wakes and however slowly the controller drains its
	// queue (here: never), or the informers stall. A channel of 1,024 blocked at the 1,025th.
	// The queue merges an Instance woken again before it is reconciled.
	names := func(wakes, distinct int) []types.NamespacedName {
		ns := make([]types.NamespacedName, wakes)
		for i := range ns {
			ns[i] = types.NamespacedName{Namespace: "platform", Name: fmt.Sprintf("cache-%d", i%distinct)}
		}
		return ns
	}
	type args struct {
		// started is whether the controller started the Wakes' source before the wakes.
		started bool
		wakes   []types.NamespacedName
	}
	type want struct {
		queued int
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Thousands": {
			reason: "5,000 Instances woken with nobody reconciling are all queued, without blocking.",
			args:   args{started: true, wakes: names(5000, 5000)},
			want:   want{queued: 5000},
		},
		"Duplicates": {
			reason: "5,000 wakes of 10 Instances queue each once.",
			args:   args{started: true, wakes: names(5000, 10)},
			want:   want{queued: 10},
		},
		"BeforeStart": {
			reason: "Wakes before the controller starts are dropped (it reconciles every Instance when it starts), without blocking.",
			args:   args{wakes: names(5000, 5000)},
			want:   want{queued: 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The queue the controller gives its sources by default.
			q := priorityqueue.New[reconcile.Request]("wakes-" + name)
			defer q.ShutDown()
			w := &Wakes{}
			if tc.args.started {
				if err := w.Source().Start(context.Background(), q); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, n := range tc.args.wakes {
					w.Wake(n)
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("\n%s\nWake(...) blocked: %d wakes did not return in 10s", tc.reason, len(tc.args.wakes))
			}
			if diff := cmp.Diff(tc.want, want{queued: q.Len()}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nWake(...) x %d: -want, +got:\n%s", tc.reason, len(tc.args.wakes), diff)
			}
		})
	}
}
