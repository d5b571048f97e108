package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// LegacyFieldManager is the one field manager every Instance applied with before each got
// its own. An object that carries it but not the ownership label was made by an earlier
// provider for an Instance under these names: the Instance takes it over, moving the
// manager's fields to its own manager, rather than reporting a conflict.
const LegacyFieldManager = "memcached-provider"

// maxFieldManagerLength is the API server's limit on a field manager's name.
const maxFieldManagerLength = 128

// FieldManager is the field manager an Instance applies with in target clusters:
// memcached-provider/<namespace>/<name>, shortened with a hash when longer than the API
// server allows. With one manager per Instance, drift is judged on the Instance's own fields
// only: two Instances can never take each other's fields for their own.
func FieldManager(cr *v1alpha1.Instance) string {
	m := LegacyFieldManager + "/" + cr.GetNamespace() + "/" + cr.GetName()
	if len(m) <= maxFieldManagerLength {
		return m
	}
	sum := sha256.Sum256([]byte(cr.GetNamespace() + "/" + cr.GetName()))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	return m[:maxFieldManagerLength-len(suffix)] + suffix
}

// ownership says whose an object under an Instance's names is.
type ownership int

const (
	// ours: labelled with the Instance's UID.
	ours ownership = iota
	// legacy: made by an earlier provider for an Instance under these names (unlabelled,
	// applied by LegacyFieldManager). The Instance takes it over.
	legacy
	// foreign: anyone else's: unlabelled, or labelled with another Instance's UID. Only
	// one that no live Instance owns may be adopted (Adoption.liveOwner).
	foreign
)

// ownershipOf says whose o is, to the Instance whose UID is uid.
func ownershipOf(o metav1.Object, uid types.UID) ownership {
	switch l, ok := o.GetLabels()[v1alpha1.LabelInstanceUID]; {
	case ok && l == string(uid):
		return ours
	case ok:
		return foreign
	}
	for _, f := range o.GetManagedFields() {
		if f.Manager == LegacyFieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			return legacy
		}
	}
	return foreign
}

// An Adoption is what an Instance may take over of what is not its own: whether its config
// allows adoption at all (the platform's decision on a ClusterProviderConfig, the tenant's
// on the ProviderConfig of its own credentials), which config says so, and which Instances
// are live, whose objects are never adopted.
type Adoption struct {
	// Allowed is the config's spec.adoption: Allowed.
	Allowed bool
	// Config names the config, "ClusterProviderConfig workload-a", for messages.
	Config string
	// Instances reads the control plane's Instances, from a cache, to tell an object
	// labelled by a live Instance from one an Instance that no longer exists left; nil
	// takes every label for a live Instance's.
	Instances client.Reader
}

// liveOwner returns the Instance ("<namespace>/<name>") whose UID o is labelled with, when
// that Instance exists in the control plane, and whether it does. Such an object is that
// Instance's, and never adopted, whatever its annotation says (anyone who may edit o may
// change it). An Instance that was deleted, even one recreated under the same name (a new
// UID), owns nothing any more. Without Instances to read, every label counts as a live
// Instance's, named by the annotation.
func (a Adoption) liveOwner(ctx context.Context, o metav1.Object) (string, bool, error) {
	uid, ok := o.GetLabels()[v1alpha1.LabelInstanceUID]
	if !ok {
		return "", false, nil
	}
	if a.Instances == nil {
		return o.GetAnnotations()[v1alpha1.AnnotationInstance], true, nil
	}
	l := &v1alpha1.InstanceList{}
	if err := a.Instances.List(ctx, l); err != nil {
		return "", false, errors.Wrapf(err, "cannot list Instances to tell whether the one labelled %s=%s still exists", v1alpha1.LabelInstanceUID, uid)
	}
	for _, i := range l.Items {
		if string(i.GetUID()) == uid {
			return i.GetNamespace() + "/" + i.GetName(), true, nil
		}
	}
	return "", false, nil
}

// conflict says, for the Instance's Synced condition and events, why o (of kind k) is not
// the Instance's: whose it is and, when the Instance could take it over, how. An object
// of a live Instance (owner, when live) is that Instance's, and nothing is suggested.
func (a Adoption) conflict(k managedKind, o metav1.Object, owner string, live, adopt bool) string {
	what := k.kind + " " + o.GetNamespace() + "/" + o.GetName() + " exists and is not this Instance's: "
	uid, labelled := o.GetLabels()[v1alpha1.LabelInstanceUID]
	switch {
	case live:
		return what + "it belongs to Instance " + owner + " (" + v1alpha1.LabelInstanceUID + "=" + uid + ")"
	case labelled:
		what += "it is labelled " + v1alpha1.LabelInstanceUID + "=" + uid + ", an Instance that no longer exists"
	default:
		what += "it has no label " + v1alpha1.LabelInstanceUID
	}
	switch {
	case !k.adoptable:
		return what + "; a " + k.kind + " is never adopted, since whoever made it knows what it holds: delete it, and the provider makes its own"
	case !a.Allowed:
		return what + "; " + a.Config + " does not allow adoption (its spec.adoption is not Allowed)"
	case !adopt:
		return what + "; set spec.adoptionPolicy: Adopt to take it over"
	}
	return what
}

// stamp marks an object to apply as the Instance's: its UID label, which the provider's
// watches select and which makes the object its own, and an annotation naming it.
func stamp(u *unstructured.Unstructured, cr *v1alpha1.Instance) {
	meta.AddLabels(u, map[string]string{v1alpha1.LabelInstanceUID: string(cr.GetUID())})
	meta.AddAnnotations(u, map[string]string{v1alpha1.AnnotationInstance: cr.GetNamespace() + "/" + cr.GetName()})
}

// migration is the JSON patch that moves LegacyFieldManager's applied fields of o to
// manager, guarded by o's resourceVersion so that it applies to what was read or not at all;
// nil when o has nothing to move. Renaming the entry, rather than applying under the new name
// beside it, leaves no field co-owned by a manager nobody applies with any more, which would
// keep a field the Instance stops setting from ever being removed. The same patch labels o
// with uid, the Instance's: renamed, the entry no longer marks o as an earlier provider's, so
// without the label an apply that then fails (the Deployment controller wrote o meanwhile)
// would leave o unlabelled and unmarked, a conflict at every reconcile after.
func migration(o metav1.Object, manager string, uid types.UID) ([]byte, error) {
	fields := o.GetManagedFields()
	has := false
	for _, f := range fields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			has = true
		}
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(fields))
	moved := false
	for _, f := range fields {
		if f.Manager == LegacyFieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			moved = true
			if has {
				// The Instance applied under its own name already; its next apply with force
				// takes back whatever only the old entry held.
				continue
			}
			f.Manager = manager
		}
		out = append(out, f)
	}
	if !moved {
		return nil, nil
	}
	labels := map[string]string{}
	for k, v := range o.GetLabels() {
		labels[k] = v
	}
	labels[v1alpha1.LabelInstanceUID] = string(uid)
	return json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": o.GetResourceVersion()},
		{"op": "replace", "path": "/metadata/managedFields", "value": out},
		{"op": "add", "path": "/metadata/labels", "value": labels},
	})
}
