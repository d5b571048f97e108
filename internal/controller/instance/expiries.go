package instance

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/example/function-memcached/internal/lru"
)

// Expiries remember when each Instance's TLS certificate expires, or a certificate the
// provider issued for it (client certificates) is due for renewal. Expiry is a moment, not a
// change any watch sees, so a settled Instance, which polls rarely, polls again when its
// certificate expires (PollIntervalHook) and says so then rather than up to --settled-poll
// later. They hold at most instanceMemoSize Instances: one evicted polls at the settled
// interval, so its expiry shows up to --settled-poll late, until its next reconcile, which
// remembers it again. A nil Expiries remembers none, so callers need no check of their own.
type Expiries struct {
	at *lru.Cache[types.UID, time.Time]
}

// NewExpiries returns Expiries that remember none.
func NewExpiries() *Expiries {
	return &Expiries{at: lru.New[types.UID, time.Time](instanceMemoSize)}
}

// Set remembers that uid's certificate expires at t; a zero t forgets it (no TLS).
func (x *Expiries) Set(uid types.UID, t time.Time) {
	switch {
	case x == nil:
	case t.IsZero():
		x.at.Remove(uid)
	default:
		x.at.Add(uid, t)
	}
}

// Forget forgets a deleted Instance.
func (x *Expiries) Forget(uid types.UID) { x.Set(uid, time.Time{}) }

// At returns when uid's certificate expires, and whether one is remembered.
func (x *Expiries) At(uid types.UID) (time.Time, bool) {
	if x == nil {
		return time.Time{}, false
	}
	return x.at.Get(uid)
}
