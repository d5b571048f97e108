//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// metricsKeys is how many keys the metrics scenario's client writes.
const metricsKeys = 1000

// With metrics enabled, each pod's exporter sidecar scrapes its memcached: /metrics on the
// pod's metrics port reports memcached_up 1 and, summed over the pods, exactly the items the
// client wrote.
func TestNodeMetrics(t *testing.T) {
	requireNode(t)
	t.Parallel()
	ns := newNodeNamespace(t, "node-metrics")
	const name = "sessions"
	apply(t, newNodeClaim(ns, name, 2, map[string]any{"metrics": map[string]any{"enabled": true}}))
	waitAvailable(t, claimGVK, ns, name, 2)
	pods := waitPodsReady(t, ns, name, 2)
	mc := memcache.New(waitServers(t, ns, name, pods)...)
	for i := range metricsKeys {
		if err := mc.Set(&memcache.Item{Key: fmt.Sprintf("metric:%d", i), Value: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	err := kube.Wait(context.Background(), defaultTimeout, "every exporter reporting memcached_up 1 and the items written", func(ctx context.Context) error {
		var total float64
		var seen []string
		for _, p := range pods {
			m, err := scrape(ctx, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(render.MetricsPort))+"/metrics")
			if err != nil {
				return err
			}
			if m["memcached_up"] != 1 {
				return errors.Errorf("pod %s: memcached_up %v", p.Name, m["memcached_up"])
			}
			total += m["memcached_current_items"]
			seen = append(seen, fmt.Sprintf("%s: up %v items %v", p.Name, m["memcached_up"], m["memcached_current_items"]))
		}
		if total != metricsKeys {
			return errors.Errorf("memcached_current_items sum to %v, want %d (%s)", total, metricsKeys, strings.Join(seen, "; "))
		}
		t.Logf("exporters: %s", strings.Join(seen, "; "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
