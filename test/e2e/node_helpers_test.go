//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/node"
)

// The node lane: scenarios named TestNode… run their claims' pods on the real node
// (env.Node) — real containers, probes, cgroups and a real memcached client — instead of
// kwok's fake nodes. Their namespaces opt in to the real node (node.OptIn) and their claims use
// laneComposition, whose function Input points at the images the suite built and serves, as a
// platform with a private mirror would configure it.

// laneComposition is the node lane's Composition: the example's pipeline with an Input that
// defaults images to the suite's registry and allows only that registry.
const laneComposition = "xmemcacheds-node-lane.cache.example.com"

// laneMaxMemoryMB is the largest cache the lane's policy allows, what the memory scenario
// fills; laneMaxSize the largest size, for the resize scenario's 5 replicas.
const (
	laneMaxMemoryMB = 1024
	laneMaxSize     = 5
)

// laneMonitoringNamespace is the namespace the lane's Input names for monitoring: the
// NetworkPolicy of a claim with metrics on admits its pods, and only its, to the metrics port.
const laneMonitoringNamespace = "node-monitoring"

// laneComposed is the lane Composition's set-up, which every lane scenario needs.
var laneComposed setUp

// setUp is a set-up several scenarios need, done once, by the first that asks: each of them
// fails when it failed.
type setUp struct {
	once sync.Once
	err  error
}

// require runs apply the first time any scenario asks, and fails t when it failed.
func (s *setUp) require(t *testing.T, apply func(context.Context) error) {
	t.Helper()
	s.once.Do(func() { s.err = apply(context.Background()) })
	if s.err != nil {
		t.Fatal(s.err)
	}
}

// requireNode skips a node lane scenario when the lane is off (E2E_NODE=off), saying so; with
// the lane on, the suite has already failed if the machine cannot run it.
func requireNode(t *testing.T) {
	t.Helper()
	if env.Node == nil {
		t.Skip("the node lane is off (E2E_NODE=off): no real node to run this scenario's pods")
	}
	laneComposed.require(t, applyLaneComposition)
}

func applyLaneComposition(ctx context.Context) error {
	return applyCompositionFromExample(ctx, laneComposition, "", laneInput())
}

// laneInput is the lane Composition's function Input.
func laneInput() map[string]any {
	return map[string]any{
		"apiVersion": "memcached.fn.example.com/v1beta1",
		"kind":       "Input",
		"defaults": map[string]any{
			"image":         env.Images.Memcached,
			"exporterImage": env.Images.Exporter,
			"memoryLimitMB": int64(64),
		},
		"metrics": map[string]any{"monitoringNamespace": laneMonitoringNamespace},
		"policy": map[string]any{
			"maxSize":           int64(laneMaxSize),
			"maxMemoryLimitMB":  int64(laneMaxMemoryMB),
			"allowedRegistries": []any{env.Images.Registry},
		},
	}
}

// exampleCompositionNamed is example/composition.yaml (with the lane's substitutions) under
// another name and without the Memcached provider's policy label, which only the example
// Composition may carry: two labelled Compositions leave Instances without a policy.
func exampleCompositionNamed(name string) (*unstructured.Unstructured, error) {
	objs, err := env.Example("composition.yaml")
	if err != nil || len(objs) != 1 {
		return nil, errors.Errorf("cannot read example/composition.yaml as one Composition: %v", err)
	}
	c := objs[0]
	c.SetName(name)
	labels := c.GetLabels()
	delete(labels, "memcached.example.com/instance-policy")
	c.SetLabels(labels)
	return c, nil
}

// applyCompositionFromExample applies example/composition.yaml under another name with its one
// step's Input replaced by input, as a platform would for a second class of Memcached, and its
// step calling function unless that is empty. Only the example Composition carries the
// Memcached provider's policy label: two labelled Compositions with different Inputs would
// leave Instances without a policy.
func applyCompositionFromExample(ctx context.Context, name, function string, input map[string]any) error {
	c, err := exampleCompositionNamed(name)
	if err != nil {
		return err
	}
	pipeline, _, _ := unstructured.NestedSlice(c.Object, "spec", "pipeline")
	if len(pipeline) != 1 {
		return errors.Errorf("example/composition.yaml has %d pipeline steps, want 1", len(pipeline))
	}
	pipeline[0].(map[string]any)["input"] = input
	if function != "" {
		pipeline[0].(map[string]any)["functionRef"] = map[string]any{"name": function}
	}
	if err := unstructured.SetNestedSlice(c.Object, pipeline, "spec", "pipeline"); err != nil {
		return err
	}
	_, err = env.Kube.Apply(ctx, c)
	return errors.Wrapf(err, "cannot apply Composition %s", name)
}

// newNodeNamespace creates a restricted namespace whose pods go to the real node.
func newNodeNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := newNamespace(t, prefix)
	if err := node.OptIn(context.Background(), env.Kube, ns); err != nil {
		t.Fatal(err)
	}
	// The real node has two CPUs for every node scenario's pods, and the lane's scenarios
	// request about that much together: a passed scenario's namespace, and so its pods, go
	// when it ends (without waiting: a Pending pod is scheduled once they are gone); a failed
	// one's stays for a look.
	t.Cleanup(func() {
		if !t.Failed() {
			_ = env.Kube.Typed.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
	})
	return ns
}

// newNodeClaim is newClaim with the lane's Composition and spec merged into its spec.
func newNodeClaim(namespace, name string, size int, spec map[string]any) *unstructured.Unstructured {
	c := newClaim(namespace, name, size)
	s, _, _ := unstructured.NestedMap(c.Object, "spec")
	s["compositionRef"] = map[string]any{"name": laneComposition}
	for k, v := range spec {
		s[k] = v
	}
	_ = unstructured.SetNestedMap(c.Object, s, "spec")
	return c
}

// idleCPU is a claim's spec.resources for a scenario's pods that need little CPU: a request
// of 10m, so that the node scenarios running at once fit the real node's allocatable CPU (two
// cores, where each pod requested the default 100m and its sidecars 10m each).
func idleCPU() map[string]any {
	return map[string]any{"requests": map[string]any{"cpu": "10m"}}
}

// livePods returns the Memcached name's pods that are not being deleted.
func livePods(ctx context.Context, namespace, name string) ([]corev1.Pod, error) {
	list, err := env.Kube.Typed.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPodsReady waits until the Memcached runs exactly n live pods, all Ready on the real node.
func waitPodsReady(t *testing.T, namespace, name string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := kube.Wait(context.Background(), defaultTimeout, fmt.Sprintf("%d pods of %s/%s Ready on the real node", n, namespace, name), func(ctx context.Context) error {
		ps, err := livePods(ctx, namespace, name)
		if err != nil {
			return err
		}
		var states []string
		ready := 0
		for i := range ps {
			if ps[i].Spec.NodeName != node.Name {
				return errors.Errorf("pod %s is on node %q, not the real node", ps[i].Name, ps[i].Spec.NodeName)
			}
			if podReady(&ps[i]) {
				ready++
			}
			states = append(states, ps[i].Name+"="+string(ps[i].Status.Phase))
		}
		if len(ps) != n || ready != n {
			return errors.Errorf("%d pods, %d Ready: %v", len(ps), ready, states)
		}
		pods = ps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// servers returns the ready endpoints (ip:port) of the Memcached's headless Service, as a
// client resolving the Service's name would get them.
func servers(ctx context.Context, namespace, name string) ([]string, error) {
	list, err := env.Kube.Typed.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Name != nil && *p.Name == "memcached" && p.Port != nil {
				port = *p.Port
			}
		}
		for _, e := range s.Endpoints {
			if port != 0 && e.Conditions.Ready != nil && *e.Conditions.Ready {
				for _, a := range e.Addresses {
					out = append(out, net.JoinHostPort(a, strconv.Itoa(int(port))))
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// waitServers waits until the Service has exactly the endpoints of pods.
func waitServers(t *testing.T, namespace, name string, pods []corev1.Pod) []string {
	t.Helper()
	var want []string
	for _, p := range pods {
		want = append(want, net.JoinHostPort(p.Status.PodIP, "11211"))
	}
	sort.Strings(want)
	var got []string
	err := kube.Wait(context.Background(), defaultTimeout, "the Service's endpoints to be "+strings.Join(want, ","), func(ctx context.Context) error {
		var err error
		if got, err = servers(ctx, namespace, name); err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return errors.Errorf("endpoints %v", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// container returns the host's view of the running container named c of pod.
func container(t *testing.T, pod *corev1.Pod, c string) node.Container {
	t.Helper()
	ct, err := node.FindContainer(pod, c)
	if err != nil {
		t.Fatal(err)
	}
	return ct
}

// mainProcess reads the container's process (the first of its cgroup: the entrypoint).
func mainProcess(t *testing.T, c node.Container) node.Process {
	t.Helper()
	pids, err := c.PIDs()
	if err != nil {
		t.Fatal(err)
	}
	p, err := node.ReadProcess(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// memcachedStats sends `stats` to the memcached at addr and returns what it reports.
func memcachedStats(addr string) (map[string]string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close() //nolint:errcheck // Read-only.
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("stats\r\n")); err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		l := sc.Text()
		if l == "END" {
			return out, nil
		}
		if f := strings.Fields(l); len(f) == 3 && f[0] == "STAT" {
			out[f[1]] = f[2]
		}
	}
	return nil, errors.Errorf("stats from %s ended early: %v", addr, sc.Err())
}

// stat returns one numeric stat of the memcached at addr.
func stat(t *testing.T, addr, name string) int64 {
	t.Helper()
	s, err := memcachedStats(addr)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(s[name], 10, 64)
	if err != nil {
		t.Fatalf("stat %s of %s: %q", name, addr, s[name])
	}
	return v
}

// restarts returns the restart count and the last termination reason of every container.
func restarts(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, s := range pod.Status.ContainerStatuses {
		last := ""
		if s.LastTerminationState.Terminated != nil {
			last = s.LastTerminationState.Terminated.Reason
		}
		out[s.Name] = fmt.Sprintf("restarts=%d last=%q", s.RestartCount, last)
	}
	return out
}

// scrape reads the Prometheus text at url into metric name (without labels) → value; a
// metric with labels keeps its last sample.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return nil, errors.Errorf("GET %s: %s", url, rsp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(rsp.Body)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		name, _, _ := strings.Cut(f[0], "{")
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// wantConfined checks, from the kernel's view of process p, what the restricted Pod Security
// Standard and a read-only root file system promise: the user, no capabilities at all, no way
// to gain privileges, a seccomp filter, and a root mounted read-only.
func wantConfined(t *testing.T, what string, p node.Process, uid int) {
	t.Helper()
	for i, id := range p.UID {
		if id != uid || p.GID[i] != uid {
			t.Errorf("%s: uids %v gids %v, want every one %d", what, p.UID, p.GID, uid)
			break
		}
	}
	if p.CapEff != 0 || p.CapPrm != 0 || p.CapBnd != 0 || p.CapAmb != 0 {
		t.Errorf("%s: capabilities eff=%x prm=%x bnd=%x amb=%x, want none", what, p.CapEff, p.CapPrm, p.CapBnd, p.CapAmb)
	}
	if p.NoNewPrivs != 1 {
		t.Errorf("%s: NoNewPrivs=%d, want 1 (no privilege escalation)", what, p.NoNewPrivs)
	}
	if p.Seccomp != 2 {
		t.Errorf("%s: Seccomp=%d, want 2 (a filter: RuntimeDefault)", what, p.Seccomp)
	}
	if !slices.Contains(p.Mounts["/"], "ro") {
		t.Errorf("%s: root mounted %v, want ro", what, p.Mounts["/"])
	}
}

// A reachCheck runs the reach client in a pod of ns against addr, speaking proto; want says
// whether it must get an answer or be refused.
//
// A client admitted by the policy keeps trying for up to admitWithin: the firewall learns of
// a new pod's address from the API server, and until it has, the pod is refused like any
// stranger. A client that must be refused keeps trying for refuseFor, and every attempt must
// fail.
type reachCheck struct {
	what, ns, proto, addr string
	want                  bool
	// secret, when set, is a connection Secret the client mounts and connects as it says
	// (TLS, credentials), as an application of the claim does.
	secret string
}

const (
	admitWithin = 45 * time.Second
	refuseFor   = 5 * time.Second
)

// A reachResult is what a reach pod reported.
type reachResult struct {
	ok      bool
	message string
	// at is when a client that got through got its answer; attempts how many it made.
	at       time.Time
	attempts int
}

// runReach runs the checks' client pods at once and fails the test for each whose outcome is
// not what it wants; it returns their results in order.
func runReach(t *testing.T, checks []reachCheck) []reachResult {
	t.Helper()
	results := make([]reachResult, len(checks))
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { results[i], errs[i] = reach(c, i) })
	}
	wg.Wait()
	for i, c := range checks {
		switch {
		case errs[i] != nil:
			t.Errorf("%s: %v", c.what, errs[i])
		case results[i].ok != c.want:
			t.Errorf("%s: connected %v, want %v: %s", c.what, results[i].ok, c.want, results[i].message)
		default:
			t.Logf("%s: %s", c.what, results[i].message)
		}
	}
	return results
}

// reach runs one reachCheck's client pod to completion and deletes it.
func reach(c reachCheck, i int) (reachResult, error) {
	pod, err := startReach(c, i)
	if err != nil {
		return reachResult{}, err
	}
	return waitReach(c.ns, pod)
}

// startReach creates a reachCheck's client pod, restricted like every pod of the suite, and
// returns its name.
func startReach(c reachCheck, i int) (string, error) {
	args := []string{"-proto=" + c.proto, "-timeout=2s", "-for=" + refuseFor.String()}
	if c.want {
		args[2] = "-for=" + admitWithin.String()
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if c.secret != "" {
		args = append(args, "-credentials=/credentials")
		volumes = []corev1.Volume{{Name: "credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: c.secret}}}}
		mounts = []corev1.VolumeMount{{Name: "credentials", MountPath: "/credentials", ReadOnly: true}}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: fmt.Sprintf("reach-%s-%d-", c.proto, i), Labels: map[string]string{"app.kubernetes.io/name": "reach"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To[int64](120),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			AutomountServiceAccountToken:  ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65534),
				RunAsGroup:     ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: volumes,
			Containers: []corev1.Container{{
				Name:         "reach",
				Image:        env.Images.Reach,
				Args:         append(args, c.addr),
				VolumeMounts: mounts,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	created, err := env.Kube.Typed.CoreV1().Pods(c.ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		return "", errors.Wrap(err, "cannot create the client pod")
	}
	return created.Name, nil
}

// reachedAt matches what reach prints on success: the time and the number of attempts.
var reachedAt = regexp.MustCompile(` at (\S+) after (\d+) attempts`)

// waitReach waits until the client pod has finished, reads its report and deletes it.
func waitReach(namespace, name string) (reachResult, error) {
	ctx := context.Background()
	pods := env.Kube.Typed.CoreV1().Pods(namespace)
	defer pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}) //nolint:errcheck // Best effort; the node's drain removes what is left.
	var r reachResult
	err := kube.Wait(ctx, defaultTimeout, "client pod "+namespace+"/"+name+" to finish", func(ctx context.Context) error {
		got, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Spec.NodeName != "" && got.Spec.NodeName != node.Name {
			return errors.Errorf("on node %q, not the real node", got.Spec.NodeName)
		}
		switch got.Status.Phase {
		case corev1.PodSucceeded, corev1.PodFailed:
		default:
			return errors.Errorf("phase %s", got.Status.Phase)
		}
		r.ok = got.Status.Phase == corev1.PodSucceeded
		r.message = string(got.Status.Phase)
		for _, s := range got.Status.ContainerStatuses {
			if s.State.Terminated != nil {
				r.message += ": " + strings.TrimSpace(s.State.Terminated.Message)
			}
		}
		return nil
	})
	if err != nil || !r.ok {
		return r, err
	}
	m := reachedAt.FindStringSubmatch(r.message)
	if m == nil {
		return r, errors.Errorf("no time and attempts in the client's report %q", r.message)
	}
	if r.at, err = time.Parse(time.RFC3339Nano, m[1]); err != nil {
		return r, errors.Wrapf(err, "cannot parse the client's time %q", m[1])
	}
	r.attempts, err = strconv.Atoi(m[2])
	return r, errors.Wrapf(err, "cannot parse the client's attempts %q", m[2])
}
