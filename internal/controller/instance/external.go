package instance

import (
	"context"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/readiness"
	"github.com/example/function-memcached/remote"
	"github.com/example/function-memcached/render"
	"github.com/example/function-memcached/resolve"
)

// External manages one Instance's objects in its target cluster.
type External struct {
	// Kube is a client of the target cluster.
	Kube client.Client
	// Settings are the defaults and limits the Instance is resolved with.
	Settings resolve.Settings
}

// observed is what exists in the target cluster under an Instance's names; nil when absent.
type observed struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
}

// exists is true while anything is left: a half-created Memcached is created the rest of
// the way, and a half-deleted one deleted the rest of the way.
func (o observed) exists() bool {
	return o.deployment != nil || o.service != nil || o.pdb != nil
}

// Observe reads the Instance's Deployment, Service and PodDisruptionBudget and reports
// whether they exist and whether the fields the provider owns still hold what the renderer
// produces. It sets the Instance's status and its Ready and Available conditions from the
// Deployment. An invalid forProvider is an error naming each bad field, value and limit;
// the managed reconciler then neither creates nor updates anything.
func (e *External) Observe(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalObservation, error) {
	name, namespace := remote.Target(cr)
	var o observed
	if namespace != "" {
		var err error
		if o, err = e.observe(ctx, types.NamespacedName{Namespace: namespace, Name: name}); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	if meta.WasDeleted(cr) {
		// Deleting needs the names only, so an Instance whose spec went bad still goes.
		return managed.ExternalObservation{ResourceExists: o.exists()}, nil
	}

	previous := string(cr.GetCondition(v1alpha1.TypeAvailable).Reason)
	m, errs := remote.Memcached(cr, e.Settings)
	if len(errs) > 0 {
		// Report what runs, judged against its own replica count, and leave it alone. With
		// nothing running, Ready too says why nothing will be.
		msg := resolve.Message(errs)
		ready, available := remote.Conditions(readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: msg}, cr.GetGeneration())
		if o.deployment != nil {
			ready, _ = remote.Conditions(readiness.Available(o.deployment, readiness.Wanted(o.deployment), previous), cr.GetGeneration())
		}
		cr.SetConditions(ready, available)
		cr.Status.AtProvider = atProvider(o.deployment, render.Memcached{Name: name, Namespace: namespace})
		return managed.ExternalObservation{}, errors.New(msg)
	}

	diff, err := drift(o, m)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	cr.SetConditions(remote.Conditions(readiness.Available(o.deployment, readiness.Wanted(render.Deployment(m)), previous), cr.GetGeneration()))
	cr.Status.AtProvider = atProvider(o.deployment, m)
	return managed.ExternalObservation{
		ResourceExists:    o.exists(),
		ResourceUpToDate:  diff == "",
		ConnectionDetails: render.ConnectionDetails(m),
		Diff:              diff,
	}, nil
}

// Create server-side applies the Memcached's objects.
func (e *External) Create(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalCreation, error) {
	cd, err := e.apply(ctx, cr)
	return managed.ExternalCreation{ConnectionDetails: cd}, err
}

// Update server-side applies the Memcached's objects with force, taking back any field
// someone else changed, and removes a PodDisruptionBudget the spec no longer needs.
func (e *External) Update(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalUpdate, error) {
	cd, err := e.apply(ctx, cr)
	return managed.ExternalUpdate{ConnectionDetails: cd}, err
}

// Delete deletes the Memcached's objects; what is already gone is fine. The managed
// reconciler calls it only when the management policies include Delete.
func (e *External) Delete(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalDelete, error) {
	name, namespace := remote.Target(cr)
	if namespace == "" {
		return managed.ExternalDelete{}, nil
	}
	om := metav1.ObjectMeta{Namespace: namespace, Name: name}
	for _, o := range []client.Object{
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: om},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: om},
		&policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}, ObjectMeta: om},
	} {
		if err := e.Kube.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); resource.IgnoreNotFound(err) != nil {
			return managed.ExternalDelete{}, errors.Wrapf(err, "cannot delete %s %s/%s", kindOf(o), namespace, name)
		}
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: a client holds no connection the next one could not reuse.
func (e *External) Disconnect(_ context.Context) error { return nil }

// observe reads the three objects under key; an absent one is nil.
func (e *External) observe(ctx context.Context, key types.NamespacedName) (observed, error) {
	var o observed
	var err error
	if o.deployment, err = get[appsv1.Deployment](ctx, e.Kube, key); err != nil {
		return observed{}, errors.Wrapf(err, "cannot get Deployment %s", key)
	}
	if o.service, err = get[corev1.Service](ctx, e.Kube, key); err != nil {
		return observed{}, errors.Wrapf(err, "cannot get Service %s", key)
	}
	if o.pdb, err = get[policyv1.PodDisruptionBudget](ctx, e.Kube, key); err != nil {
		return observed{}, errors.Wrapf(err, "cannot get PodDisruptionBudget %s", key)
	}
	return o, nil
}

// get returns the object at key, or nil when there is none.
func get[T any, P interface {
	*T
	client.Object
}](ctx context.Context, c client.Reader, key types.NamespacedName) (P, error) {
	o := P(new(T))
	if err := c.Get(ctx, key, o); err != nil {
		if kerrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return o, nil
}

// apply resolves the Instance and server-side applies what it renders.
func (e *External) apply(ctx context.Context, cr *v1alpha1.Instance) (managed.ConnectionDetails, error) {
	m, errs := remote.Memcached(cr, e.Settings)
	if len(errs) > 0 {
		// Observe reports this first; resolving again keeps Create and Update safe alone.
		return nil, errors.New(resolve.Message(errs))
	}
	for _, o := range render.Objects(m) {
		u, err := render.ToApply(o)
		if err != nil {
			return nil, err
		}
		if err := e.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return nil, errors.Wrapf(err, "cannot apply %s %s/%s", kindOf(o), m.Namespace, m.Name)
		}
	}
	if !render.NeedsPodDisruptionBudget(m) {
		if err := e.deleteStalePDB(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}); err != nil {
			return nil, err
		}
	}
	return render.ConnectionDetails(m), nil
}

// deleteStalePDB deletes the PodDisruptionBudget a resize to one replica (or turning off high
// availability) leaves behind: a budget over a single replica would block every node drain.
// A budget the provider never applied is someone else's and stays.
func (e *External) deleteStalePDB(ctx context.Context, key types.NamespacedName) error {
	pdb, err := get[policyv1.PodDisruptionBudget](ctx, e.Kube, key)
	if err != nil {
		return errors.Wrapf(err, "cannot get PodDisruptionBudget %s", key)
	}
	if pdb == nil || !ownedByUs(pdb) {
		return nil
	}
	err = e.Kube.Delete(ctx, pdb, client.Preconditions{UID: &pdb.UID})
	return errors.Wrapf(resource.IgnoreNotFound(err), "cannot delete PodDisruptionBudget %s", key)
}

// drift describes how the fields the provider owns differ from what m renders; empty means
// up to date. Only this field manager's fields are compared, so defaults the API server
// fills in (terminationMessagePath, clusterIPs, ...) and fields other controllers add never
// count, while a field someone changed by hand does: the change moved it to their manager.
func drift(o observed, m render.Memcached) (string, error) {
	var diffs []string
	add := func(kind, d string) {
		if d != "" {
			diffs = append(diffs, kind+" "+m.Namespace+"/"+m.Name+": "+d)
		}
	}
	if o.deployment == nil {
		add("Deployment", "does not exist")
	} else {
		d, err := ownedDiff(render.Deployment(m), o.deployment, appsv1ac.ExtractDeployment, cmpopts.IgnoreFields(appsv1ac.DeploymentApplyConfiguration{}, "Status"))
		if err != nil {
			return "", errors.Wrapf(err, "cannot compare Deployment %s/%s", m.Namespace, m.Name)
		}
		add("Deployment", d)
	}
	if o.service == nil {
		add("Service", "does not exist")
	} else {
		d, err := ownedDiff(render.Service(m), o.service, corev1ac.ExtractService, cmpopts.IgnoreFields(corev1ac.ServiceApplyConfiguration{}, "Status"))
		if err != nil {
			return "", errors.Wrapf(err, "cannot compare Service %s/%s", m.Namespace, m.Name)
		}
		add("Service", d)
	}
	switch {
	case render.NeedsPodDisruptionBudget(m) && o.pdb == nil:
		add("PodDisruptionBudget", "does not exist")
	case render.NeedsPodDisruptionBudget(m):
		d, err := ownedDiff(render.PodDisruptionBudget(m), o.pdb, policyv1ac.ExtractPodDisruptionBudget, cmpopts.IgnoreFields(policyv1ac.PodDisruptionBudgetApplyConfiguration{}, "Status"))
		if err != nil {
			return "", errors.Wrapf(err, "cannot compare PodDisruptionBudget %s/%s", m.Namespace, m.Name)
		}
		add("PodDisruptionBudget", d)
	case o.pdb != nil && ownedByUs(o.pdb):
		add("PodDisruptionBudget", "is no longer needed")
	}
	return strings.Join(diffs, "\n"), nil
}

// ownedDiff diffs what the provider would apply (desired) with the fields it owns in the
// live object, both as apply configurations. Quantities compare by value ("0.5" equals
// "500m"), through resource.Quantity's Equal method. opts leave out the status, which the
// provider never applies (controller-runtime's fake client lists an empty status under
// every applier nonetheless).
func ownedDiff[O render.Object, AC any](desired, live O, extract func(O, string) (*AC, error), opts ...cmp.Option) (string, error) {
	want := new(AC)
	u, err := render.ToApply(desired)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, want); err != nil {
		return "", err
	}
	got, err := extract(live, FieldManager)
	if err != nil {
		return "", err
	}
	return cmp.Diff(want, got, opts...), nil
}

// ownedByUs reports whether the provider applied any of o's fields.
func ownedByUs(o metav1.Object) bool {
	for _, f := range o.GetManagedFields() {
		if f.Manager == FieldManager {
			return true
		}
	}
	return false
}

// atProvider is the status of a Memcached whose Deployment is d (nil when absent).
func atProvider(d *appsv1.Deployment, m render.Memcached) v1alpha1.InstanceObservation {
	var o v1alpha1.InstanceObservation
	if d != nil {
		o.Replicas = d.Status.Replicas
		o.AvailableReplicas = d.Status.AvailableReplicas
	}
	if m.Namespace != "" {
		o.Endpoint = render.Endpoint(m)
		o.Selector = labels.SelectorFromSet(render.SelectorLabels(m)).String()
	}
	return o
}

// kindOf names an object's kind for messages. Every object the provider writes has its type
// metadata set: the renderer sets it, and so does Delete.
func kindOf(o client.Object) string {
	return o.GetObjectKind().GroupVersionKind().Kind
}
