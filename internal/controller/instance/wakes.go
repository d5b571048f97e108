package instance

import (
	"context"
	"maps"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// Wakes wake Instances (for the watches of target clusters, changed credentials and the
// control plane) by adding them to the Instance controller's queue, which its Source is
// given when the controller starts. Wake never blocks, so that the informers' handlers
// that call it never stall: the queue has no bound, and merges an Instance woken again
// before it is reconciled, so a policy change that wakes every Instance costs one entry
// each. Wakes before the controller has started are dropped: it reconciles every Instance
// when it starts.
type Wakes struct {
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// Wake adds the Instance n to the controller's queue, if the controller has started.
func (w *Wakes) Wake(n types.NamespacedName) {
	if q := w.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: n})
	}
}

// Source is the controller's source of wakes: starting it gives Wake the queue.
func (w *Wakes) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.queue.Store(&q)
		return nil
	})
}

// A wakeRule says which Instances a change of one kind of control-plane object concerns.
// Together the rules cover everything in the control plane an Instance is judged by besides
// itself: the policy Composition, its (Cluster)ProviderConfig, its namespace's labels and its
// ProviderConfigUsage (the credentials' Secrets and connection Secrets are watchSecrets').
// That is what lets a settled Instance poll rarely (PollIntervalHook): without a rule, a
// change of that kind would wait for the next poll.
type wakeRule struct {
	// what names the kind in errors.
	what string
	// object is the kind, as the cache the controller reads it from holds it.
	object func() client.Object
	// changed reports whether the change from old to o can change how an Instance is
	// judged: old is nil when o was created, o nil when old was deleted.
	changed func(old, o client.Object) bool
	// among narrows the Instances listed to those the change of o can concern, so that a
	// tenant editing its own objects costs a list of its own namespace's Instances only.
	among func(o client.Object) []client.ListOption
	// concerns reports whether the change of o concerns Instance i.
	concerns func(o client.Object, i *v1alpha1.Instance) bool
}

// wakeRules are the control plane's kinds whose changes wake Instances.
var wakeRules = []wakeRule{
	{
		what: "Compositions",
		object: func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(CompositionListGVK.GroupVersion().WithKind("Composition"))
			return u
		},
		// Labelling or unlabelling a Composition changes the policy; so does an edit of the
		// labelled one's spec, creating one labelled or deleting it. Nothing else does.
		changed: func(old, o client.Object) bool {
			switch {
			case old == nil:
				return policyLabelled(o)
			case o == nil:
				return policyLabelled(old)
			case policyLabelled(old) != policyLabelled(o):
				return true
			}
			return policyLabelled(o) && old.GetGeneration() != o.GetGeneration()
		},
		among:    func(client.Object) []client.ListOption { return nil },
		concerns: func(client.Object, *v1alpha1.Instance) bool { return true },
	},
	{
		what:    "ClusterProviderConfigs",
		object:  func() client.Object { return &v1alpha1.ClusterProviderConfig{} },
		changed: specChanged,
		among:   func(client.Object) []client.ListOption { return nil },
		concerns: func(o client.Object, i *v1alpha1.Instance) bool {
			ref := i.GetProviderConfigReference()
			return ref != nil && ref.Kind == v1alpha1.ClusterProviderConfigKind && ref.Name == o.GetName()
		},
	},
	{
		what:    "ProviderConfigs",
		object:  func() client.Object { return &v1alpha1.ProviderConfig{} },
		changed: specChanged,
		among: func(o client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(o.GetNamespace())}
		},
		concerns: func(o client.Object, i *v1alpha1.Instance) bool {
			ref := i.GetProviderConfigReference()
			return ref != nil && ref.Kind == v1alpha1.ProviderConfigKind && ref.Name == o.GetName() && i.GetNamespace() == o.GetNamespace()
		},
	},
	{
		what: "namespaces",
		object: func() client.Object {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
			return m
		},
		// A ClusterProviderConfig's namespaceSelector matches namespaces by their labels. A
		// new namespace has no Instances yet; a deleted one's go with it.
		changed: func(old, o client.Object) bool {
			return old != nil && o != nil && !maps.Equal(old.GetLabels(), o.GetLabels())
		},
		among:    func(o client.Object) []client.ListOption { return []client.ListOption{client.InNamespace(o.GetName())} },
		concerns: func(o client.Object, i *v1alpha1.Instance) bool { return i.GetNamespace() == o.GetName() },
	},
	{
		// An Instance records its use of its ProviderConfig at every reconcile, so that the
		// config cannot be deleted while in use: one deleted by hand is recorded again at once.
		what:    "ProviderConfigUsages",
		object:  func() client.Object { return &v1alpha1.ProviderConfigUsage{} },
		changed: func(_, o client.Object) bool { return o == nil },
		among: func(o client.Object) []client.ListOption {
			return []client.ListOption{client.InNamespace(o.GetNamespace())}
		},
		concerns: usedBy,
	},
}

// usedBy reports whether o is a ProviderConfigUsage of Instance i.
func usedBy(o client.Object, i *v1alpha1.Instance) bool {
	u, ok := o.(*v1alpha1.ProviderConfigUsage)
	if !ok {
		return false
	}
	ref := u.ResourceReference
	return ref.Kind == v1alpha1.InstanceKind && ref.APIVersion == v1alpha1.SchemeGroupVersion.String() && ref.Name == i.GetName() && u.GetNamespace() == i.GetNamespace()
}

// specChanged reports whether o was created, deleted or had its spec changed: a
// ProviderConfig's status changes with every Instance that starts or stops using it, which
// must not wake them all.
func specChanged(old, o client.Object) bool {
	return old == nil || o == nil || old.GetGeneration() != o.GetGeneration()
}

// policyLabelled reports whether o is labelled as the policy of Instances.
func policyLabelled(o client.Object) bool {
	return o.GetLabels()[v1alpha1.LabelInstancePolicy] == "true"
}

// watchControlPlane wakes the Instances each of wakeRules says a change concerns. The
// Instances are listed from the controller's own cache, without copying them, and only on a
// change that matters.
func watchControlPlane(mgr ctrl.Manager, wake func(types.NamespacedName)) error {
	for _, r := range wakeRules {
		if err := onChange(mgr, r.object(), r.what, func(old, o client.Object) {
			if !r.changed(old, o) {
				return
			}
			if o == nil {
				o = old
			}
			l := &v1alpha1.InstanceList{}
			if err := mgr.GetCache().List(context.Background(), l, append(r.among(o), client.UnsafeDisableDeepCopy)...); err != nil {
				return // the cache is not there yet: every Instance is reconciled when it is
			}
			for _, n := range concerned(l.Items, o, r) {
				wake(n)
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// concerned returns the Instances of is that rule r says the change of o concerns.
func concerned(is []v1alpha1.Instance, o client.Object, r wakeRule) []types.NamespacedName {
	var ns []types.NamespacedName
	for i := range is {
		if r.concerns(o, &is[i]) {
			ns = append(ns, types.NamespacedName{Namespace: is[i].GetNamespace(), Name: is[i].GetName()})
		}
	}
	return ns
}

// ConnectionSecretOwner returns the Instance whose connection Secret s is: crossplane-runtime's
// publisher makes it with the Instance as its controller, in the Instance's namespace.
func ConnectionSecretOwner(s metav1.Object) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOf(s)
	if ref == nil || ref.Kind != v1alpha1.InstanceKind || ref.APIVersion != v1alpha1.SchemeGroupVersion.String() {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: s.GetNamespace(), Name: ref.Name}, true
}

// onChange calls changed with every create (old nil), update and delete (o nil) of obj's
// kind in mgr's cache once the manager has started, but not with what is there when it starts
// (every Instance is reconciled then anyway) nor with a resync, which changes nothing. The
// handler is registered as the manager starts, before an informer the controller creates
// can have listed, so no change after its first listing is missed. It does not wait for
// the cache to fill: a kind the provider may not read (a ClusterRole without it) never does,
// and must not keep the controller from starting; the reconciles that read that kind say why
// it cannot be read. A kind that cannot be watched yet (the API server's discovery not
// serving it) is tried again every retry rather than stopping the provider.
func onChange(mgr ctrl.Manager, obj client.Object, what string, changed func(old, o client.Object)) error {
	object := func(o any) (client.Object, bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		c, ok := o.(client.Object)
		return c, ok
	}
	h := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			if n, ok := object(o); ok && !initial {
				changed(nil, n)
			}
		},
		UpdateFunc: func(old, o any) {
			was, ok := object(old)
			n, ok2 := object(o)
			if ok && ok2 && was.GetResourceVersion() != n.GetResourceVersion() {
				changed(was, n)
			}
		},
		DeleteFunc: func(o any) {
			if was, ok := object(o); ok {
				changed(was, nil)
			}
		},
	}
	return errors.Wrapf(mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for {
			inf, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
			if err == nil {
				_, err = inf.AddEventHandler(h)
			}
			if err == nil {
				<-ctx.Done()
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(retry):
			}
		}
	})), "cannot watch %s", what)
}

// retry is how soon onChange tries again to watch a kind it could not.
const retry = 10 * time.Second
