package instance

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/render"
)

// Drifts remember, per Instance, the drift last judged and what it was judged on: the
// Memcached the Instance resolves to and the versions of its live objects. Judging drift means
// extracting the Instance's fields from each object's managed fields and diffing them, a few
// milliseconds per Instance; an Instance polled while nothing changed judges nothing again.
// They hold at most instanceMemoSize Instances: one evicted is judged again at its next
// reconcile. A nil Drifts judges every time. The workqueue never reconciles one Instance
// twice at once, so reading and then recording its verdict needs no lock of its own.
type Drifts struct {
	last *lru.Cache[types.UID, judged]
}

// judged is a drift verdict and the basis it was judged on.
type judged struct {
	on   lru.Key
	diff string
}

// NewDrifts returns Drifts that remember nothing yet.
func NewDrifts() *Drifts {
	return &Drifts{last: lru.New[types.UID, judged](instanceMemoSize)}
}

// Judge returns the drift of o from m for cr, judging it with judge unless it was judged on
// the same Memcached and the same versions of the same objects before.
func (d *Drifts) Judge(cr *v1alpha1.Instance, o observed, m render.Memcached, judge func() (string, error)) (string, error) {
	if d == nil {
		return judge()
	}
	on, err := basis(cr, o, m)
	if err != nil {
		// What cannot be keyed is judged, and not remembered.
		return judge()
	}
	if j, ok := d.last.Get(cr.GetUID()); ok && j.on == on {
		return j.diff, nil
	}
	diff, err := judge()
	if err != nil {
		return "", err
	}
	d.last.Add(cr.GetUID(), judged{on: on, diff: diff})
	return diff, nil
}

// Forget forgets a deleted Instance.
func (d *Drifts) Forget(uid types.UID) {
	if d == nil {
		return
	}
	d.last.Remove(uid)
}

// driftBasis is what a drift verdict depends on: the Instance's identity (its field manager
// and ownership stamp), the Memcached it resolves to (every field, so no change of the spec
// can reuse a verdict judged on another), and each live object's UID and version.
type driftBasis struct {
	Instance  types.NamespacedName
	UID       types.UID
	Memcached render.Memcached
	Live      []liveVersion
}

// liveVersion is one live object's version, under its role.
type liveVersion struct {
	Role            string
	UID             types.UID
	ResourceVersion string
}

// basis is the key of cr's driftBasis. lru.KeyOf is a SHA-256 digest: the Memcached holds
// the credentials and the TLS private key, which must not live on in the memo of every
// Instance's verdict.
func basis(cr *v1alpha1.Instance, o observed, m render.Memcached) (lru.Key, error) {
	b := driftBasis{Instance: instanceKey(cr), UID: cr.GetUID(), Memcached: m, Live: make([]liveVersion, 0, len(o))}
	o.each(func(k managedKind, obj client.Object) {
		b.Live = append(b.Live, liveVersion{Role: k.role, UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()})
	})
	return lru.KeyOf(b)
}
