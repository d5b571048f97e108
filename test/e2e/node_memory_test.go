//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/function-memcached/internal/render"
)

const mib = 1 << 20

// The memory formula holds under a full cache: memcached filled with values until it evicts
// never gets its container OOM-killed, and the limit the kernel enforces is the rendered one.
// Filled three times, with small (100 B), medium (4 kB) and large (500 kB) values, which cost
// memcached different overheads beyond its -m (the hash table grows with the number of items;
// large items are chunked). For the smallest cache a claim may ask for and the largest the
// lane's policy allows.
func TestNodeMemoryFormula(t *testing.T) {
	requireNode(t)
	t.Parallel()
	for _, tc := range []struct {
		name string
		mb   int
	}{
		{"smallest cache", 16},
		{"largest allowed cache", laneMaxMemoryMB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := newNodeNamespace(t, "node-memory")
			name := "cache-" + strconv.Itoa(tc.mb)
			apply(t, newNodeClaim(ns, name, 1, map[string]any{"memoryLimitMB": int64(tc.mb)}))
			waitAvailable(t, claimGVK, ns, name, 1)
			pods := waitPodsReady(t, ns, name, 1)
			c := container(t, &pods[0], render.ContainerName)

			d, err := env.Kube.Typed.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rendered := d.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().Value()
			limit, err := c.MemoryLimit()
			if err != nil {
				t.Fatal(err)
			}
			if limit != rendered {
				t.Fatalf("cgroup memory.limit_in_bytes %d, want the rendered limit %d", limit, rendered)
			}

			addr := net.JoinHostPort(pods[0].Status.PodIP, "11211")
			start := time.Now()
			var total int64
			for i, size := range []int{100, 4000, 500000} {
				ev0 := stat(t, addr, "evictions")
				// The first fill goes until memcached evicts, then a tenth of the cache more;
				// the others write half the cache each into a cache already full.
				budget := int64(tc.mb) * mib / 2
				until := func() bool { return false }
				if i == 0 {
					budget = int64(tc.mb) * mib * 4
					until = func() bool { return stat(t, addr, "evictions") > ev0 }
				}
				items, written := fill(t, addr, fmt.Sprintf("v%d:", size), size, budget, until)
				if i == 0 {
					more, w := fill(t, addr, fmt.Sprintf("w%d:", size), size, int64(tc.mb)*mib/10, func() bool { return false })
					items, written = items+more, written+w
				}
				total += written
				ev := stat(t, addr, "evictions")
				if i == 0 && ev == ev0 {
					t.Fatalf("%d items of %d B (%d MiB) written and memcached evicts nothing: the cache never filled", items, size, written/mib)
				}
				peak, _ := c.MemoryPeak()
				t.Logf("%d items of %d B (%d MiB) written; evictions %d -> %d; container peak %.1f MiB of %.0f MiB", items, size, written/mib, ev0, ev, float64(peak)/mib, float64(limit)/mib)
			}

			peak, err := c.MemoryPeak()
			if err != nil {
				t.Fatal(err)
			}
			oomKills, err := c.OOMKills()
			if err != nil {
				t.Fatal(err)
			}
			p, err := env.Kube.Typed.CoreV1().Pods(ns).Get(ctx, pods[0].Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Status.ContainerStatuses {
				if s.RestartCount != 0 || s.LastTerminationState.Terminated != nil {
					t.Errorf("container %s restarted: %s", s.Name, restarts(p)[s.Name])
				}
			}
			if oomKills != 0 || peak >= limit {
				t.Errorf("memory cgroup: %d OOM kills, peak %d of limit %d", oomKills, peak, limit)
			}
			t.Logf("-m %d: %d MiB written in %.1fs; peak %.1f MiB of the %.0f MiB limit (%.0f%%), no OOM kill, no restart",
				tc.mb, total/mib, time.Since(start).Seconds(), float64(peak)/mib, float64(limit)/mib, 100*float64(peak)/float64(limit))
		})
	}
}

// fill writes values of size bytes to the memcached at addr, under keys prefix<n>, with the
// text protocol's `set … noreply` pipelined on one connection, until budget bytes are written
// or until says so (asked every 4 MiB or so). It returns the items and bytes written.
func fill(t *testing.T, addr, prefix string, size int, budget int64, until func() bool) (items, written int64) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() //nolint:errcheck // Write-only.
	w := bufio.NewWriterSize(conn, 256<<10)
	value := []byte(strings.Repeat("m", size) + "\r\n")
	every := max(1, (4*mib)/int64(size))
	for written < budget {
		_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprintf(w, "set %s%d 0 0 %d noreply\r\n", prefix, items, size); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(value); err != nil {
			t.Fatal(err)
		}
		items++
		written += int64(size)
		if items%every == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if until() {
				break
			}
		}
	}
	// A command with a reply, so that every set before it has been processed.
	if _, err := w.WriteString("mn\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || line != "MN\r\n" {
		t.Fatalf("after %d sets: %q, %v", items, line, err)
	}
	return items, written
}
