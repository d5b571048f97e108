//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/availability"
	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/node"
)

// The NetworkPolicy a claim gets is enforced, with a network policy implementation running on
// the real node (kube-router's firewall, iptables and ipsets on the node's bridge): clients in
// the claim's namespace reach memcached and clients elsewhere are refused, until the claim
// names their namespace in spec.networkPolicy.allowedNamespaces; the metrics port admits the
// monitoring namespace the platform's Input names, and no one else; the pods connect out to
// nothing (the policy denies all egress): their exporter's /scrape?target= reaches no other
// pod, for a plain claim and for one with TLS, authentication and the auth proxy, while
// everything inside a pod still talks over loopback; and the claims stay Available
// throughout, the kubelet's probes passing under enforcement. Every client is a pod on the
// real node, as an application's would be, but the scrapes, which come from the host (which
// the firewall always admits) to ask the exporter to connect out.
func TestNodeNetworkPolicy(t *testing.T) {
	requireNode(t)
	t.Parallel()
	ctx := context.Background()
	began := time.Now()

	fw, err := node.StartFirewall(ctx, node.FirewallOptions{
		Binary:      filepath.Join(env.BinDir, "kube-router"),
		Kubeconfig:  env.ControlPlane.KubeconfigPath(),
		ServiceCIDR: controlplane.ServiceCIDR,
		LogDir:      env.LogDir,
		PIDs:        env.PIDs,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fw.Stop(); err != nil {
			t.Error(err)
		}
		if left, err := fw.Left(); err != nil || len(left) > 0 {
			t.Errorf("after the firewall stopped, left on the host: %v, %v", left, err)
		}
	})
	t.Logf("kube-router's firewall synced its chains %.1fs after it started", fw.Synced.Seconds())

	ns := newNodeNamespace(t, "node-netpol")
	other := newNodeNamespace(t, "node-netpol-other")
	stranger := newNodeNamespace(t, "node-netpol-stranger")
	if err := env.Kube.EnsureNamespace(ctx, laneMonitoringNamespace, restricted); err != nil {
		t.Fatal(err)
	}
	if err := node.OptIn(ctx, env.Kube, laneMonitoringNamespace); err != nil {
		t.Fatal(err)
	}

	const name = "sessions"
	applied := time.Now()
	apply(t, newNodeClaim(ns, name, 1, map[string]any{
		"metrics": map[string]any{"enabled": true},
		"auth":    map[string]any{"enabled": false},
	}))
	seen := waitAvailable(t, claimGVK, ns, name, 1)
	pod := waitPodsReady(t, ns, name, 1)[0]
	ready := time.Since(applied)
	afterReady := waitPolicyRules(t, name, pod.Status.PodIP)
	t.Logf("claim Available and its pod Ready %.1fs after apply; kube-router's rules for the policy and the pod in place %.1fs after apply (waited %.1fs after Ready)", ready.Seconds(), time.Since(applied).Seconds(), afterReady.Seconds())

	// A claim with everything a pod reads or serves, under the platform that requires
	// authentication: TLS from a Secret of its namespace, the credentials, and metrics through
	// the auth proxy. Its pods too must need nothing but loopback. A tenant
	// (example/tenant-rbac.yaml, impersonated), who may create no pod, creates it: the
	// exporter is how such a tenant would make a pod connect out.
	requireSecuredComposition(t)
	secured := newNodeNamespace(t, "node-netpol-secured")
	tenant := newTenant(t, secured)
	writeTLSSecret(t, newCA(t), secured, name+"-tls", name)
	sc := newClaim(secured, name, 1)
	scSpec := sc.Object["spec"].(map[string]any)
	scSpec["compositionRef"] = map[string]any{"name": securedComposition}
	scSpec["tls"] = map[string]any{"secretName": name + "-tls"}
	scSpec["metrics"] = map[string]any{"enabled": true}
	if _, err := tenant.Apply(ctx, sc); err != nil {
		t.Fatal(err)
	}
	securedSeen := waitAvailable(t, claimGVK, secured, name, 1)
	securedPod := waitPodsReady(t, secured, name, 1)[0]
	waitPolicyRules(t, name, securedPod.Status.PodIP)

	stop := watchAvailable(ns, name, seen)
	stopSecured := watchAvailable(secured, name, securedSeen)

	cache := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(render.Port))
	metrics := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(render.MetricsPort))
	t.Run("by default only the claim's namespace reaches memcached, only the monitoring namespace the metrics", func(t *testing.T) {
		checks := []reachCheck{
			{what: "the claim's namespace → memcached", ns: ns, proto: "memcached", addr: cache, want: true},
			{what: "another namespace → memcached", ns: other, proto: "memcached", addr: cache},
			{what: "the monitoring namespace → metrics", ns: laneMonitoringNamespace, proto: "metrics", addr: metrics, want: true},
			{what: "the claim's namespace → metrics", ns: ns, proto: "metrics", addr: metrics},
			{what: "another namespace → metrics", ns: other, proto: "metrics", addr: metrics},
		}
		runReach(t, checks)
	})

	t.Run("a namespace the claim allows reaches memcached; others still do not", func(t *testing.T) {
		// A client in the other namespace keeps trying, refused, while the claim changes: the
		// time it gets through is when the change is enforced.
		c := reachCheck{what: "the allowed namespace → memcached", ns: other, proto: "memcached", addr: cache, want: true}
		pod, err := startReach(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Long enough for the firewall to know the new pod's address (0.2–1 s seen), so that
		// what refuses it from then on is the policy.
		waitRunning(t, other, pod)
		time.Sleep(2 * time.Second)
		patched := time.Now()
		patch := fmt.Sprintf(`{"spec":{"networkPolicy":{"allowedNamespaces":{"matchLabels":{%q:%q}}}}}`, corev1.LabelMetadataName, other)
		if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, name, []byte(patch)); err != nil {
			t.Fatal(err)
		}
		err = kube.Wait(ctx, defaultTimeout, "the NetworkPolicy to admit namespace "+other, func(ctx context.Context) error {
			np, err := env.Kube.Typed.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, r := range np.Spec.Ingress {
				for _, from := range r.From {
					if from.NamespaceSelector != nil && from.NamespaceSelector.MatchLabels[corev1.LabelMetadataName] == other {
						return nil
					}
				}
			}
			return errors.Errorf("ingress %+v", np.Spec.Ingress)
		})
		if err != nil {
			t.Fatal(err)
		}
		updated := time.Since(patched)
		r, err := waitReach(other, pod)
		if err != nil {
			t.Fatal(err)
		}
		if !r.ok {
			t.Fatalf("%s: still refused after the claim allowed its namespace: %s", c.what, r.message)
		}
		if r.attempts < 2 {
			t.Errorf("%s: connected at its first attempt, before the claim allowed it: %s", c.what, r.message)
		}
		t.Logf("%s: %s", c.what, r.message)
		t.Logf("the NetworkPolicy updated %.1fs after the claim's patch; the client, refused until then, got through %.1fs after the patch", updated.Seconds(), r.at.Sub(patched).Seconds())
		runReach(t, []reachCheck{{what: "a namespace the claim does not allow → memcached", ns: stranger, proto: "memcached", addr: cache}})
	})

	t.Run("a memcached pod connects to nothing outside itself: its exporter's /scrape reaches no other pod", func(t *testing.T) {
		// The attack: the exporter's /scrape?target= makes the pod connect wherever a client
		// of the metrics port says, from the pod's network position, with the tenant's TLS
		// Secret mounted beside it. The target is a memcached that no NetworkPolicy selects
		// and that no kubelet probes, so that every connection it ever accepted is one of
		// ours or the exporter's: its total_connections tells whether anything arrived.
		target := net.JoinHostPort(startEgressTarget(t, stranger), strconv.Itoa(render.Port))
		for _, c := range []struct {
			what, exporter string
			// loopback also scrapes the pod's own memcached at 127.0.0.1 through /scrape,
			// which only a memcached without TLS and authentication answers.
			loopback bool
		}{
			{what: "the claim's exporter", exporter: "http://" + metrics, loopback: true},
			{what: "the exporter of the claim with TLS and authentication", exporter: "http://" + net.JoinHostPort(securedPod.Status.PodIP, strconv.Itoa(render.MetricsPort))},
		} {
			// What the exporter needs, loopback, still works: its own memcached (through the
			// auth proxy when authentication is on).
			urls := []string{c.exporter + "/metrics"}
			if c.loopback {
				urls = append(urls, c.exporter+"/scrape?target="+net.JoinHostPort("127.0.0.1", strconv.Itoa(render.Port)))
			}
			for _, u := range urls {
				m, err := scrape(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				if m["memcached_up"] != 1 {
					t.Fatalf("%s: GET %s: memcached_up %v, want 1: the pod's own memcached over loopback", c.what, u, m["memcached_up"])
				}
			}
			const attempts = 3
			before := stat(t, target, "total_connections")
			start := time.Now()
			failed := false
			for i := range attempts {
				u := c.exporter + "/scrape?target=" + target
				m, err := scrape(ctx, u)
				if err != nil {
					t.Fatalf("%s: attempt %d: %v", c.what, i+1, err)
				}
				if m["memcached_up"] != 0 {
					failed = true
					t.Errorf("%s: GET %s: memcached_up %v, want 0: the pod connected out to another pod and read its stats", c.what, u, m["memcached_up"])
				}
			}
			took := time.Since(start)
			// Our own stats connection is the one more it counts now.
			if arrived := stat(t, target, "total_connections") - before - 1; arrived != 0 {
				failed = true
				t.Errorf("%s: the target accepted %d connections during %d scrapes, want 0", c.what, arrived, attempts)
			}
			if !failed {
				t.Logf("%s: %d scrapes of %s, memcached_up 0 each and no connection arrived at the target, all in %s (the firewall refuses at once); its own memcached over loopback: memcached_up 1", c.what, attempts, target, took.Round(time.Millisecond))
			}
		}
	})

	t.Run("the claims stay Available under enforcement, their pods Ready and never restarted", func(t *testing.T) {
		for _, c := range []struct {
			ns, pod string
			stop    func() ([]string, int)
		}{{ns, pod.Name, stop}, {secured, securedPod.Name, stopSecured}} {
			gaps, echoes := c.stop()
			if len(gaps) > 0 {
				t.Errorf("claim %s/%s was not Available at times: %s", c.ns, name, strings.Join(gaps, "; "))
			}
			if echoes > 0 {
				t.Logf("claim %s/%s: %d one-second samples showed Crossplane's echo of an earlier condition (crossplane/crossplane#7062)", c.ns, name, echoes)
			}
			waitAvailable(t, claimGVK, c.ns, name, 1)
			got, err := env.Kube.Typed.CoreV1().Pods(c.ns).Get(ctx, c.pod, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range got.Status.ContainerStatuses {
				if s.RestartCount != 0 || !s.Ready {
					t.Errorf("pod %s/%s, container %s: restarts %d ready %v, want 0 and true (its probes fail under the policy, or it needs to connect out?)", c.ns, c.pod, s.Name, s.RestartCount, s.Ready)
				}
			}
		}
	})

	rss, err := fw.RSS()
	if err != nil {
		t.Error(err)
	}
	m, err := scrape(ctx, fw.MetricsURL)
	if err != nil {
		t.Error(err)
	}
	syncs := m["kube_router_controller_iptables_sync_time_count"]
	t.Logf("scenario took %.1fs; kube-router's resident memory %d MiB; it synced its rules %v times, %.0f ms each on average", time.Since(began).Seconds(), rss>>20, syncs, 1000*m["kube_router_controller_iptables_sync_time_sum"]/max(syncs, 1))
}

// waitPolicyRules waits until the firewall filters traffic to the pod at ip through the
// NetworkPolicy named policy, and returns how long it waited.
func waitPolicyRules(t *testing.T, policy, ip string) time.Duration {
	t.Helper()
	start := time.Now()
	err := kube.Wait(context.Background(), defaultTimeout, "kube-router's rules for NetworkPolicy "+policy+" and pod "+ip, func(context.Context) error {
		rules, err := node.FirewallRules()
		if err != nil {
			return err
		}
		dest, through := false, false
		for _, r := range rules {
			dest = dest || strings.Contains(r, "-d "+ip+"/32")
			through = through || strings.Contains(r, "run through nw policy "+policy)
		}
		if !dest || !through {
			return errors.Errorf("%d rules; one for %s: %v, one through the policy: %v", len(rules), ip, dest, through)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// watchAvailable polls the claim, seen Available as since, every second until the returned
// function is called, which returns every lapse seen (availability.Tracker: Crossplane's
// echoes of an earlier condition are counted, not returned) and the number of echoes.
func watchAvailable(namespace, name string, since memcached) func() (lapses []string, echoes int) {
	ctx, cancel := context.WithCancel(context.Background())
	var tracker availability.Tracker
	tracker.Lapse(since.sample(time.Now()))
	var gaps []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			m, err := getMemcached(ctx, claimGVK, namespace, name)
			if ctx.Err() != nil {
				return
			}
			if err != nil || tracker.Lapse(m.sample(time.Now())) {
				gaps = append(gaps, fmt.Sprintf("%s: %s %v", time.Now().Format(time.TimeOnly), m, err))
			}
		}
	}()
	return func() ([]string, int) {
		cancel()
		<-done
		return gaps, tracker.Echoes
	}
}

// waitRunning waits until the pod's container runs on the real node.
func waitRunning(t *testing.T, namespace, name string) {
	t.Helper()
	err := kube.Wait(context.Background(), defaultTimeout, "pod "+namespace+"/"+name+" running", func(ctx context.Context) error {
		got, err := env.Kube.Typed.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodRunning || got.Spec.NodeName != node.Name {
			return errors.Errorf("phase %s on node %q", got.Status.Phase, got.Spec.NodeName)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// startEgressTarget starts, in namespace, a memcached pod that no NetworkPolicy selects and no
// probe connects to, waits until the host reaches it, and returns its address.
func startEgressTarget(t *testing.T, namespace string) string {
	t.Helper()
	ctx := context.Background()
	pods := env.Kube.Typed.CoreV1().Pods(namespace)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "egress-target-", Labels: map[string]string{"app.kubernetes.io/name": "egress-target"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			AutomountServiceAccountToken:  ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](render.UID),
				RunAsGroup:     ptr.To[int64](render.UID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    "memcached",
				Image:   env.Images.Memcached,
				Command: []string{"memcached"},
				Args:    []string{"--memory-limit=16"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	created, err := pods.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(errors.Wrap(err, "cannot create the target pod"))
	}
	t.Cleanup(func() {
		_ = pods.Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	waitRunning(t, namespace, created.Name)
	var ip string
	err = kube.Wait(ctx, defaultTimeout, "the target memcached "+namespace+"/"+created.Name+" answering", func(ctx context.Context) error {
		got, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.PodIP == "" {
			return errors.New("no pod IP yet")
		}
		ip = got.Status.PodIP
		_, err = memcachedStats(net.JoinHostPort(ip, strconv.Itoa(render.Port)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ip
}
