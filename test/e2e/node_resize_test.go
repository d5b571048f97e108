//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/fn"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// A readRound is one pass of the resize scenario's reader over every shard the Service lists
// as ready: how many of the keys written to each it found, missed, or could not ask for.
type readRound struct {
	at     time.Duration
	hits   map[string]int
	misses map[string]int
	errs   map[string]string
}

func (r readRound) total() int {
	n := 0
	for _, h := range r.hits {
		n += h
	}
	return n
}

// shardedKeys remembers which shard the client wrote each key to.
type shardedKeys struct {
	mu     sync.Mutex
	shards map[string][]string
}

// write stores n keys named prefix<i> through a client sharding over addrs, and records each
// key's shard.
func (s *shardedKeys) write(t *testing.T, addrs []string, prefix string, n int) {
	t.Helper()
	var ss memcache.ServerList
	if err := ss.SetServers(addrs...); err != nil {
		t.Fatal(err)
	}
	mc := memcache.NewFromSelector(&ss)
	mc.Timeout = 2 * time.Second
	for i := range n {
		k := fmt.Sprintf("%s%d", prefix, i)
		if err := mc.Set(&memcache.Item{Key: k, Value: []byte(k)}); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
		a, err := ss.PickServer(k)
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		s.shards[a.String()] = append(s.shards[a.String()], k)
		s.mu.Unlock()
	}
}

// read asks every shard in addrs for the keys written to it.
func (s *shardedKeys) read(addrs []string) readRound {
	r := readRound{hits: map[string]int{}, misses: map[string]int{}, errs: map[string]string{}}
	for _, a := range addrs {
		s.mu.Lock()
		keys := append([]string{}, s.shards[a]...)
		s.mu.Unlock()
		if len(keys) == 0 {
			continue
		}
		mc := memcache.New(a)
		mc.Timeout = time.Second
		got, err := mc.GetMulti(keys)
		if err != nil {
			r.errs[a] = err.Error()
			continue
		}
		r.hits[a] = len(got)
		r.misses[a] = len(keys) - len(got)
	}
	return r
}

// Resizing 3 → 5 → 2 on the real node keeps serving: a client reading throughout finds every
// key on the shards that survive, never finds the whole cache gone, and the claim's status
// follows the real pods at each size (within two response TTLs: see atSize).
func TestNodeResize(t *testing.T) {
	requireNode(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNodeNamespace(t, "node-resize")
	const name = "sessions"
	apply(t, newNodeClaim(ns, name, 3, nil))
	keys := &shardedKeys{shards: map[string][]string{}}

	// atSize waits for the real node to run size Ready pods, then for the claim to say so. The
	// claim may lag: a resize of real pods makes so many watch events that Crossplane's per-XR
	// circuit breaker opens and drops them, and then only the function's response TTL brings
	// a reconcile (README, "Response TTL"). So the claim gets two TTLs to catch up, and the
	// scenario logs how far behind the pods it was.
	atSize := func(size int) []string {
		pods := waitPodsReady(t, ns, name, size)
		ready := time.Now()
		var m memcached
		err := kube.Wait(ctx, 2*fn.ResponseTTL+30*time.Second, fmt.Sprintf("the claim Available with %d replicas", size), func(ctx context.Context) error {
			var err error
			if m, err = getMemcached(ctx, claimGVK, ns, name); err != nil {
				return err
			}
			if err := available(ns, name, size)(m); err != nil {
				return errors.Errorf("%v; seen %s", err, m)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("size %d: the claim said so %.1fs after the real node ran %d Ready pods", size, time.Since(ready).Seconds(), size)
		if now := waitPodsReady(t, ns, name, size); m.AvailableReplicas != int64(len(now)) {
			t.Errorf("claim reports %d available replicas, the real node runs %d Ready pods", m.AvailableReplicas, len(now))
		}
		return waitServers(t, ns, name, pods)
	}
	keys.write(t, atSize(3), "three:", 3000)

	// The reader: every 300 ms, every key on every shard the Service lists as ready.
	var rounds []readRound
	stop, done := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		for {
			if addrs, err := servers(ctx, ns, name); err == nil {
				r := keys.read(addrs)
				r.at = time.Since(start)
				rounds = append(rounds, r)
			}
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()

	resize(t, claimGVK, ns, name, 5)
	keys.write(t, atSize(5), "five:", 2000)
	resize(t, claimGVK, ns, name, 2)
	survivors := atSize(2)
	close(stop)
	<-done

	// What the client saw, judged once we know which shards survived: they were never down.
	emptyRounds := 0
	for _, r := range rounds {
		if r.total() == 0 {
			emptyRounds++
			t.Errorf("at %.1fs the client found no key on any shard: %+v", r.at.Seconds(), r)
		}
		for _, a := range survivors {
			if r.misses[a] != 0 || r.errs[a] != "" {
				t.Errorf("at %.1fs surviving shard %s: %d keys missing, error %q", r.at.Seconds(), a, r.misses[a], r.errs[a])
			}
		}
	}
	final := keys.read(survivors)
	for _, a := range survivors {
		if final.hits[a] == 0 || final.misses[a] != 0 || final.errs[a] != "" {
			t.Errorf("after the resize, shard %s: %d keys found, %d missing, error %q", a, final.hits[a], final.misses[a], final.errs[a])
		}
	}
	var all []string
	for a := range keys.shards {
		all = append(all, a)
	}
	sort.Strings(all)
	var gone []string
	for _, a := range all {
		if !slices.Contains(survivors, a) {
			gone = append(gone, a)
		}
	}
	t.Logf("%d read rounds over %.1fs; surviving shards %s hold %d keys, all readable; shards removed by the resize: %s",
		len(rounds), time.Since(start).Seconds(), strings.Join(survivors, ", "), final.total(), strings.Join(gone, ", "))
}
