package instance

import (
	"crypto/sha256"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// Drifts remember, per Instance, the drift last judged and what it was judged on: the
// Memcached the Instance resolves to and the versions of its live objects. Judging drift means
// extracting the Instance's fields from each object's managed fields and diffing them, a few
// milliseconds per Instance; an Instance polled while nothing changed judges nothing again.
type Drifts struct {
	mu   sync.Mutex
	last map[types.UID]judged
}

type judged struct {
	on   string
	diff string
}

// NewDrifts returns Drifts that remember nothing yet.
func NewDrifts() *Drifts {
	return &Drifts{last: map[types.UID]judged{}}
}

// Judge returns the drift of o from m for cr, judging it with judge unless it was judged on
// the same Memcached and the same versions of the same objects before.
func (d *Drifts) Judge(cr *v1alpha1.Instance, o observed, m render.Memcached, judge func() (string, error)) (string, error) {
	if d == nil {
		return judge()
	}
	on := basis(cr, o, m)
	d.mu.Lock()
	j, ok := d.last[cr.GetUID()]
	d.mu.Unlock()
	if ok && j.on == on {
		return j.diff, nil
	}
	diff, err := judge()
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	d.last[cr.GetUID()] = judged{on: on, diff: diff}
	d.mu.Unlock()
	return diff, nil
}

// Forget forgets a deleted Instance.
func (d *Drifts) Forget(uid types.UID) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.last, uid)
}

// basis is what a drift verdict depends on: the Instance's identity (its field manager and
// ownership stamp), the Memcached it resolves to (its canonical key, which holds every field,
// so no change of the spec can reuse a verdict judged on another), and each live object's UID
// and version. It is kept as a SHA-256 digest: the key holds the credentials and the TLS
// private key, which must not live on in the map of every Instance's verdict.
func basis(cr *v1alpha1.Instance, o observed, m render.Memcached) string {
	b := make([]byte, 0, 512)
	b = append(b, cr.GetNamespace()+"/"+cr.GetName()+"/"+string(cr.GetUID())+"|"...)
	b = render.AppendKey(b, m)
	o.each(func(k managedKind, obj client.Object) {
		b = append(b, "|"+k.role+"="+string(obj.GetUID())+"@"+obj.GetResourceVersion()...)
	})
	sum := sha256.Sum256(b)
	clear(b)
	return string(sum[:])
}
