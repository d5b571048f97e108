package instance

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Expiries remember when each Instance's TLS certificate expires. Expiry is a moment, not a
// change any watch sees, so a settled Instance, which polls rarely, polls again when its
// certificate expires (PollIntervalHook) and says so then rather than up to --settled-poll
// later.
type Expiries struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// NewExpiries returns Expiries that remember none.
func NewExpiries() *Expiries {
	return &Expiries{at: map[types.UID]time.Time{}}
}

// Set remembers that uid's certificate expires at t; a zero t forgets it (no TLS).
func (x *Expiries) Set(uid types.UID, t time.Time) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if t.IsZero() {
		delete(x.at, uid)
		return
	}
	x.at[uid] = t
}

// Forget forgets a deleted Instance.
func (x *Expiries) Forget(uid types.UID) { x.Set(uid, time.Time{}) }

// At returns when uid's certificate expires, and whether one is remembered.
func (x *Expiries) At(uid types.UID) (time.Time, bool) {
	if x == nil {
		return time.Time{}, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	t, ok := x.at[uid]
	return t, ok
}
