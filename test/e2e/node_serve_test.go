//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// clientKeys is how many keys the client stores and reads back through a size-3 claim.
const clientKeys = 10000

// A size-3 claim on the real node: three memcached processes run with the arguments the
// function rendered, their readiness and liveness probes pass, the claim is Available, and a
// memcached client given the Service's endpoints stores 10,000 keys over the three shards and
// reads every one back.
func TestNodeClaimServesClients(t *testing.T) {
	requireNode(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNodeNamespace(t, "node-serve")
	const name = "sessions"
	applied := time.Now()
	apply(t, newNodeClaim(ns, name, 3, nil))
	m := waitAvailable(t, claimGVK, ns, name, 3)
	available := time.Since(applied)
	pods := waitPodsReady(t, ns, name, 3)
	firstReady := time.Duration(1<<63 - 1)
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" {
				firstReady = min(firstReady, c.LastTransitionTime.Sub(applied.Truncate(time.Second)))
			}
		}
	}
	t.Logf("claim Available %.1fs after it was applied (first pod Ready after ~%.0fs): %s", available.Seconds(), firstReady.Seconds(), m)

	t.Run("memcached runs with the rendered arguments", func(t *testing.T) {
		d, err := env.Kube.Typed.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spec := d.Spec.Template.Spec.Containers[0]
		want := append(append([]string{}, spec.Command...), spec.Args...)
		for i := range pods {
			got := mainProcess(t, container(t, &pods[i], render.ContainerName)).Cmdline
			if !slices.Equal(got, want) {
				t.Errorf("pod %s runs %q, want the rendered %q", pods[i].Name, got, want)
			}
		}
	})

	t.Run("probes pass and nothing restarts", func(t *testing.T) {
		// The liveness probe starts after 10 s and runs every 10 s: 25 s of running
		// containers have seen it twice.
		for i := range pods {
			for _, s := range pods[i].Status.ContainerStatuses {
				if s.State.Running != nil {
					if wait := 25*time.Second - time.Since(s.State.Running.StartedAt.Time); wait > 0 {
						time.Sleep(wait)
					}
				}
			}
		}
		for _, before := range pods {
			p, err := env.Kube.Typed.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Status.ContainerStatuses {
				if !s.Ready || s.RestartCount != 0 || s.State.Running == nil {
					t.Errorf("pod %s container %s: ready=%v restarts=%d state=%+v", p.Name, s.Name, s.Ready, s.RestartCount, s.State)
				}
			}
			events, err := env.Kube.Typed.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
			if err != nil {
				t.Fatal(err)
			}
			trouble, starting := kube.PodTrouble(p, events.Items)
			for _, e := range trouble {
				t.Errorf("pod %s: event %s", p.Name, e)
			}
			for _, e := range starting {
				t.Logf("pod %s: before it was first Ready: %s", p.Name, e)
			}
		}
	})

	t.Run("a client stores and reads back 10,000 keys over the three shards", func(t *testing.T) {
		addrs := waitServers(t, ns, name, pods)
		var ss memcache.ServerList
		if err := ss.SetServers(addrs...); err != nil {
			t.Fatal(err)
		}
		mc := memcache.NewFromSelector(&ss)
		mc.Timeout = 2 * time.Second
		rng := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // Test data.
		values := map[string][]byte{}
		perServer := map[string]int64{}
		var written, read int64
		start := time.Now()
		for i := range clientKeys {
			k := fmt.Sprintf("session:%05d", i)
			v := make([]byte, 64+rng.IntN(1984))
			for j := range v {
				v[j] = byte('a' + rng.IntN(26))
			}
			if err := mc.Set(&memcache.Item{Key: k, Value: v}); err != nil {
				t.Fatalf("set %s: %v", k, err)
			}
			values[k] = v
			written += int64(len(k) + len(v))
			a, err := ss.PickServer(k)
			if err != nil {
				t.Fatal(err)
			}
			perServer[a.String()]++
		}
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i := 0; i < len(keys); i += 500 {
			batch := keys[i:min(i+500, len(keys))]
			got, err := mc.GetMulti(batch)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range batch {
				it, ok := got[k]
				if !ok || string(it.Value) != string(values[k]) {
					t.Fatalf("key %s: read back %v, want the %d bytes written", k, ok, len(values[k]))
				}
				read += int64(len(k) + len(it.Value))
			}
		}
		t.Logf("client: %d keys, %d bytes written and %d bytes read back in %.1fs", clientKeys, written, read, time.Since(start).Seconds())
		for _, a := range addrs {
			items := stat(t, a, "curr_items")
			t.Logf("shard %s holds %d items", a, items)
			if items == 0 || items != perServer[a] {
				t.Errorf("shard %s holds %d items, want the %d keys the client sent it", a, items, perServer[a])
			}
		}
	})
}
