package instance

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Transitions remember the availability each Instance last reported in this process, so that
// a transition is announced once. The managed reconciler reads Instances from a cache, and a
// reconcile that starts before the cache holds the status the previous one wrote sees the old
// availability, and would announce the same change again.
type Transitions struct {
	mu   sync.Mutex
	last map[types.UID]string
}

// NewTransitions returns Transitions that remember nothing yet.
func NewTransitions() *Transitions {
	return &Transitions{last: map[types.UID]string{}}
}

// Changed records that the Instance uid now reports availability now, and reports whether
// that differs from what it reported before: what this process last recorded for it, or,
// when nothing (since the provider started), persisted, its status's.
func (t *Transitions) Changed(uid types.UID, persisted, now string) bool {
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

// Forget forgets a deleted Instance.
func (t *Transitions) Forget(uid types.UID) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, uid)
}
