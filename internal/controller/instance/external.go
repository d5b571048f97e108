package instance

import (
	"context"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kubeconfig"
	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/ownedfields"
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
	// ProviderConfig, its target namespace); nothing is read or changed while it is set,
	// and a deleted Instance is let go without touching the target cluster.
	Refused field.ErrorList
	// Adoption is what the Instance may take over of what is not its own.
	Adoption Adoption
	// Recorder records events on availability transitions; nil records none.
	Recorder event.Recorder
	// Transitions remember what each Instance last reported, so that a transition is
	// announced once; nil compares with the Instance's status only.
	Transitions *Transitions
	// Drifts remember the drift each Instance was last judged to have, and on what; nil
	// judges every time.
	Drifts *Drifts
	// Credentials keep each Instance's generated credentials until its auth Secret is
	// observed; nil remembers none.
	Credentials *credentials.Store
	// Expiries remember when each Instance's TLS certificate expires; nil remembers none.
	Expiries *Expiries
	// Now is the time TLS certificates are checked at; nil is the clock.
	Now func() time.Time

	// observed is what Observe found, for the Create, Update or Delete that follows it in
	// the same reconcile: they write only over what Observe judged the Instance's.
	observed observed
	// secured is the Memcached Observe resolved and completed with its credentials and TLS
	// pair, for the Create or Update that follows: they apply exactly what Observe judged
	// and published.
	secured *render.Memcached
}

// instanceKey is the Instance's own name, which the watches wake.
func instanceKey(cr *v1alpha1.Instance) types.NamespacedName {
	return types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}
}

// tlsSecret is the TLS Secret the Instance names, whose changes wake it; "" for none.
func tlsSecret(cr *v1alpha1.Instance) string {
	if t := cr.Spec.ForProvider.TLS; t != nil {
		return t.SecretName
	}
	return ""
}

// onlyObserves reports whether the Instance only observes (managementPolicies: [Observe]).
func onlyObserves(cr *v1alpha1.Instance) bool {
	return managed.NewManagementPoliciesResolver(true, cr.GetManagementPolicies()).ShouldOnlyObserve()
}

// Observe reads the Instance's objects (managedKinds) and reports whether they exist and
// whether the fields the Instance owns still hold what the renderer produces, and the
// connection details: endpoint, host and port, with auth the credentials of its auth Secret
// (generated once per rotation, never by a reconcile that finds them), and with TLS tls and
// the TLS Secret's ca.crt. A TLS Secret that is missing or unusable is an invalid spec. It sets the Instance's status and its Ready and Available conditions from the
// Deployment, and records an event when availability changes. It is an error, reported on
// Synced, when the spec is invalid or refused, when an object under the Instance's names is
// someone else's (naming it), and when the target cannot be observed (Available then says
// Unreachable, and turns back once it can be observed). Each mode has its own function:
// deleting, refused, invalid, only observing, managing.
func (e *External) Observe(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalObservation, error) {
	if meta.WasDeleted(cr) {
		return e.observeDeleting(ctx, cr)
	}
	if len(e.Refused) > 0 {
		return e.observeRefused(cr)
	}
	m, errs := remote.Memcached(cr, e.Settings)
	switch {
	case len(errs) > 0:
		return e.observeInvalid(ctx, cr, errs)
	case onlyObserves(cr):
		return e.observeOnly(ctx, cr, m)
	default:
		return e.observeManaged(ctx, cr, m)
	}
}

// observeDeleting observes a deleted Instance. Deleting needs the names only, so an Instance
// whose spec went bad is still deleted; and only what is the Instance's own counts. Once
// nothing of it is left, the Instance is forgotten.
func (e *External) observeDeleting(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalObservation, error) {
	key := targetKey(cr)
	if len(e.Refused) > 0 {
		// Its config no longer lets it reach the target namespace: it is let go without
		// touching the target cluster, leaving whatever it made while it was allowed to
		// whoever withdrew the permission.
		e.forget(cr)
		return managed.ExternalObservation{}, nil
	}
	o, _, err := e.observe(ctx, cr, key, nil)
	if err != nil {
		return managed.ExternalObservation{}, e.unreachable(cr, err)
	}
	e.observed = o.keep(cr.GetUID(), ours)
	if !e.observed.exists() {
		e.forget(cr)
	}
	return managed.ExternalObservation{ResourceExists: e.observed.exists()}, nil
}

// forget forgets everything remembered of a deleted Instance, and stops its watches waking it.
func (e *External) forget(cr *v1alpha1.Instance) {
	if e.Target != nil {
		e.Target.Forget(targetKey(cr).Namespace, instanceKey(cr))
	}
	e.Transitions.Forget(cr.GetUID())
	e.Drifts.Forget(cr.GetUID())
	e.Credentials.Forget(string(cr.GetUID()))
	e.Expiries.Forget(cr.GetUID())
}

// observeRefused reports that the Instance may not place what it asks where it asks, and
// reads nothing.
func (e *External) observeRefused(cr *v1alpha1.Instance) (managed.ExternalObservation, error) {
	msg := resolve.Message(e.Refused)
	e.report(cr, readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: msg}, cr.GetCondition(xpv2.TypeReady).Reason == "")
	return managed.ExternalObservation{}, errors.New(msg)
}

// observeInvalid reports an invalid spec, and what runs, judged against its own replica
// count, leaving it alone. With nothing running, Ready too says why nothing will be.
func (e *External) observeInvalid(ctx context.Context, cr *v1alpha1.Instance, errs field.ErrorList) (managed.ExternalObservation, error) {
	key := targetKey(cr)
	var o observed
	if key.Namespace != "" {
		var err error
		if o, _, err = e.observe(ctx, cr, key, nil); err != nil {
			return managed.ExternalObservation{}, e.unreachable(cr, err)
		}
	}
	d := o.keep(cr.GetUID(), ours, legacy).deployment()
	if onlyObserves(cr) {
		d = o.deployment()
	}
	msg := resolve.Message(errs)
	e.report(cr, readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: msg}, d == nil)
	if d != nil {
		ready, _ := remote.Conditions(e.judge(cr, d, readiness.Wanted(d)), cr.GetGeneration())
		cr.SetConditions(ready)
	}
	cr.Status.AtProvider = atProvider(d, render.Memcached{Name: key.Name, Namespace: key.Namespace})
	return managed.ExternalObservation{}, errors.New(msg)
}

// observeOnly observes an Instance that writes nothing: it judges the live Deployment,
// whoever made it, by its own replicas, read directly, and publishes where it runs, never
// credentials or a CA it did not make.
func (e *External) observeOnly(ctx context.Context, cr *v1alpha1.Instance, m render.Memcached) (managed.ExternalObservation, error) {
	o, err := e.observeLive(ctx, cr, targetKey(cr))
	if err != nil {
		return managed.ExternalObservation{}, e.unreachable(cr, err)
	}
	d := o.deployment()
	want := readiness.Want{Replicas: m.Size}
	if d != nil {
		want = readiness.Wanted(d)
	}
	e.report(cr, e.judge(cr, d, want), true)
	cr.Status.AtProvider = atProvider(d, m)
	return managed.ExternalObservation{ResourceExists: d != nil, ResourceUpToDate: true, ConnectionDetails: published(publicDetails(m))}, nil
}

// observeManaged observes an Instance the provider manages: what of its objects exists, a
// conflict with someone else's under its names, its credentials and TLS pair, and how what
// it owns drifted from what m renders with them.
func (e *External) observeManaged(ctx context.Context, cr *v1alpha1.Instance, m render.Memcached) (managed.ExternalObservation, error) {
	need := needs(m)
	o, watched, err := e.observe(ctx, cr, targetKey(cr), need)
	if err != nil {
		return managed.ExternalObservation{}, e.unreachable(cr, err)
	}
	claimed, msg, err := e.claim(ctx, o, need, cr)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if msg != "" {
		e.report(cr, readiness.Condition{Reason: v1alpha1.ReasonConflict, Message: msg}, true)
		cr.Status.AtProvider = atProvider(nil, m)
		return managed.ExternalObservation{}, errors.New(msg)
	}
	m, errs, err := e.secure(ctx, cr, m, claimed, watched)
	switch {
	case err != nil:
		return managed.ExternalObservation{}, e.unreachable(cr, err)
	case len(errs) > 0:
		return e.observeInvalid(ctx, cr, errs)
	}
	e.observed, e.secured = claimed, &m
	diff, err := e.Drifts.Judge(cr, e.observed, m, func() (string, error) { return drift(e.observed, m, cr) })
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	e.report(cr, e.explained(ctx, cr, e.observed.deployment(), m), true)
	cr.Status.AtProvider = atProvider(e.observed.deployment(), m)
	return managed.ExternalObservation{
		ResourceExists:    e.observed.exists(),
		ResourceUpToDate:  diff == "",
		ConnectionDetails: published(render.ConnectionDetails(m)),
		Diff:              diff,
	}, nil
}

// claim sorts what o holds under the Instance's names. Its own objects and an earlier
// provider's are kept; so is an object it needs that no live Instance owns, when its kind
// may be adopted, it asks to adopt (spec.adoptionPolicy: Adopt) and its config allows
// adoption. Any other object it needs is a conflict, named in the message: a Secret someone
// else made under its names (credentials they know) is never taken over, nor used. Objects
// that are not its own and that it does not need are left out, so that nothing is done to
// them.
func (e *External) claim(ctx context.Context, o observed, need map[string]bool, cr *v1alpha1.Instance) (observed, string, error) {
	adopt := cr.Spec.AdoptionPolicy == v1alpha1.AdoptionPolicyAdopt
	var c []string
	var err error
	out := observed{}
	o.each(func(k managedKind, obj client.Object) {
		if err != nil {
			return
		}
		if w := k.ownership(obj, cr.GetUID()); w == ours || w == legacy {
			out[k.role] = obj
			return
		}
		if !need[k.role] {
			return
		}
		owner, live, lerr := e.Adoption.liveOwner(ctx, obj)
		if err = lerr; err != nil {
			return
		}
		if k.adoptable && adopt && e.Adoption.Allowed && !live {
			out[k.role] = obj
			return
		}
		c = append(c, e.Adoption.conflict(k, obj, owner, live, adopt))
	})
	return out, strings.Join(c, "; "), err
}

// targetKey is where the Instance's objects live in the target cluster.
func targetKey(cr *v1alpha1.Instance) types.NamespacedName {
	name, namespace := remote.Target(cr)
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// judge is the Available verdict on the Memcached whose Deployment is d (nil when absent)
// and wants w, from the reason the Instance last reported.
func (e *External) judge(cr *v1alpha1.Instance, d *appsv1.Deployment, w readiness.Want) readiness.Condition {
	return readiness.Available(d, w, e.Transitions.Reason(cr.GetUID(), string(cr.GetCondition(v1alpha1.TypeAvailable).Reason)))
}

// Create server-side applies the Memcached's objects.
func (e *External) Create(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalCreation, error) {
	cd, err := e.write(ctx, cr)
	return managed.ExternalCreation{ConnectionDetails: cd}, err
}

// Update server-side applies the Memcached's objects with force, taking back any field
// someone else changed, moves fields an earlier provider applied to the Instance's own
// field manager, and removes a PodDisruptionBudget of the Instance's that the spec no longer
// needs.
func (e *External) Update(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalUpdate, error) {
	cd, err := e.write(ctx, cr)
	return managed.ExternalUpdate{ConnectionDetails: cd}, err
}

// Delete deletes the Instance's own objects, each only while it is the object Observe
// judged the Instance's (a UID precondition): what is already gone, or was replaced by
// someone else's meanwhile, is fine. The managed reconciler calls it only when the
// management policies include Delete.
func (e *External) Delete(ctx context.Context, cr *v1alpha1.Instance) (managed.ExternalDelete, error) {
	var errs []error
	e.observed.each(func(k managedKind, obj client.Object) {
		uid := obj.GetUID()
		err := e.Target.Client().Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !kerrors.IsNotFound(err) && !kerrors.IsConflict(err) {
			errs = append(errs, errors.Wrapf(err, "cannot delete %s %s/%s", k.kind, obj.GetNamespace(), obj.GetName()))
		}
	})
	if len(errs) > 0 {
		return managed.ExternalDelete{}, kubeconfig.Trim(errs[0])
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: the connection is shared by every Instance of the config.
func (e *External) Disconnect(_ context.Context) error { return nil }

// observe reads the Instance's objects under key from what the watches hold, and reads an
// object that is not there directly when need says the Instance needs it: it may be absent,
// someone else's (which the watches do not hold), or applied a moment ago. An absent object
// is left out. It returns the watches' reader too, for the TLS Secret the Instance names.
func (e *External) observe(ctx context.Context, cr *v1alpha1.Instance, key types.NamespacedName, need map[string]bool) (observed, client.Reader, error) {
	watched, err := e.Target.Watched(ctx, key.Namespace, instanceKey(cr), tlsSecret(cr))
	if err != nil {
		return nil, nil, err
	}
	direct := e.Target.Client()
	o, err := readAll(key, func(k managedKind, at types.NamespacedName, obj client.Object) (bool, error) {
		found, err := get(ctx, watched, at, obj)
		if err == nil && !found && need[k.role] {
			found, err = get(ctx, direct, at, obj)
		}
		return found, err
	})
	return o, watched, err
}

// observeLive reads the Deployment under key, which an Instance that only observes judges,
// directly from the target cluster, whoever it belongs to (the watches hold only the
// Instances' own), and nothing else: no Secret it did not make. It still registers with the
// namespace's watches, like observe, so that the Instance is woken by them and is
// Unreachable while the namespace cannot be observed. An absent object is left out.
func (e *External) observeLive(ctx context.Context, cr *v1alpha1.Instance, key types.NamespacedName) (observed, error) {
	if _, err := e.Target.Watched(ctx, key.Namespace, instanceKey(cr), tlsSecret(cr)); err != nil {
		return nil, err
	}
	direct := e.Target.Client()
	return readAll(key, func(k managedKind, at types.NamespacedName, obj client.Object) (bool, error) {
		if k.role != roleDeployment {
			return false, nil
		}
		return get(ctx, direct, at, obj)
	})
}

// readAll reads the object of every managed kind under key (the base name) with read, which
// reports whether the object exists.
func readAll(key types.NamespacedName, read func(k managedKind, at types.NamespacedName, obj client.Object) (bool, error)) (observed, error) {
	o := observed{}
	for _, k := range managedKinds {
		at := types.NamespacedName{Namespace: key.Namespace, Name: k.name(key.Name)}
		obj := k.object()
		found, err := read(k, at, obj)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot get %s %s", k.kind, at)
		}
		if found {
			o[k.role] = obj
		}
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

// write resolves the Instance and brings the target cluster to what it renders: it
// migrates what an earlier provider applied, applies every object, and prunes what the spec
// no longer needs. It then judges the Instance from the Deployment the apply returned, so
// that a change just applied reads Progressing or Resizing rather than Available with the
// old Deployment's numbers. It applies what Observe secured (credentials, TLS pair), or,
// called alone, secures it itself.
func (e *External) write(ctx context.Context, cr *v1alpha1.Instance) (managed.ConnectionDetails, error) {
	if len(e.Refused) > 0 {
		// Observe reports this first; refusing again keeps Create and Update safe alone.
		return nil, errors.New(resolve.Message(e.Refused))
	}
	m, err := e.desired(ctx, cr)
	if err != nil {
		return nil, err
	}
	if err := e.migrate(ctx, cr); err != nil {
		return nil, err
	}
	applied, err := e.apply(ctx, cr, m)
	if err != nil {
		return nil, err
	}
	if err := e.prune(ctx, cr, m); err != nil {
		return nil, err
	}
	if applied != nil {
		e.report(cr, e.explained(ctx, cr, applied, m), true)
		cr.Status.AtProvider = atProvider(applied, m)
	}
	return published(render.ConnectionDetails(m)), nil
}

// published is what the Instance publishes of details: every connection key, those m does not
// have (a password after a change to client certificates, a client key after one back, the
// credentials once auth is off) empty. crossplane-runtime publishes with a merge patch, which
// adds and changes keys but never removes one: without the empty values, the connection Secret
// would keep, and the claim read, credentials and a TLS setting the Memcached no longer has.
func published(details map[string][]byte) managed.ConnectionDetails {
	out := make(managed.ConnectionDetails, len(connectionKeys))
	for _, k := range connectionKeys {
		out[k] = []byte{}
	}
	for k, v := range details {
		out[k] = v
	}
	return out
}

// connectionKeys are every key an Instance publishes.
var connectionKeys = render.ConnectionKeys()

// desired is the Memcached to apply: what Observe secured, or the Instance resolved and
// secured now.
func (e *External) desired(ctx context.Context, cr *v1alpha1.Instance) (render.Memcached, error) {
	m, errs := remote.Memcached(cr, e.Settings)
	if len(errs) > 0 {
		return render.Memcached{}, errors.New(resolve.Message(errs))
	}
	if e.secured != nil {
		return *e.secured, nil
	}
	watched, err := e.Target.Watched(ctx, m.Namespace, instanceKey(cr), tlsSecret(cr))
	if err != nil {
		return render.Memcached{}, kubeconfig.Trim(err)
	}
	m, errs, err = e.secure(ctx, cr, m, e.observed, watched)
	switch {
	case err != nil:
		return render.Memcached{}, kubeconfig.Trim(err)
	case len(errs) > 0:
		return render.Memcached{}, errors.New(resolve.Message(errs))
	}
	return m, nil
}

// migrate moves the fields an earlier provider applied to the objects Observe found to the
// Instance's own field manager.
func (e *External) migrate(ctx context.Context, cr *v1alpha1.Instance) error {
	manager := FieldManager(cr)
	var errs error
	e.observed.each(func(k managedKind, obj client.Object) {
		if errs != nil || k.ownership(obj, cr.GetUID()) != legacy {
			return
		}
		errs = errors.Wrapf(e.move(ctx, cr, obj, manager), "cannot move %s %s/%s to field manager %s", k.kind, obj.GetNamespace(), obj.GetName(), manager)
	})
	return kubeconfig.Trim(errs)
}

// maxMoves is how many times move patches an object that keeps changing under it.
const maxMoves = 4

// move moves obj's legacy fields to manager. The patch is guarded by the resourceVersion it
// was computed from, and an object an earlier provider made is being written by others too
// (the Deployment controller updates its status while it rolls out): when the patch fails
// and the object changed meanwhile, move reads it again and moves what it holds now, so
// that a busy object migrates in one reconcile rather than over a growing backoff.
func (e *External) move(ctx context.Context, cr *v1alpha1.Instance, obj client.Object, manager string) error {
	c := e.Target.Client()
	for n := 1; ; n++ {
		patch, err := migration(obj, manager, cr.GetUID())
		if err != nil || patch == nil {
			return err
		}
		uid, read := obj.GetUID(), obj.GetResourceVersion()
		err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
		if err == nil || n == maxMoves {
			return err
		}
		if gerr := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); gerr != nil || obj.GetResourceVersion() == read {
			return err
		}
		if obj.GetUID() != uid || ownershipOf(obj, cr.GetUID()) != legacy {
			// Replaced, labelled or moved by someone else meanwhile: the next reconcile
			// judges whose it is now, before anything is applied to it.
			return errors.New("it changed hands while being moved")
		}
	}
}

// apply server-side applies what m renders with the Instance's own field manager and force,
// each object stamped as the Instance's and, when Observe found it, guarded by its UID. It
// returns the Deployment as applied.
func (e *External) apply(ctx context.Context, cr *v1alpha1.Instance, m render.Memcached) (*appsv1.Deployment, error) {
	c := e.Target.Client()
	var applied *appsv1.Deployment
	for _, k := range managedKinds {
		if !k.needed(m) {
			continue
		}
		o := k.render(m)
		u, err := render.ToApply(o)
		if err != nil {
			return nil, err
		}
		stamp(u, cr)
		if live := e.observed[k.role]; live != nil {
			u.SetUID(live.GetUID())
			if k.ownership(live, cr.GetUID()) == foreign {
				// Adopted as Observe read it, or not at all: had someone (another
				// Instance) labelled it since, the apply fails on its resourceVersion.
				u.SetResourceVersion(live.GetResourceVersion())
			}
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager(cr)), client.ForceOwnership); err != nil {
			return nil, kubeconfig.Trim(errors.Wrapf(err, "cannot apply %s %s/%s", k.kind, m.Namespace, o.GetName()))
		}
		if k.role == roleDeployment {
			applied = &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, applied); err != nil {
				return nil, errors.Wrapf(err, "cannot read the applied Deployment %s/%s", m.Namespace, m.Name)
			}
		}
	}
	return applied, nil
}

// prune deletes the Instance's objects that m no longer needs: its PodDisruptionBudget
// (a budget over a single replica would block every node drain), its NetworkPolicy, its auth
// Secret and its TLS pair's copy once the spec turns them off. Only what Observe judged the
// Instance's is deleted, each guarded by its UID.
func (e *External) prune(ctx context.Context, cr *v1alpha1.Instance, m render.Memcached) error {
	var errs error
	e.observed.each(func(k managedKind, obj client.Object) {
		if errs != nil || k.needed(m) {
			return
		}
		if w := k.ownership(obj, cr.GetUID()); w != ours && w != legacy {
			return
		}
		uid := obj.GetUID()
		if err := e.Target.Client().Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !kerrors.IsNotFound(err) {
			errs = kubeconfig.Trim(errors.Wrapf(err, "cannot delete %s %s/%s", k.kind, obj.GetNamespace(), obj.GetName()))
		}
	})
	return errs
}

// report sets the Instance's Available condition to c and, with ready, its Ready condition,
// and records an event when availability changed in a way worth a person's attention (the
// readiness package's table of reasons says which and how): never one per reconcile.
func (e *External) report(cr *v1alpha1.Instance, c readiness.Condition, ready bool) {
	previous := cr.GetCondition(v1alpha1.TypeAvailable)
	r, a := remote.Conditions(c, cr.GetGeneration())
	if ready {
		cr.SetConditions(r, a)
	} else {
		cr.SetConditions(a)
	}
	if !e.Transitions.Changed(cr.GetUID(), readiness.StateOf(string(previous.Reason), previous.Message), readiness.StateOf(c.Reason, c.Message)) || e.Recorder == nil {
		return
	}
	switch severity, msg := readiness.Announcement(c); severity {
	case readiness.Normal:
		e.Recorder.Event(cr, event.Normal(event.Reason(c.Reason), msg))
	case readiness.Warning:
		e.Recorder.Event(cr, event.Warning(event.Reason(c.Reason), errors.New(msg)))
	}
}

// unreachable reports on the Instance that the provider cannot observe its target (Ready
// Unavailable, Available False/Unreachable with the error) and returns the error, trimmed.
func (e *External) unreachable(cr *v1alpha1.Instance, err error) error {
	err = kubeconfig.Trim(err)
	e.report(cr, readiness.Condition{Reason: v1alpha1.ReasonUnreachable, Message: err.Error()}, true)
	return err
}

// drift describes how what the Instance owns differs from what m renders; empty means up to
// date. Only the Instance's field manager's fields are compared, so defaults the API server
// fills in (terminationMessagePath, clusterIPs, ...) and fields other controllers add never
// count, while a field someone changed by hand does: the change moved it to their manager.
// An object an earlier provider made, or one being adopted, is never up to date; nor is one
// the spec no longer needs.
func drift(o observed, m render.Memcached, cr *v1alpha1.Instance) (string, error) {
	manager := FieldManager(cr)
	var diffs []string
	for _, k := range managedKinds {
		at := k.kind + " " + m.Namespace + "/" + k.name(m.Name) + ": "
		live := o[k.role]
		if !k.needed(m) {
			if live != nil {
				diffs = append(diffs, at+"is no longer needed")
			}
			continue
		}
		switch {
		case live == nil:
			diffs = append(diffs, at+"does not exist")
		case k.ownership(live, cr.GetUID()) == legacy:
			diffs = append(diffs, at+"moves from field manager "+LegacyFieldManager+" to "+manager)
		case k.ownership(live, cr.GetUID()) == foreign:
			diffs = append(diffs, at+"is adopted (spec.adoptionPolicy: Adopt)")
		default:
			d, err := k.diff(k.render(m), live, cr)
			if err != nil {
				return "", errors.Wrapf(err, "cannot compare %s %s/%s", k.kind, m.Namespace, k.name(m.Name))
			}
			if d != "" {
				diffs = append(diffs, at+d)
			}
		}
	}
	return strings.Join(diffs, "\n"), nil
}

// ownedDiff diffs what the provider would apply for cr (desired, stamped as cr's) with the
// fields cr's field manager owns in the live object (ownedfields, the function's reader of
// what Crossplane applied too), both as apply configurations of type AC, the owned part with
// the identity managedFields leave out. Quantities compare by value ("0.5" equals "500m"),
// through resource.Quantity's Equal method. opts leave out the status, which the provider
// never applies (controller-runtime's fake client lists an empty status under every applier
// nonetheless).
func ownedDiff[AC any](desired render.Object, live client.Object, cr *v1alpha1.Instance, opts ...cmp.Option) (string, error) {
	decode := func(m map[string]any) (*AC, error) {
		ac := new(AC)
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return ac, json.Unmarshal(b, ac)
	}
	u, err := render.ToApply(desired)
	if err != nil {
		return "", err
	}
	stamp(u, cr)
	want, err := decode(u.Object)
	if err != nil {
		return "", errors.Wrap(err, "cannot decode the desired object")
	}
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return "", errors.Wrap(err, "cannot convert the live object")
	}
	// A typed object read back carries no type; desired's is its.
	l["apiVersion"], l["kind"] = u.GetAPIVersion(), u.GetKind()
	owned, _, err := ownedfields.Owned(l, FieldManager(cr))
	if err != nil {
		return "", errors.Wrap(err, "cannot read the live object's fields the Instance owns")
	}
	if owned == nil {
		owned = map[string]any{}
	}
	owned["apiVersion"], owned["kind"] = u.GetAPIVersion(), u.GetKind()
	md, _ := owned["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		owned["metadata"] = md
	}
	md["name"], md["namespace"] = live.GetName(), live.GetNamespace()
	got, err := decode(owned)
	if err != nil {
		return "", errors.Wrap(err, "cannot decode the live object's fields the Instance owns")
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
