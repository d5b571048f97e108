package instance

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/readiness"
)

// Transitions remember the availability each Instance last reported in this process, so that
// a transition is announced once. The managed reconciler reads Instances from a cache, and a
// reconcile that starts before the cache holds the status the previous one wrote sees the old
// availability, and would announce the same change again. They hold at most
// instanceMemoSize Instances: one evicted falls back to its persisted status, as after a
// provider restart, which is what it last wrote once the cache catches up. A nil Transitions
// compares with the status only. The workqueue never reconciles one Instance twice at once,
// so reading and then recording its entry needs no lock of its own.
type Transitions struct {
	last *lru.Cache[types.UID, readiness.State]
}

// NewTransitions returns Transitions that remember nothing yet.
func NewTransitions() *Transitions {
	return &Transitions{last: lru.New[types.UID, readiness.State](instanceMemoSize)}
}

// Changed records that the Instance uid now reports availability now, and reports whether
// that differs from what it reported before: what this process last recorded for it, or,
// when nothing (since the provider started), persisted, its status's.
func (t *Transitions) Changed(uid types.UID, persisted, now readiness.State) bool {
	if t == nil {
		return persisted != now
	}
	last, ok := t.last.Get(uid)
	if !ok {
		last = persisted
	}
	t.last.Add(uid, now)
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
	last, ok := t.last.Get(uid)
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
	t.last.Remove(uid)
}
