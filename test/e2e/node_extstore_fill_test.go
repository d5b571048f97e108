//go:build e2e

package e2e

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/function-memcached/internal/memcachedload"
	"github.com/example/function-memcached/internal/render"
)

// The fill of TestNodeExternalStorageHoldsMore: 1 KiB items, extstoreFillItems of them into
// the claim with external storage at extstoreFillRate sets a second, as fast as memcached
// answers into the one without (its LRU keeps the newest whatever the rate).
const (
	extstoreValueSize    = 1024
	extstoreFillItems    = 400_000
	extstoreFillRate     = 5000
	extstoreMemoryItems  = 200_000
	extstoreWantMultiple = 5
)

// A cache larger than memory: two size-1 claims with memoryLimitMB 64, one with 1 GiB of
// external storage (spec.externalStorage.sizeMB 1024: an emptyDir, memcached's extstore with
// the settings the function renders). Filled with 1 KiB items — the one without as fast as
// it answers, the one with at extstoreFillRate a second — the claim with external storage
// still serves at least five times the items the other does (counted by getting every key
// written), and its memcached was not OOM-killed nor restarted while filling. Then gets a
// second from extstore against gets from memory, logged for docs/performance.md.
func TestNodeExternalStorageHoldsMore(t *testing.T) {
	requireNode(t)
	t.Parallel()
	began := time.Now()
	ctx := context.Background()
	ns := newNodeNamespace(t, "node-extstore")
	// 10m of CPU requested and no limit: the real node's two cores are shared by every node
	// scenario running at once, and a fill at a stated rate needs little.
	apply(t, newNodeClaim(ns, "memory", 1, map[string]any{"memoryLimitMB": int64(64), "resources": idleCPU()}))
	apply(t, newNodeClaim(ns, "extstore", 1, map[string]any{"memoryLimitMB": int64(64), "resources": idleCPU(),
		"externalStorage": map[string]any{"sizeMB": int64(1024)}}))
	waitAvailable(t, claimGVK, ns, "memory", 1)
	waitAvailable(t, claimGVK, ns, "extstore", 1)
	memPod, extPod := waitPodsReady(t, ns, "memory", 1)[0], waitPodsReady(t, ns, "extstore", 1)[0]
	memAddr := net.JoinHostPort(memPod.Status.PodIP, strconv.Itoa(render.Port))
	extAddr := net.JoinHostPort(extPod.Status.PodIP, strconv.Itoa(render.Port))
	t.Logf("extstore-args %q", mainProcess(t, container(t, &extPod, render.ContainerName)).Cmdline)

	fill := memcachedload.Config{Connections: 4, ValueSize: extstoreValueSize, KeyPrefix: "fill:"}
	count := func(addr string, n int) int64 {
		t.Helper()
		c := fill
		c.Address = addr
		hits, err := memcachedload.Count(ctx, c, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}

	mem := fill
	mem.Address = memAddr
	n, took, err := memcachedload.Fill(ctx, mem, 0, extstoreMemoryItems)
	if err != nil {
		t.Fatal(err)
	}
	memHits := count(memAddr, extstoreMemoryItems)
	t.Logf("without external storage: %d items of 1 KiB set in %.1fs (%.0f/s), %d still hit", n, took.Seconds(), float64(n)/took.Seconds(), memHits)

	ext := fill
	ext.Address, ext.Rate = extAddr, extstoreFillRate
	n, took, err = memcachedload.Fill(ctx, ext, 0, extstoreFillItems)
	if err != nil {
		t.Fatal(err)
	}
	extHits := count(extAddr, extstoreFillItems)
	s, err := memcachedStats(extAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with 1 GiB of external storage: %d items of 1 KiB set in %.1fs (%.0f/s), %d still hit (%.1f×); extstore_objects_used %s, extstore_pages_used %s, evictions %s, slabs_moved %s",
		n, took.Seconds(), float64(n)/took.Seconds(), extHits, float64(extHits)/float64(memHits), s["extstore_objects_used"], s["extstore_pages_used"], s["evictions"], s["slabs_moved"])
	if extHits < extstoreWantMultiple*memHits {
		t.Errorf("with external storage the cache holds %d items, %.1f× the %d it holds without: want at least %d×", extHits, float64(extHits)/float64(memHits), memHits, extstoreWantMultiple)
	}

	t.Run("memcached was not OOM-killed nor restarted while filling", func(t *testing.T) {
		ctr := container(t, &extPod, render.ContainerName)
		kills, err := ctr.OOMKills()
		if err != nil {
			t.Fatal(err)
		}
		peak, _ := ctr.MemoryPeak()
		limit, _ := ctr.MemoryLimit()
		t.Logf("memory cgroup: peak %d MiB of the %d MiB limit (page cache of the extstore file included), %d OOM kills", peak>>20, limit>>20, kills)
		p, err := env.Kube.Typed.CoreV1().Pods(ns).Get(ctx, extPod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 || cs.LastTerminationState.Terminated != nil {
				t.Errorf("container %s: %v", cs.Name, restarts(p)[cs.Name])
			}
		}
		if kills != 0 {
			t.Errorf("%d OOM kills in memcached's memory cgroup", kills)
		}
	})

	t.Run("gets from extstore against gets from memory", func(t *testing.T) {
		run := func(what string, c memcachedload.Config) memcachedload.Report {
			c.Connections, c.Duration, c.GetRatio, c.Seed = 8, 2*time.Second, 1, 1
			r, err := memcachedload.Run(ctx, c)
			if err != nil || r.Errors != 0 || r.Hits == 0 {
				t.Fatalf("%s: %v, %s", what, err, &r)
			}
			t.Logf("extstore-gets %s: %s; %.0f hits/s", what, &r, float64(r.Hits)/r.Elapsed.Seconds())
			return r
		}
		disk := ext
		disk.Rate, disk.Keys = 0, extstoreFillItems
		before, err := memcachedStats(extAddr)
		if err != nil {
			t.Fatal(err)
		}
		r := run("from extstore (every key filled)", disk)
		after, err := memcachedStats(extAddr)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := strconv.ParseInt(before["get_extstore"], 10, 64)
		a, _ := strconv.ParseInt(after["get_extstore"], 10, 64)
		t.Logf("extstore-gets %d of %d hits read from extstore", a-b, r.Hits)
		memory := mem
		memory.KeyPrefix, memory.Keys, memory.Prefill = "hot:", 20_000, true
		run("from memory (20,000 keys, all resident)", memory)
	})
	t.Logf("extstore-duration %.0fs", time.Since(began).Seconds())
}
