package cluster

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
)

// minWakeBurst is the fewest wakes a waker sends at once, however few Instances it wakes for.
const minWakeBurst = 16

// A waker wakes Instances for the watches of target clusters: at most perSecond on average,
// in bursts as large as the Instances it wakes for (so that a namespace turning unhealthy
// wakes every Instance there at once), merging an Instance woken again while it waits. A
// server that makes up watch events, or flips between failing and answering, therefore costs
// the provider's shared queue at most perSecond reconciles of its tenant's Instances. One
// waker serves every namespaced ProviderConfig of one namespace.
type waker struct {
	send    func(types.NamespacedName)
	limiter *rate.Limiter

	mu        sync.Mutex
	instances int
	queue     []types.NamespacedName
	queued    map[types.NamespacedName]struct{}
	running   bool
}

// newWaker returns a waker calling wake at most perSecond on average; nil when wake is nil.
// A perSecond of zero or less does not limit.
func newWaker(wake func(types.NamespacedName), perSecond float64) *waker {
	if wake == nil {
		return nil
	}
	limit := rate.Limit(perSecond)
	if perSecond <= 0 {
		limit = rate.Inf
	}
	return &waker{send: wake, limiter: rate.NewLimiter(limit, minWakeBurst), queued: map[types.NamespacedName]struct{}{}}
}

// grow counts n more (or fewer) Instances the waker wakes for, which sizes its bursts.
func (w *waker) grow(n int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.instances = max(0, w.instances+n)
	w.limiter.SetBurst(max(minWakeBurst, w.instances))
}

// wake wakes instances: at once while the limiter allows and none are waiting, the rest
// queued, those already waiting merged.
func (w *waker) wake(instances []types.NamespacedName) {
	if w == nil || len(instances) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, i := range instances {
		if _, ok := w.queued[i]; ok {
			continue
		}
		if !w.running && w.limiter.Allow() {
			w.send(i)
			continue
		}
		w.queued[i] = struct{}{}
		w.queue = append(w.queue, i)
	}
	if len(w.queue) > 0 && !w.running {
		w.running = true
		go w.drain()
	}
}

// drain wakes what is queued, at the limiter's rate, until nothing is.
func (w *waker) drain() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running = false
			w.queue = nil
			w.mu.Unlock()
			return
		}
		i := w.queue[0]
		w.queue = w.queue[1:]
		delete(w.queued, i)
		w.mu.Unlock()
		_ = w.limiter.Wait(context.Background())
		w.send(i)
	}
}
