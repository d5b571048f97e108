package instance

import (
	"context"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kubeconfig"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// External manages one Instance's objects in its target cluster, for one reconcile.
type External struct {
	// Target is the Instance's target cluster.
	Target Target
	// Settings are the defaults and limits the Instance is resolved with.
	Settings resolve.Settings
	// Refused says why the Instance may not place what it asks where it asks (its
	// ProviderConfig, its target namespace); nothing is read or changed while it is set.
	Refused field.ErrorList
	// Recorder records events on availability transitions; nil records none.
	Recorder event.Recorder
	// Transitions remember what each Instance last reported, so that a transition is
	// announced once; nil compares with the Instance's status only.
	Transitions *Transitions
	// Drifts remember the drift each Instance was last judged to have, and on what; nil
	// judges every time.
	Drifts *Drifts

	// observed is what Observe found, for the Create, Update or Delete that follows it in
	// the same reconcile: they write only over what Observe judged the Instance's.
	observed observed
}

// observed is what exists in the target cluster under an Instance's names; nil when absent.
type observed struct {
	deployment *appsv1.Deployment
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
}

// each calls f with the kind and object of every object that exists.
func (o observed) each(f func(kind string, obj client.Object)) {
	if o.deployment != nil {
		f("Deployment", o.deployment)
	}
	if o.service != nil {
		f("Service", o.service)
	}
	if o.pdb != nil {
		f("PodDisruptionBudget", o.pdb)
	}
}

// live returns the observed object of kind, nil when absent.
func (o observed) live(kind string) client.Object {
	switch {
	case kind == "Deployment" && o.deployment != nil:
		return o.deployment
	case kind == "Service" && o.service != nil:
		return o.service
	case kind == "PodDisruptionBudget" && o.pdb != nil:
		return o.pdb
	}
	return nil
}

// keep keeps only the objects whose ownership (to the Instance whose UID is uid) is one of
// those listed.
func (o observed) keep(uid types.UID, owned ...ownership) observed {
	var out observed
	if o.deployment != nil && slices.Contains(owned, ownershipOf(o.deployment, uid)) {
		out.deployment = o.deployment
	}
	if o.service != nil && slices.Contains(owned, ownershipOf(o.service, uid)) {
		out.service = o.service
	}
	if o.pdb != nil && slices.Contains(owned, ownershipOf(o.pdb, uid)) {
		out.pdb = o.pdb
	}
	return out
}

// instanceKey is the Instance's own name, which the watches wake.
func instanceKey(cr *v1alpha1.Instance) types.NamespacedName {
	return types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}
}

// observeOnly reports whether the Instance only observes (managementPolicies: [Observe]).
func observeOnly(cr *v1alpha1.Instance) bool {
	return managed.NewManagementPoliciesResolver(true, cr.GetManagementPolicies()).ShouldOnlyObserve()
}

// Observe reads the Instance's Deployment, Service and PodDisruptionBudget and reports
// whether they exist and whether the fields the Instance owns still hold what the renderer
// produces. It sets the Instance's status and its Ready and Available conditions from the
// Deployment, and records an event when availability changes. It is an error, reported on
// Synced, when the spec is invalid or refused, when an object under the Instance's names is
// someone else's (naming it), and when the target cannot be observed (Available then says
// Unreachable, and turns back once it can be observed). An Instance that only observes is
// judged against the live Deployment's replicas.
func (e *External) Observe(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalObservation, error) {
	name, namespace := remote.Target(cr)
	key := types.NamespacedName{Namespace: namespace, Name: name}
	previous := cr.GetCondition(v1alpha1.TypeAvailable)

	if meta.WasDeleted(cr) {
		// Deleting needs the names only, so an Instance whose spec went bad is still
		// deleted; and only what is the Instance's own counts.
		o, err := e.observe(ctx, cr, key, nil)
		if err != nil {
			return managed.ExternalObservation{}, e.unreachable(cr, err)
		}
		e.observed = o.keep(cr.GetUID(), ours)
		exists := e.observed.deployment != nil || e.observed.service != nil || e.observed.pdb != nil
		if !exists {
			e.Target.Forget(namespace, instanceKey(cr))
			e.Transitions.Forget(cr.GetUID())
			e.Drifts.Forget(cr.GetUID())
		}
		return managed.ExternalObservation{ResourceExists: exists}, nil
	}

	if len(e.Refused) > 0 {
		msg := resolve.Message(e.Refused)
		e.report(cr, previous, readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: msg}, cr.GetCondition(xpv2.TypeReady).Reason == "")
		return managed.ExternalObservation{}, errors.New(msg)
	}

	m, errs := remote.Memcached(cr, e.Settings)
	if len(errs) > 0 {
		// Report what runs, judged against its own replica count, and leave it alone. With
		// nothing running, Ready too says why nothing will be.
		var o observed
		if namespace != "" {
			var err error
			if o, err = e.observe(ctx, cr, key, nil); err != nil {
				return managed.ExternalObservation{}, e.unreachable(cr, err)
			}
		}
		d := o.keep(cr.GetUID(), ours, legacy).deployment
		if observeOnly(cr) {
			d = o.deployment
		}
		msg := resolve.Message(errs)
		e.report(cr, previous, readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: msg}, d == nil)
		if d != nil {
			ready, _ := remote.Conditions(readiness.Available(d, readiness.Wanted(d), e.Transitions.Reason(cr.GetUID(), string(previous.Reason))), cr.GetGeneration())
			cr.SetConditions(ready)
		}
		cr.Status.AtProvider = atProvider(d, render.Memcached{Name: name, Namespace: namespace})
		return managed.ExternalObservation{}, errors.New(msg)
	}

	if observeOnly(cr) {
		// Nothing will be written: judge the live Deployment, whoever made it, by its own
		// replicas, and publish what it runs.
		o, err := e.observe(ctx, cr, key, nil, e.Target.Client())
		if err != nil {
			return managed.ExternalObservation{}, e.unreachable(cr, err)
		}
		d := o.deployment
		want := readiness.Want{Replicas: m.Size}
		if d != nil {
			want = readiness.Wanted(d)
		}
		e.report(cr, previous, readiness.Available(d, want, e.Transitions.Reason(cr.GetUID(), string(previous.Reason))), true)
		cr.Status.AtProvider = atProvider(d, m)
		return managed.ExternalObservation{ResourceExists: d != nil, ResourceUpToDate: true, ConnectionDetails: render.ConnectionDetails(m)}, nil
	}

	need := map[string]bool{"Deployment": true, "Service": true, "PodDisruptionBudget": render.NeedsPodDisruptionBudget(m)}
	o, err := e.observe(ctx, cr, key, need)
	if err != nil {
		return managed.ExternalObservation{}, e.unreachable(cr, err)
	}
	adopt := cr.Spec.AdoptionPolicy == v1alpha1.AdoptionPolicyAdopt
	if !adopt {
		var conflicts []string
		o.each(func(kind string, obj client.Object) {
			if need[kind] && ownershipOf(obj, cr.GetUID()) == foreign {
				conflicts = append(conflicts, conflict(kind, obj))
			}
		})
		if len(conflicts) > 0 {
			msg := strings.Join(conflicts, "; ")
			e.report(cr, previous, readiness.Condition{Reason: v1alpha1.ReasonConflict, Message: msg}, true)
			cr.Status.AtProvider = atProvider(nil, m)
			return managed.ExternalObservation{}, errors.New(msg)
		}
	}
	e.observed = o.keep(cr.GetUID(), ours, legacy)
	if adopt {
		e.observed = o
	}
	diff, err := e.Drifts.Judge(cr, e.observed, m, func() (string, error) { return drift(e.observed, m, cr) })
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	e.report(cr, previous, readiness.Available(e.observed.deployment, readiness.Wanted(render.Deployment(m)), e.Transitions.Reason(cr.GetUID(), string(previous.Reason))), true)
	cr.Status.AtProvider = atProvider(e.observed.deployment, m)
	return managed.ExternalObservation{
		ResourceExists:    e.observed.deployment != nil || e.observed.service != nil || e.observed.pdb != nil,
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
// someone else changed, moves fields an earlier provider applied to the Instance's own
// field manager, and removes a PodDisruptionBudget of the Instance's that the spec no longer
// needs.
func (e *External) Update(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalUpdate, error) {
	cd, err := e.apply(ctx, cr)
	return managed.ExternalUpdate{ConnectionDetails: cd}, err
}

// Delete deletes the Instance's own objects, each only while it is the object Observe
// judged the Instance's (a UID precondition): what is already gone, or was replaced by
// someone else's meanwhile, is fine. The managed reconciler calls it only when the
// management policies include Delete.
func (e *External) Delete(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalDelete, error) {
	var errs []error
	e.observed.each(func(kind string, obj client.Object) {
		uid := obj.GetUID()
		err := e.Target.Client().Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !kerrors.IsNotFound(err) && !kerrors.IsConflict(err) {
			errs = append(errs, errors.Wrapf(err, "cannot delete %s %s/%s", kind, obj.GetNamespace(), obj.GetName()))
		}
	})
	if len(errs) > 0 {
		return managed.ExternalDelete{}, kubeconfig.Trim(errs[0])
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the connection is shared by every Instance of the config.
func (e *External) Disconnect(_ context.Context) error { return nil }

// observe reads the three objects under key. Without live, it reads what the watches hold,
// and reads an object that is not there directly when need says the Instance needs it: it
// may be absent, someone else's (which the watches do not hold), or applied a moment ago.
// With live, it reads each object directly. An absent object is nil.
func (e *External) observe(ctx context.Context, cr *v1alpha1.Instance, key types.NamespacedName, need map[string]bool, live ...client.Reader) (observed, error) {
	watched, err := e.Target.Watched(ctx, key.Namespace, instanceKey(cr))
	if err != nil {
		return observed{}, err
	}
	direct := e.Target.Client()
	read := func(kind string, obj client.Object) (bool, error) {
		if len(live) > 0 && live[0] != nil {
			found, err := get(ctx, live[0], key, obj)
			return found, errors.Wrapf(err, "cannot get %s %s", kind, key)
		}
		found, err := get(ctx, watched, key, obj)
		if err == nil && !found && need[kind] {
			found, err = get(ctx, direct, key, obj)
		}
		return found, errors.Wrapf(err, "cannot get %s %s", kind, key)
	}
	var o observed
	d, s, p := &appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}
	if ok, err := read("Deployment", d); err != nil {
		return observed{}, err
	} else if ok {
		o.deployment = d
	}
	if ok, err := read("Service", s); err != nil {
		return observed{}, err
	} else if ok {
		o.service = s
	}
	if ok, err := read("PodDisruptionBudget", p); err != nil {
		return observed{}, err
	} else if ok {
		o.pdb = p
	}
	return o, nil
}

// get reads the object at key into obj, reporting whether it exists.
func get(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object) (bool, error) {
	if err := c.Get(ctx, key, obj); err != nil {
		if kerrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// apply resolves the Instance and server-side applies what it renders with the Instance's
// own field manager, each object stamped as the Instance's and, when Observe found it,
// guarded by its UID. It then judges the Instance from the Deployment the apply returned, so
// that a change just applied reads Progressing or Resizing rather than Available with the
// old Deployment's numbers.
func (e *External) apply(ctx context.Context, cr *v1alpha1.Instance) (managed.ConnectionDetails, error) {
	if len(e.Refused) > 0 {
		// Observe reports this first; refusing again keeps Create and Update safe alone.
		return nil, errors.New(resolve.Message(e.Refused))
	}
	m, errs := remote.Memcached(cr, e.Settings)
	if len(errs) > 0 {
		return nil, errors.New(resolve.Message(errs))
	}
	c := e.Target.Client()
	manager := FieldManager(cr)
	var errMigrate error
	e.observed.each(func(kind string, obj client.Object) {
		if errMigrate != nil || ownershipOf(obj, cr.GetUID()) != legacy {
			return
		}
		patch, err := migration(obj, manager)
		if err == nil && patch != nil {
			err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
		}
		errMigrate = errors.Wrapf(err, "cannot move %s %s/%s to field manager %s", kind, obj.GetNamespace(), obj.GetName(), manager)
	})
	if errMigrate != nil {
		return nil, kubeconfig.Trim(errMigrate)
	}

	previous := cr.GetCondition(v1alpha1.TypeAvailable)
	var applied *appsv1.Deployment
	for _, o := range render.Objects(m) {
		u, err := render.ToApply(o)
		if err != nil {
			return nil, err
		}
		stamp(u, cr)
		kind := kindOf(o)
		if live := e.observed.live(kind); live != nil {
			u.SetUID(live.GetUID())
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
			return nil, kubeconfig.Trim(errors.Wrapf(err, "cannot apply %s %s/%s", kind, m.Namespace, m.Name))
		}
		if kind == "Deployment" {
			applied = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, applied); err != nil {
				return nil, errors.Wrapf(err, "cannot read the applied Deployment %s/%s", m.Namespace, m.Name)
			}
		}
	}
	if pdb := e.observed.pdb; pdb != nil && !render.NeedsPodDisruptionBudget(m) {
		// A budget over a single replica would block every node drain.
		err := c.Delete(ctx, pdb, client.Preconditions{UID: &pdb.UID})
		if err != nil && !kerrors.IsNotFound(err) {
			return nil, kubeconfig.Trim(errors.Wrapf(err, "cannot delete PodDisruptionBudget %s/%s", pdb.Namespace, pdb.Name))
		}
	}
	if applied != nil {
		e.report(cr, previous, readiness.Available(applied, readiness.Wanted(render.Deployment(m)), e.Transitions.Reason(cr.GetUID(), string(previous.Reason))), true)
		cr.Status.AtProvider = atProvider(applied, m)
	}
	return render.ConnectionDetails(m), nil
}

// report sets the Instance's Available condition to c and, with ready, its Ready condition,
// and records an event when availability changed in a way worth a person's attention: never
// one per reconcile.
func (e *External) report(cr *v1alpha1.Instance, previous xpv2.Condition, c readiness.Condition, ready bool) {
	r, a := remote.Conditions(c, cr.GetGeneration())
	if ready {
		cr.SetConditions(r, a)
	} else {
		cr.SetConditions(a)
	}
	// A message matters for the reasons whose message says what to fix; for the others a
	// new count is no new transition.
	key := func(reason, message string) string {
		if reason == readiness.ReasonInvalidSpec || reason == v1alpha1.ReasonConflict {
			return reason + "\x00" + message
		}
		return reason
	}
	if !e.Transitions.Changed(cr.GetUID(), key(string(previous.Reason), previous.Message), key(c.Reason, c.Message)) || e.Recorder == nil {
		return
	}
	switch c.Reason {
	case readiness.ReasonAvailable:
		e.Recorder.Event(cr, event.Normal(event.Reason(c.Reason), "Memcached is available: "+c.Message))
	case readiness.ReasonResizing:
		e.Recorder.Event(cr, event.Normal(event.Reason(c.Reason), "Memcached is "+c.Message))
	case readiness.ReasonDegraded:
		e.Recorder.Event(cr, event.Warning(event.Reason(c.Reason), errors.New("Memcached is degraded: "+c.Message)))
	case readiness.ReasonInvalidSpec, v1alpha1.ReasonConflict:
		e.Recorder.Event(cr, event.Warning(event.Reason(c.Reason), errors.New(c.Message)))
	case v1alpha1.ReasonUnreachable:
		e.Recorder.Event(cr, event.Warning(event.Reason(c.Reason), errors.New("cannot observe the Memcached: "+c.Message)))
	}
}

// unreachable reports on the Instance that the provider cannot observe its target (Ready
// Unavailable, Available False/Unreachable with the error) and returns the error, trimmed.
func (e *External) unreachable(cr *v1alpha1.Instance, err error) error {
	err = kubeconfig.Trim(err)
	e.report(cr, cr.GetCondition(v1alpha1.TypeAvailable), readiness.Condition{Reason: v1alpha1.ReasonUnreachable, Message: err.Error()}, true)
	return err
}

// drift describes how what the Instance owns differs from what m renders; empty means up to
// date. Only the Instance's field manager's fields are compared, so defaults the API server
// fills in (terminationMessagePath, clusterIPs, ...) and fields other controllers add never
// count, while a field someone changed by hand does: the change moved it to their manager.
// An object an earlier provider made, or one being adopted, is never up to date.
func drift(o observed, m render.Memcached, cr *v1alpha1.Instance) (string, error) {
	manager := FieldManager(cr)
	var diffs []string
	add := func(kind, d string) {
		if d != "" {
			diffs = append(diffs, kind+" "+m.Namespace+"/"+m.Name+": "+d)
		}
	}
	compare := func(kind string, diff func() (string, error)) error {
		live := o.live(kind)
		switch {
		case live == nil:
			add(kind, "does not exist")
		case ownershipOf(live, cr.GetUID()) == legacy:
			add(kind, "moves from field manager "+LegacyFieldManager+" to "+manager)
		case ownershipOf(live, cr.GetUID()) == foreign:
			add(kind, "is adopted (spec.adoptionPolicy: Adopt)")
		default:
			d, err := diff()
			if err != nil {
				return errors.Wrapf(err, "cannot compare %s %s/%s", kind, m.Namespace, m.Name)
			}
			add(kind, d)
		}
		return nil
	}
	if err := compare("Deployment", func() (string, error) {
		return ownedDiff(render.Deployment(m), o.deployment, cr, appsv1ac.ExtractDeployment, cmpopts.IgnoreFields(appsv1ac.DeploymentApplyConfiguration{}, "Status"))
	}); err != nil {
		return "", err
	}
	if err := compare("Service", func() (string, error) {
		return ownedDiff(render.Service(m), o.service, cr, corev1ac.ExtractService, cmpopts.IgnoreFields(corev1ac.ServiceApplyConfiguration{}, "Status"))
	}); err != nil {
		return "", err
	}
	switch {
	case render.NeedsPodDisruptionBudget(m):
		if err := compare("PodDisruptionBudget", func() (string, error) {
			return ownedDiff(render.PodDisruptionBudget(m), o.pdb, cr, policyv1ac.ExtractPodDisruptionBudget, cmpopts.IgnoreFields(policyv1ac.PodDisruptionBudgetApplyConfiguration{}, "Status"))
		}); err != nil {
			return "", err
		}
	case o.pdb != nil:
		add("PodDisruptionBudget", "is no longer needed")
	}
	return strings.Join(diffs, "\n"), nil
}

// ownedDiff diffs what the provider would apply for cr (desired, stamped as cr's) with the
// fields cr's field manager owns in the live object, both as apply configurations.
// Quantities compare by value ("0.5" equals "500m"), through resource.Quantity's Equal
// method. opts leave out the status, which the provider never applies (controller-runtime's
// fake client lists an empty status under every applier nonetheless).
func ownedDiff[O render.Object, AC any](desired, live O, cr *v1alpha1.Instance, extract func(O, string) (*AC, error), opts ...cmp.Option) (string, error) {
	want := new(AC)
	u, err := render.ToApply(desired)
	if err != nil {
		return "", err
	}
	stamp(u, cr)
	b, err := json.Marshal(u.Object)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(b, want); err != nil {
		return "", err
	}
	got, err := extract(live, FieldManager(cr))
	if err != nil {
		return "", err
	}
	return cmp.Diff(want, got, opts...), nil
}

// atProvider is the status of a Memcached whose Deployment is d (nil when absent).
func atProvider(d *appsv1.Deployment, m render.Memcached) v1alpha1.InstanceObservation {
	var o v1alpha1.InstanceObservation
	if d != nil {
		o.Replicas = d.Status.Replicas
		o.AvailableReplicas = d.Status.AvailableReplicas
		o.Size = d.Spec.Replicas
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == render.ContainerName {
				o.Image = c.Image
			}
		}
	}
	if m.Namespace != "" {
		o.Endpoint = render.Endpoint(m)
		o.Selector = labels.SelectorFromSet(render.SelectorLabels(m)).String()
	}
	return o
}

// kindOf names a rendered object's kind for messages; the renderer sets type metadata.
func kindOf(o render.Object) string {
	return o.GetObjectKind().GroupVersionKind().Kind
}
