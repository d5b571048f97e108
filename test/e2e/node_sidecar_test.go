//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// sidecarSampleEvery is how often the sidecar scenario looks at the replica whose sidecar it
// stopped: its Service's endpoint, its pod's Ready condition, a client's set and get.
const sidecarSampleEvery = 200 * time.Millisecond

// Only memcached decides whether a replica serves. On the real node, a replica's sidecar
// stopped from the host (SIGSTOP: the process hangs, its listen backlog still completes TCP
// handshakes) costs metrics, never serving: for the whole time it is stopped, restarted and
// back, sampled every 200 ms, the replica's address stays ready in its Service's
// EndpointSlice, its pod's Ready condition never changes (its last transition time is the
// same afterwards, which a blip shorter than a sample would have moved), and a client keeps
// setting and getting keys through it on a new connection each time. The kubelet's liveness
// probe restarts the stopped sidecar (its restart count grows) and the exporter reports
// memcached up again; memcached itself and the other sidecar are not restarted (the probes
// never reach memcached through the stopped sidecar). Once for the exporter (a claim without
// auth), once for the auth proxy (a claim with a password, whose exporter scrapes memcached
// through the proxy). A third claim's exporter is killed instead (SIGKILL, as the OOM killer
// would): that is Kubernetes' limit, which no probe changes (a container that is not running
// is not Ready, so the pod leaves its Service until the kubelet restarts it), measured here:
// clients that hold the replica's address are served throughout, and the replica is back in
// its Service within 15 s. The figures are in docs/performance.md.
func TestNodeSidecarFailure(t *testing.T) {
	requireNode(t)
	requireSecuredComposition(t)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		sidecar string
		// composition is the claim's Composition: the lane's, or the one requiring auth.
		composition string
		// others are the containers that must not restart.
		others []string
		// signal is what the host sends the sidecar: SIGSTOP hangs it, SIGKILL crashes it
		// (as the kernel's OOM killer would).
		signal syscall.Signal
	}{
		{"a stopped exporter", render.ExporterContainerName, laneComposition, []string{render.ContainerName}, syscall.SIGSTOP},
		{"a stopped auth proxy", render.AuthProxyContainerName, securedComposition, []string{render.ContainerName, render.ExporterContainerName}, syscall.SIGSTOP},
		{"a killed exporter", render.ExporterContainerName, laneComposition, []string{render.ContainerName}, syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ns := newNodeNamespace(t, "node-sidecar")
			const name = "sessions"
			// 10m of CPU requested: the real node's two cores are shared by every node
			// scenario running at once, and these six pods do nothing but serve a few keys.
			claim := newNodeClaim(ns, name, 2, map[string]any{"metrics": map[string]any{"enabled": true}, "resources": idleCPU()})
			claim.Object["spec"].(map[string]any)["compositionRef"] = map[string]any{"name": tc.composition}
			apply(t, claim)
			waitAvailable(t, claimGVK, ns, name, 2)
			pods := waitPodsReady(t, ns, name, 2)
			waitServers(t, ns, name, pods)
			target := pods[0]
			addr := net.JoinHostPort(target.Status.PodIP, strconv.Itoa(render.Port))
			metricsURL := "http://" + net.JoinHostPort(target.Status.PodIP, strconv.Itoa(render.MetricsPort)) + "/metrics"
			serve := sidecarClient(t, ns, name, addr, tc.composition == securedComposition)
			if err := serve(-1); err != nil {
				t.Fatalf("a client cannot set and get through %s before any sidecar stops: %v", addr, err)
			}
			waitMetricsUp(t, metricsURL)

			before := podNow(t, ns, target.Name)
			readySince := readyTransition(before)
			restarts0 := restartCounts(before)
			exporterPeak, err := container(t, &before, render.ExporterContainerName).MemoryPeak()
			if err != nil {
				t.Fatal(err)
			}
			pid := mainProcess(t, container(t, &before, tc.sidecar)).PID
			if err := syscall.Kill(pid, tc.signal); err != nil {
				t.Fatalf("%v to %s (pid %d): %v", tc.signal, tc.sidecar, pid, err)
			}
			stopped := time.Now()
			// Should the scenario fail before the kubelet kills it, let the process go on.
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

			var (
				samples, outOfService, notReady, failed int
				firstProblems                           []string
				restarted, metricsBack                  time.Duration
				// lastOut is the last sample, after the signal, that found the replica out
				// of its Service.
				lastOut time.Duration
			)
			problem := func(at time.Duration, what string) {
				if len(firstProblems) < 5 {
					firstProblems = append(firstProblems, fmt.Sprintf("+%.1fs %s", at.Seconds(), what))
				}
			}
			deadline := stopped.Add(3 * time.Minute)
			for i := 0; time.Now().Before(deadline); i++ {
				next := time.Now().Add(sidecarSampleEvery)
				at := time.Since(stopped)
				samples++
				if eps, err := servers(ctx, ns, name); err != nil {
					t.Fatal(err)
				} else if !slices.Contains(eps, addr) {
					outOfService++
					lastOut = at
					problem(at, fmt.Sprintf("endpoints %v without %s", eps, addr))
				}
				p := podNow(t, ns, target.Name)
				if !podReady(&p) {
					notReady++
					problem(at, "pod not Ready")
				}
				if err := serve(i); err != nil {
					failed++
					problem(at, "client: "+err.Error())
				}
				if restarted == 0 && restartCounts(p)[tc.sidecar] > restarts0[tc.sidecar] {
					restarted = time.Since(stopped)
				}
				if restarted > 0 && metricsBack == 0 {
					if m, err := scrape(ctx, metricsURL); err == nil && m["memcached_up"] == 1 {
						metricsBack = time.Since(stopped)
						// Keep sampling a little: the restarted sidecar's first probes.
						deadline = time.Now().Add(5 * time.Second)
					}
				}
				time.Sleep(time.Until(next))
			}

			after := podNow(t, ns, target.Name)
			t.Logf("%s of %s sent %s: restarted %.1fs later, metrics back %.1fs later; %d samples every %v over %.0fs: "+
				"out of the Service %d (the last at +%.1fs), pod not Ready %d, client set/get failed %d; first: %v; exporter's memory peak before %.1f MiB; restarts after %v",
				tc.sidecar, target.Name, map[syscall.Signal]string{syscall.SIGSTOP: "SIGSTOP", syscall.SIGKILL: "SIGKILL"}[tc.signal], restarted.Seconds(), metricsBack.Seconds(), samples, sidecarSampleEvery, time.Since(stopped).Seconds(),
				outOfService, lastOut.Seconds(), notReady, failed, firstProblems, float64(exporterPeak)/mib, restarts(&after))
			if restarted == 0 {
				t.Errorf("the stopped %s was not restarted within 3 minutes: its liveness probe does not see it hang", tc.sidecar)
			}
			if metricsBack == 0 {
				t.Errorf("the exporter did not report memcached_up 1 within 3 minutes of the %s stopping", tc.sidecar)
			}
			if failed > 0 {
				t.Errorf("a client connecting to the replica failed %d of %d times while its %s was down (%v): memcached stopped serving; first: %v",
					failed, samples, tc.sidecar, tc.signal, firstProblems)
			}
			switch {
			case tc.signal == syscall.SIGKILL:
				// Kubernetes' limit, measured: a container that is not running is not Ready,
				// so between the crash and the restart the pod leaves its Service.
				if lastOut > 15*time.Second {
					t.Errorf("the replica was still out of its Service %.1fs after its %s crashed: the kubelet did not restart it at once", lastOut.Seconds(), tc.sidecar)
				}
			case outOfService+notReady > 0:
				t.Errorf("a stopped %s cost serving: %d of %d samples out of the Service, %d not Ready; first: %v",
					tc.sidecar, outOfService, samples, notReady, firstProblems)
			default:
				if got := readyTransition(after); !got.Equal(&readySince) {
					t.Errorf("the pod's Ready condition changed while its %s was stopped and restarted (last transition %v, was %v)", tc.sidecar, got, readySince)
				}
			}
			for _, c := range tc.others {
				if got := restartCounts(after)[c]; got != restarts0[c] {
					t.Errorf("container %s restarted (%d times, was %d) when only the %s was stopped", c, got, restarts0[c], tc.sidecar)
				}
			}
		})
	}
}

// sidecarClient returns what the scenario does through addr each sample: a new connection
// (what a client that re-reads its Service's endpoints opens), a set and a get of the
// sample's own key. With auth, the connection authenticates first with the claim's
// connection Secret.
func sidecarClient(t *testing.T, ns, name, addr string, auth bool) func(i int) error {
	t.Helper()
	if !auth {
		return func(i int) error {
			mc := memcache.New(addr)
			mc.Timeout = time.Second
			defer mc.Close() //nolint:errcheck // One sample's client.
			key, value := fmt.Sprintf("sidecar:%d", i), []byte(strconv.Itoa(i))
			if err := mc.Set(&memcache.Item{Key: key, Value: value}); err != nil {
				return err
			}
			got, err := mc.Get(key)
			if err != nil {
				return err
			}
			if string(got.Value) != string(value) {
				return errors.Errorf("get %s: %q, want %q", key, got.Value, value)
			}
			return nil
		}
	}
	cd := waitConnection(t, ns, name+"-memcached", func(cd map[string]string) error {
		if cd["username"] == "" || cd["password"] == "" {
			return errors.New("want username and password")
		}
		return nil
	})
	return func(i int) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		mc := memcachedtest.NewConn(c)
		defer mc.Close() //nolint:errcheck // One sample's connection.
		if got, err := mc.Auth(cd["username"], cd["password"]); err != nil || got != "STORED" {
			return errors.Errorf("auth: %q, %v", got, err)
		}
		key, value := fmt.Sprintf("sidecar:%d", i), strconv.Itoa(i)
		if got, err := mc.Set(key, value); err != nil || got != "STORED" {
			return errors.Errorf("set %s: %q, %v", key, got, err)
		}
		if got, err := mc.Get(key); err != nil || got != value {
			return errors.Errorf("get %s: %q, %v", key, got, err)
		}
		return nil
	}
}

// waitMetricsUp waits until the exporter at url reports memcached up.
func waitMetricsUp(t *testing.T, url string) {
	t.Helper()
	err := kube.Wait(context.Background(), defaultTimeout, url+" reporting memcached_up 1", func(ctx context.Context) error {
		m, err := scrape(ctx, url)
		if err != nil {
			return err
		}
		if m["memcached_up"] != 1 {
			return errors.Errorf("memcached_up %v", m["memcached_up"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// podNow reads pod name of namespace.
func podNow(t *testing.T, namespace, name string) corev1.Pod {
	t.Helper()
	p, err := env.Kube.Typed.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

// readyTransition is when the pod's Ready condition last changed.
func readyTransition(p corev1.Pod) metav1.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime
		}
	}
	return metav1.Time{}
}

// restartCounts is each container's restart count.
func restartCounts(p corev1.Pod) map[string]int32 {
	out := map[string]int32{}
	for _, s := range p.Status.ContainerStatuses {
		out[s.Name] = s.RestartCount
	}
	return out
}
