//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/pki"
)

// Phases of the load scenario.
const (
	loadTimeout = 20 * time.Minute
	// loadSettle lets what creating the Instances set in motion end (retries, first polls)
	// before the idle window starts.
	loadSettle = 2 * time.Minute
	// loadWindow is the idle window the steady state is measured over: the provider's
	// default --settled-poll, so that every settled Instance polls in it once (at least; its
	// polls are 9–10 minutes apart) whatever the phase, and ten of --poll's watch renewals.
	loadWindow = 10 * time.Minute
	// loadRestores is how many Deployments are deleted by hand, one at a time.
	loadRestores = 6
)

// Many Instances over two workload clusters: the provider, as it ships (default --poll of a
// minute and --settled-poll of ten, no debug logging), must stay cheap when nothing changes and restore what is deleted
// by hand within seconds. The scenario creates the Instances (size 1, half in each cluster,
// 50 per team namespace; every other one with authentication, TLS from the team's
// cert-manager-style Secret in its target namespace, a NetworkPolicy and a connection
// Secret, the others with none of them), waits until every one is Available, lets things
// settle, then measures over an idle window:
//
//   - the provider's CPU (user + system, from /proc) as a share of one core;
//   - the requests it sent to each workload cluster per minute, by verb, from its own
//     counter provider_memcached_target_requests_total, and, from each workload API server's
//     apiserver_request_total, the GETs of Deployments, Services, PodDisruptionBudgets,
//     Secrets and NetworkPolicies;
//
// and then, one at a time, deletes an Instance's Deployment by hand and times how long until
// a new one exists and until the Instance is Available again. Targets (issues 13 and 20): under 2% of
// one core, no GET per minute beyond the watches' traffic, restored within 5 s.
//
// Opt-in with E2E_PROVIDER_LOAD=1 (make e2e-provider-load); E2E_PROVIDER_INSTANCES sets the
// number of Instances (default 500). Not parallel.
func TestProviderLoad(t *testing.T) {
	n := optIn(t, "E2E_PROVIDER_LOAD", "make e2e-provider-load) to run 500 Instances over two workload clusters", "E2E_PROVIDER_INSTANCES", 500, 2)
	ctx := context.Background()
	hostProvider(t)
	a, b := workloads(t)

	// The provider as it ships, serving profiles on a free port.
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	profile := "127.0.0.1:" + strconv.Itoa(ports[0])
	if err := env.Provider.Start(ctx, "--profile="+profile); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Provider.Start(context.Background(), env.ProviderArgs...) })

	// Team namespaces of 50 Instances each, alternately in each workload cluster, each with
	// the TLS Secret cert-manager there would write for a wildcard Certificate of the
	// namespace's Services.
	type placed struct {
		ns, name string
		c        *workloadCluster
		secured  bool
	}
	const perTeam = 50
	teams := map[string]*workloadCluster{}
	var namespaces []string
	ca := newCA(t)
	for k := range (n + perTeam - 1) / perTeam {
		c := []*workloadCluster{a, b}[k%2]
		ns := team(t, fmt.Sprintf("load%02d", k), c)
		teams[ns] = c
		namespaces = append(namespaces, ns)
		kp, err := ca.Issue(pki.Request{CommonName: "*." + ns + ".svc.cluster.local", DNSNames: []string{"*." + ns + ".svc.cluster.local"}})
		if err != nil {
			t.Fatal(err)
		}
		writeTLSPairOn(t, c.Kube, ns, loadTLSSecret, kp, ca.CertPEM)
	}
	all := make([]placed, n)
	secured := 0
	for i := range all {
		ns := namespaces[i/perTeam]
		all[i] = placed{ns: ns, name: fmt.Sprintf("cache-%03d", i), c: teams[ns], secured: i%2 == 0}
		if all[i].secured {
			secured++
		}
	}

	// Create every Instance: 20 clients in parallel.
	start := time.Now()
	inParallel(t, all, func(p placed) error {
		_, err := env.Kube.Apply(ctx, loadInstance(p.ns, p.name, p.c.Config, p.secured))
		return err
	})
	created := time.Since(start)
	if err := kube.Wait(ctx, loadTimeout, fmt.Sprintf("%d Instances Available", n), func(ctx context.Context) error {
		ready := 0
		for ns := range teams {
			r, err := env.Kube.Resource(instanceGVK, ns)
			if err != nil {
				return err
			}
			l, err := r.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for i := range l.Items {
				if instanceAvailable(1)(toInstance(&l.Items[i])) == nil {
					ready++
				}
			}
		}
		if ready < n {
			return errors.Errorf("%d/%d Available", ready, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	allAvailable := time.Since(start)
	t.Logf("%d Instances (%d with auth, TLS and a NetworkPolicy) created in %.1fs, all Available after %.1fs", n, secured, created.Seconds(), allAvailable.Seconds())
	wantSecured(t, teams, secured)

	// The idle window.
	time.Sleep(loadSettle)
	cpu0, err := env.Provider.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	req0 := providerRequests(t)
	srv0 := map[string]map[string]float64{a.Config: serverRequests(t, a.Kube), b.Config: serverRequests(t, b.Kube)}
	windowStart := time.Now()
	time.Sleep(loadWindow)
	window := time.Since(windowStart)
	cpu1, err := env.Provider.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	req1 := providerRequests(t)
	srv1 := map[string]map[string]float64{a.Config: serverRequests(t, a.Kube), b.Config: serverRequests(t, b.Kube)}

	share := (cpu1 - cpu0).Seconds() / window.Seconds() * 100
	minutes := window.Minutes()
	t.Logf("idle window %.0fs: provider CPU %.2fs = %.2f%% of one core (target < 2%%)", window.Seconds(), (cpu1 - cpu0).Seconds(), share)
	if share >= 2 {
		t.Errorf("provider CPU %.2f%% of one core when nothing changes, want under 2%%", share)
	}
	for _, c := range []*workloadCluster{a, b} {
		config := "ClusterProviderConfig/" + c.Config
		var verbs []string
		gets := 0.0
		for _, verb := range []string{"GET", "LIST", "WATCH", "CREATE", "PATCH", "UPDATE", "DELETE"} {
			d := req1[config][verb] - req0[config][verb]
			if d > 0 {
				verbs = append(verbs, fmt.Sprintf("%s %.1f", verb, d/minutes))
			}
			if verb == "GET" {
				gets = d
			}
		}
		serverGets := srv1[c.Config]["GET"] - srv0[c.Config]["GET"]
		t.Logf("%s: provider requests per minute: %s (total %.1f); the API server's GETs of Deployments, Services, PodDisruptionBudgets, Secrets and NetworkPolicies per minute: %.1f",
			c.Config, strings.Join(verbs, ", "), sum(req1[config])/minutes-sum(req0[config])/minutes, serverGets/minutes)
		if gets > 0 || serverGets > 0 {
			t.Errorf("%s: %.0f GETs from the provider (%.0f seen by the API server) when nothing changed, want none beyond the watches' traffic", c.Config, gets, serverGets)
		}
	}

	// A CPU profile of a minute more of the same, for whoever wants to know where the time goes:
	// go tool pprof -top _output/e2e/provider-idle.pprof
	if err := saveProfile(ctx, "http://"+profile+"/debug/pprof/profile?seconds=60", filepath.Join(env.OutputDir, "provider-idle.pprof")); err != nil {
		t.Logf("no CPU profile: %v", err)
	}

	// Deployments deleted by hand.
	var restored, available []time.Duration
	var kinds []string
	for k := range loadRestores {
		p := all[(k*n)/loadRestores]
		kinds = append(kinds, map[bool]string{true: "secured", false: "plain"}[p.secured])
		before := getOn(t, p.c.Kube, deploymentGVK, p.ns, p.name)
		deleted := time.Now()
		if err := p.c.Kube.Typed.AppsV1().Deployments(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := kube.Wait(ctx, time.Minute, "Deployment "+p.ns+"/"+p.name+" restored", func(ctx context.Context) error {
			u, err := p.c.Kube.Get(ctx, deploymentGVK, p.ns, p.name)
			if err != nil {
				return err
			}
			if u.GetUID() == before.GetUID() {
				return errors.New("not deleted yet")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		restored = append(restored, time.Since(deleted))
		waitInstance(t, p.ns, p.name, "Available again", func(i instance) error {
			if err := instanceAvailable(1)(i); err != nil {
				return err
			}
			d := getOn(t, p.c.Kube, deploymentGVK, p.ns, p.name)
			if d == nil || d.GetUID() == before.GetUID() {
				return errors.New("not restored")
			}
			return nil
		})
		available = append(available, time.Since(deleted))
		time.Sleep(2 * time.Second)
	}
	t.Logf("Deployment deleted by hand (%s) → a new one: %s (max %.2fs, target ≤ 5s); → the Instance Available again: %s",
		strings.Join(kinds, ", "), durations(restored), slices.Max(restored).Seconds(), durations(available))
	if slices.Max(restored) > 5*time.Second {
		t.Errorf("a Deployment deleted by hand was restored after %v, want within 5s", slices.Max(restored))
	}

	// Delete everything.
	start = time.Now()
	for ns := range teams {
		r, err := env.Kube.Resource(instanceGVK, ns)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := kube.Wait(ctx, loadTimeout, "every Instance and what it ran gone", func(ctx context.Context) error {
		left := 0
		for ns, c := range teams {
			for _, o := range []struct {
				c   *kube.Client
				gvk schema.GroupVersionKind
			}{{env.Kube, instanceGVK}, {c.Kube, deploymentGVK}, {c.Kube, networkPolicyGVK}, {c.Kube, secretGVK}} {
				r, err := o.c.Resource(o.gvk, ns)
				if err != nil {
					return err
				}
				l, err := r.List(ctx, metav1.ListOptions{LabelSelector: selectorOf(o.gvk)})
				if err != nil {
					return err
				}
				left += len(l.Items)
			}
		}
		if left > 0 {
			return errors.Errorf("%d Instances, Deployments, NetworkPolicies and Secrets of Instances left", left)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("every Instance and its Deployment, NetworkPolicy and Secrets gone %.1fs after deleting the Instances", time.Since(start).Seconds())
}

// loadTLSSecret is each team's TLS Secret in its target namespace.
const loadTLSSecret = "caches-tls"

// loadInstance is an Instance of size 1 of the load scenario: secured, with authentication,
// TLS from the team's Secret, a NetworkPolicy and a connection Secret; otherwise with none of
// them, whatever the platform's defaults.
func loadInstance(ns, name, config string, secured bool) *unstructured.Unstructured {
	if !secured {
		return newInstance(ns, name, config, 1, map[string]any{
			"auth":          map[string]any{"enabled": false},
			"networkPolicy": map[string]any{"enabled": false},
		}, nil)
	}
	return newInstance(ns, name, config, 1, map[string]any{
		// Password, as measured before the example Input's default became ClientCertificate.
		"auth":          map[string]any{"enabled": true, "mode": "Password"},
		"tls":           map[string]any{"secretName": loadTLSSecret},
		"networkPolicy": map[string]any{"enabled": true},
	}, map[string]any{"writeConnectionSecretToRef": map[string]any{"name": name + "-connection"}})
}

// wantSecured fails t unless the workload clusters hold, for the secured Instances, an auth
// Secret, a TLS copy and a NetworkPolicy each, all labelled as an Instance's, and nothing of
// the kind for the others.
func wantSecured(t *testing.T, teams map[string]*workloadCluster, secured int) {
	t.Helper()
	ctx := context.Background()
	var auth, active, policies int
	for ns, c := range teams {
		ss, err := c.Kube.Typed.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: labelInstanceUID})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss.Items {
			switch {
			case strings.HasSuffix(s.Name, render.AuthSecretSuffix):
				auth++
			case strings.HasSuffix(s.Name, render.TLSSecretSuffix):
				active++
			}
		}
		nps, err := c.Kube.Typed.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{LabelSelector: labelInstanceUID})
		if err != nil {
			t.Fatal(err)
		}
		policies += len(nps.Items)
	}
	if auth != secured || active != secured || policies != secured {
		t.Errorf("the workload clusters hold %d auth Secrets, %d TLS copies and %d NetworkPolicies of Instances, want %d of each", auth, active, policies, secured)
	}
}

// selectorOf selects what the load scenario waits to be gone: every object of kind gvk but
// Secrets, which only those of Instances (the teams' TLS Secrets stay).
func selectorOf(gvk schema.GroupVersionKind) string {
	if gvk == secretGVK {
		return labelInstanceUID
	}
	return ""
}

// saveProfile writes what url serves to file.
func saveProfile(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644) //nolint:gosec // A profile, not a secret.
}

// providerRequests reads the provider's requests to target clusters, by config (its metric's
// label: ClusterProviderConfig/<name>) and verb.
func providerRequests(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	rsp, err := http.Get(env.Provider.MetricsURL) //nolint:noctx // A test's read of a local endpoint.
	if err != nil {
		t.Fatal(err)
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(rsp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "provider_memcached_target_requests_total{") {
			continue
		}
		labels, v := metric(line)
		if out[labels["config"]] == nil {
			out[labels["config"]] = map[string]float64{}
		}
		out[labels["config"]][labels["verb"]] += v
	}
	return out
}

// serverRequests reads a workload API server's requests of Deployments, Services,
// PodDisruptionBudgets, Secrets and NetworkPolicies by verb, whoever sent them.
func serverRequests(t *testing.T, c *kube.Client) map[string]float64 {
	t.Helper()
	b, err := c.Typed.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, v := metric(line)
		if slices.Contains([]string{"deployments", "services", "poddisruptionbudgets", "secrets", "networkpolicies"}, labels["resource"]) && labels["subresource"] == "" {
			out[labels["verb"]] += v
		}
	}
	return out
}

// metric parses a Prometheus text line into its labels and value.
func metric(line string) (map[string]string, float64) {
	labels := map[string]string{}
	open, closing := strings.Index(line, "{"), strings.LastIndex(line, "}")
	for _, kv := range strings.Split(line[open+1:closing], ",") {
		k, v, _ := strings.Cut(kv, "=")
		labels[k] = strings.Trim(v, `"`)
	}
	v, _ := strconv.ParseFloat(strings.TrimSpace(line[closing+1:]), 64)
	return labels, v
}

func sum(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

func durations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.2fs", d.Seconds())
	}
	return strings.Join(parts, ", ")
}
