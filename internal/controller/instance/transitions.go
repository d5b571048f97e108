package instance

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/example/function-memcached/internal/readiness"
)

// Transitions remember the availability each Instance last reported in this process, so that
// a transition is announced once. The managed reconciler reads Instances from a cache, and a
// reconcile that starts before the cache holds the status the previous one wrote sees the old
// availability, and would announce the same change again.
type Transitions struct {
	mu   sync.Mutex
	last map[types.UID]readiness.State
}

// NewTransitions returns Transitions that remember nothing yet.
func NewTransitions() *Transitions {
	return &Transitions{last: map[types.UID]readiness.State{}}
}

// Changed records that the Instance uid now reports availability now, and reports whether
// that differs from what it reported before: what this process last recorded for it, or,
// when nothing (since the provider started), persisted, its status's.
func (t *Transitions) Changed(uid types.UID, persisted, now readiness.State) bool {
	if t == nil {
		return persisted != now
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ok := t.last[uid]
	if !ok {
		last = persisted
	}
	t.last[uid] = now
	return last != now
}

// Reason returns the availability reason the Instance uid last reported in this process, or
// persisted (its status's) when this process has reported none. A reconcile that reads a
// stale copy from the cache must judge from the latest reason, not the one before it: a
// resize whose copy still says Available would otherwise read as Degraded mid-way.
func (t *Transitions) Reason(uid types.UID, persisted string) string {
	if t == nil {
		return persisted
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ok := t.last[uid]
	if !ok {
		return persisted
	}
	return last.Reason
}

// Forget forgets a deleted Instance.
func (t *Transitions) Forget(uid types.UID) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, uid)
}
