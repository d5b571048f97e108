//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/memcachedload"
	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/images"
	"github.com/example/function-memcached/test/e2e/internal/node"
)

// The load each run of TestNodeServesLikeBareMemcached sends, the same to the pod and to the
// bare memcached: closed-loop over servesConnections connections (twice memcached's default
// four threads), nine gets for one set over a prefilled key space of servesKeys keys of
// servesValueSize bytes, for servesRun; servesRounds rounds of pod, bare, bare, pod. The
// ratio compares the median runs: other work on the machine (two cores, shared with the
// generator and whatever else runs) makes single runs differ by up to twice.
const (
	servesConnections = 8
	servesKeys        = 1000
	servesValueSize   = 100
	servesGetRatio    = 0.9
	servesRun         = time.Second
	servesRounds      = 2
	// servesCPULimit is each claim's resources.limits.cpu, the quota the bare memcached runs
	// under too.
	servesCPULimit = "250m"
	// servesFloor is the least share of the bare server's gets a second the pod must serve.
	// Measured 2026-12-07: see docs/performance.md, "What one replica serves".
	servesFloor = 0.5
)

// servesMode is one way a claim's replica is reached, and its claim.
type servesMode struct {
	name        string
	composition string
	spec        map[string]any
	// tls: clients speak TLS, verified against the connection Secret's ca.crt (with its
	// client certificate in ClientCertificate mode).
	tls  bool
	auth memcachedload.Auth
}

// What one replica serves, in each mode the product offers: a size-1 claim with metrics on
// and a CPU limit of servesCPULimit for each of plain, TLS, Password, ClientCertificate and SASL, and
// beside each, a bare memcached on the host (bin/memcached, what the pod's image holds) run
// with the arguments and environment the pod's memcached process runs with — its mounted
// files copied, its ports mapped to free ones on 127.0.0.1 — in a host cgroup with the pod's
// container's CFS quota. The project's load generator (internal/memcachedload), on the host,
// drives both the same way, in interleaved runs; every mode serves through the pod without an
// error, every get hits, and the pod serves at least servesFloor of the bare server's gets a
// second. The figures are logged for docs/performance.md.
func TestNodeServesLikeBareMemcached(t *testing.T) {
	requireNode(t)
	requireSecuredComposition(t)
	// Not parallel: it runs alone, before the parallel scenarios, so that its figures are
	// memcached's under its CPU limit and not the other scenarios' load, and so that its five
	// claims' CPU requests never keep another scenario's pods from the real node.
	began := time.Now()
	ns := newNodeNamespace(t, "node-serves")
	ca := newCA(t)
	writeTLSSecret(t, ca, ns, "tls-tls", "tls")
	resources := map[string]any{"requests": map[string]any{"cpu": "100m"}, "limits": map[string]any{"cpu": servesCPULimit}}
	auth := func(mode string) map[string]any { return map[string]any{"enabled": true, "mode": mode} }
	modes := []servesMode{
		{name: "plain", composition: laneComposition},
		{name: "tls", composition: laneComposition, spec: map[string]any{"tls": map[string]any{"secretName": "tls-tls"}}, tls: true},
		{name: "password", composition: securedComposition, spec: map[string]any{"auth": auth(cachev1alpha1.AuthModePassword)}, auth: memcachedload.AuthPassword},
		{name: "clientcert", composition: securedComposition, spec: map[string]any{"auth": auth(cachev1alpha1.AuthModeClientCertificate)}, tls: true},
		{name: "sasl", composition: securedComposition, spec: map[string]any{"auth": auth(cachev1alpha1.AuthModeSASL)}, auth: memcachedload.AuthSASL},
	}
	for _, m := range modes {
		claim := newClaim(ns, m.name, 1)
		spec := claim.Object["spec"].(map[string]any)
		spec["compositionRef"] = map[string]any{"name": m.composition}
		spec["metrics"] = map[string]any{"enabled": true}
		spec["resources"] = resources
		for k, v := range m.spec {
			spec[k] = v
		}
		apply(t, claim)
	}
	// Its five pods hold 570m of the real node's two CPUs: they go when it ends, passed or
	// failed, before the parallel scenarios need the room (newNodeNamespace keeps a failed
	// scenario's namespace).
	t.Cleanup(func() {
		for _, m := range modes {
			_ = env.Kube.Delete(context.Background(), claimGVK, ns, m.name)
		}
	})
	for _, m := range modes {
		waitAvailable(t, claimGVK, ns, m.name, 1)
	}
	t.Logf("five claims Available %.0fs after the scenario began", time.Since(began).Seconds())

	var rows []servesRow
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			pod := waitPodsReady(t, ns, m.name, 1)[0]
			cd := waitConnection(t, ns, m.name+"-memcached", func(map[string]string) error { return nil })
			cfg := memcachedload.Config{
				Auth: m.auth, Username: cd["username"], Password: cd["password"],
				Connections: servesConnections, Duration: servesRun, Keys: servesKeys, ValueSize: servesValueSize,
				GetRatio: servesGetRatio, Prefill: true, Seed: 1,
			}
			if m.tls {
				roots := x509.NewCertPool()
				if !roots.AppendCertsFromPEM([]byte(cd["ca.crt"])) {
					t.Fatal("the connection Secret's ca.crt holds no certificate")
				}
				cfg.TLS = &tls.Config{RootCAs: roots, ServerName: cd["host"], MinVersion: tls.VersionTLS12}
				if cd["tls.crt"] != "" {
					pair, err := tls.X509KeyPair([]byte(cd["tls.crt"]), []byte(cd["tls.key"]))
					if err != nil {
						t.Fatalf("the connection Secret's client certificate: %v", err)
					}
					cfg.TLS.Certificates = []tls.Certificate{pair}
				}
			}
			ctr := container(t, &pod, render.ContainerName)
			quota, period, err := ctr.CPUQuota()
			if err != nil {
				t.Fatal(err)
			}
			limit := resource.MustParse(servesCPULimit)
			if want := limit.MilliValue(); quota*1000/period != want {
				t.Fatalf("the memcached container's CFS quota is %d of %d µs, want %dm (resources.limits.cpu %s)", quota, period, want, servesCPULimit)
			}
			bare := startBareMemcached(t, &pod, ctr, quota, period)
			podCfg, bareCfg := cfg, cfg
			podCfg.Address = net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(render.Port))
			bareCfg.Address = bare.addr

			var onPod, onBare servesResult
			for range servesRounds {
				onPod.add(t, "pod", podCfg, ctr.CPUTime)
				onBare.add(t, "bare", bareCfg, bare.cgroup.CPUTime)
				onBare.add(t, "bare", bareCfg, bare.cgroup.CPUTime)
				onPod.add(t, "pod", podCfg, ctr.CPUTime)
			}
			r := servesRow{mode: m.name, pod: onPod, bare: onBare}
			rows = append(rows, r)
			t.Logf("serves-figures %s", r)
			if ratio := r.ratio(); ratio < servesFloor {
				t.Errorf("the pod served %.0f gets/s (median run), %.0f%% of the bare memcached's %.0f under the same CPU limit: want at least %.0f%%",
					onPod.median(), 100*ratio, onBare.median(), 100*servesFloor)
			}
		})
	}
	writeServesCSV(t, rows)
	sort.Slice(rows, func(i, j int) bool { return rows[i].mode < rows[j].mode })
	var table strings.Builder
	fmt.Fprintf(&table, "| mode | pod gets/s | bare gets/s | ratio | pod sets/s | bare sets/s | pod p50 | bare p50 | pod p99 | bare p99 | pod p99.9 | bare p99.9 | pod memcached CPUs | bare memcached CPUs | others' CPUs (pod runs) | others' CPUs (bare runs) |\n")
	for _, r := range rows {
		fmt.Fprintf(&table, "%s\n", r.markdown())
	}
	t.Logf("serves-table (%d connections closed-loop, %d%% gets, %d keys of %d B, %d×2 runs of %v each side, CPU limit %s):\n%s",
		servesConnections, int(servesGetRatio*100), servesKeys, servesValueSize, 2*servesRounds, servesRun, servesCPULimit, table.String())
	t.Logf("serves-duration %.0fs", time.Since(began).Seconds())
}

// servesResult sums the runs against one side: requests, time, latencies and the CPU memcached
// used.
type servesResult struct {
	gets, sets int64
	// cpu is memcached's CPU time, client the generator's (this process's), host the
	// machine's (all of it busy, everyone's).
	elapsed, cpu, client, host time.Duration
	latency                    memcachedload.Histogram
	runs                       []float64
}

// add runs cfg once, failing t on any error or miss, and adds what it measured.
func (s *servesResult) add(t *testing.T, side string, cfg memcachedload.Config, cpu func() (time.Duration, error)) {
	t.Helper()
	before, err := cpu()
	if err != nil {
		t.Fatal(err)
	}
	clientBefore, hostBefore := processCPU(t), hostCPU(t)
	r, err := memcachedload.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%s: %v", side, err)
	}
	after, err := cpu()
	if err != nil {
		t.Fatal(err)
	}
	client, host := processCPU(t)-clientBefore, hostCPU(t)-hostBefore
	if r.Errors != 0 || r.Gets == 0 || r.Hits != r.Gets {
		t.Fatalf("%s: %d errors (%v), %d hits of %d gets: want every get answered and hitting the prefilled keys", side, r.Errors, r.FirstError, r.Hits, r.Gets)
	}
	t.Logf("%s: %s, memcached used %.2f CPUs", side, &r, (after-before).Seconds()/r.Elapsed.Seconds())
	s.gets += r.Gets
	s.sets += r.Sets
	s.elapsed += r.Elapsed
	s.cpu += after - before
	s.client += client
	s.host += host
	s.latency.Merge(&r.Latency)
	s.runs = append(s.runs, r.GetsPerSecond())
}

func (s *servesResult) getsPerSecond() float64 { return float64(s.gets) / s.elapsed.Seconds() }
func (s *servesResult) setsPerSecond() float64 { return float64(s.sets) / s.elapsed.Seconds() }
func (s *servesResult) cpus() float64          { return s.cpu.Seconds() / s.elapsed.Seconds() }

// others is the CPU the rest of the machine used while this side ran: neither memcached nor
// the generator (the suite's control plane, other work on the machine).
func (s *servesResult) others() float64 {
	return (s.host - s.cpu - s.client).Seconds() / s.elapsed.Seconds()
}

// processCPU is the CPU time this process (the generator and the idle suite) has used.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hostCPU is the CPU time the whole machine has been busy (the first line of /proc/stat: all
// but idle and iowait, in USER_HZ ticks of 10 ms).
func hostCPU(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is counted in user already
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q", line)
		}
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// servesRow is one mode's figures, pod against bare.
type servesRow struct {
	mode      string
	pod, bare servesResult
}

// ratio is the pod's median run's gets a second over the bare server's.
func (r servesRow) ratio() float64 { return r.pod.median() / r.bare.median() }

// median is the median run's gets a second.
func (s *servesResult) median() float64 {
	runs := slices.Clone(s.runs)
	slices.Sort(runs)
	if len(runs)%2 == 1 {
		return runs[len(runs)/2]
	}
	return (runs[len(runs)/2-1] + runs[len(runs)/2]) / 2
}

func (r servesRow) String() string {
	return fmt.Sprintf("%s: pod %.0f gets/s (median; runs %.0f) p50 %v p99 %v p99.9 %v CPUs memcached %.2f generator %.2f others %.2f; "+
		"bare %.0f gets/s (median; runs %.0f) p50 %v p99 %v p99.9 %v CPUs memcached %.2f generator %.2f others %.2f; ratio %.2f",
		r.mode, r.pod.median(), r.pod.runs, r.pod.latency.Quantile(0.5), r.pod.latency.Quantile(0.99), r.pod.latency.Quantile(0.999), r.pod.cpus(), r.pod.client.Seconds()/r.pod.elapsed.Seconds(), r.pod.others(),
		r.bare.median(), r.bare.runs, r.bare.latency.Quantile(0.5), r.bare.latency.Quantile(0.99), r.bare.latency.Quantile(0.999), r.bare.cpus(), r.bare.client.Seconds()/r.bare.elapsed.Seconds(), r.bare.others(), r.ratio())
}

func (r servesRow) markdown() string {
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + " µs" }
	return fmt.Sprintf("| %s | %.0f | %.0f | %.2f | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f |",
		r.mode, r.pod.median(), r.bare.median(), r.ratio(), r.pod.setsPerSecond(), r.bare.setsPerSecond(),
		us(r.pod.latency.Quantile(0.5)), us(r.bare.latency.Quantile(0.5)), us(r.pod.latency.Quantile(0.99)), us(r.bare.latency.Quantile(0.99)),
		us(r.pod.latency.Quantile(0.999)), us(r.bare.latency.Quantile(0.999)), r.pod.cpus(), r.bare.cpus(), r.pod.others(), r.bare.others())
}

// bareMemcached is a memcached on the host, outside any pod.
type bareMemcached struct {
	addr   string
	cgroup *node.HostCgroup
}

// startBareMemcached runs bin/memcached on the host as the pod's memcached runs: the same
// arguments and environment, read from the running process, but for its mounted directories,
// copied from the container's root into a directory of the host (files root:11211, mode 0440,
// as the kubelet lays them out), and its ports, mapped to free ones on 127.0.0.1. It runs as
// 11211 in a host cgroup with the CFS quota and period given, until the test ends.
func startBareMemcached(t *testing.T, pod *corev1.Pod, ctr node.Container, quota, period int64) bareMemcached {
	t.Helper()
	proc := mainProcess(t, ctr)
	var spec corev1.Container
	for _, c := range pod.Spec.Containers {
		if c.Name == render.ContainerName {
			spec = c
		}
	}
	dir := memcachedtest.Dir(t)
	var from []string
	for _, vm := range spec.VolumeMounts {
		src := filepath.Join("/proc", strconv.Itoa(proc.PID), "root", vm.MountPath)
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue // The kubelet's atomic-writer directories; the files link into them.
			}
			b, err := os.ReadFile(filepath.Join(src, e.Name())) //nolint:gosec // The pod's mounted Secret.
			if err != nil {
				t.Fatal(err)
			}
			memcachedtest.WriteFile(t, filepath.Join(dir, vm.Name, e.Name()), b)
		}
		from = append(from, vm.MountPath, filepath.Join(dir, vm.Name))
	}
	port := strconv.Itoa(memcachedtest.FreePort(t))
	loopback := strconv.Itoa(memcachedtest.FreePort(t))
	from = append(from,
		"--port="+strconv.Itoa(render.Port), "--port="+port,
		"--listen=0.0.0.0", "--listen=127.0.0.1",
		"127.0.0.1:"+strconv.Itoa(render.LoopbackPort), "127.0.0.1:"+loopback)
	r := strings.NewReplacer(from...)
	if len(proc.Cmdline) < 2 {
		t.Fatalf("the pod's memcached runs %q", proc.Cmdline)
	}
	var args []string
	for _, a := range proc.Cmdline[1:] {
		args = append(args, r.Replace(a))
	}
	var envs []string
	for _, e := range spec.Env {
		envs = append(envs, e.Name+"="+r.Replace(e.Value))
	}
	g, err := node.NewHostCgroup("fm-e2e-bare-"+pod.Namespace+"-"+pod.Name, quota, period)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(images.MemcachedBinary(env.BinDir), args...) //nolint:gosec // The pod's own arguments.
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Env = &out, &out, envs
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: render.UID, Gid: render.UID}}
	if err := cmd.Start(); err != nil {
		_ = g.Remove()
		t.Fatalf("cannot start the bare memcached %v: %v", args, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	})
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + port
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the bare memcached %v exited: %v\n%s", args, err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal(errors.Errorf("the bare memcached %v does not listen on %s after 10s: %v\n%s", args, addr, err, out.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("bare memcached on %s: %q, CFS quota %d of %d µs", addr, args, quota, period)
	return bareMemcached{addr: addr, cgroup: g}
}

// writeServesCSV writes each mode's median gets a second, pod and bare, in the order the
// modes ran, to <output>/serves/serves.csv, which `make serves-plot` draws.
func writeServesCSV(t *testing.T, rows []servesRow) {
	t.Helper()
	var b strings.Builder
	b.WriteString("mode,pod_gets_per_s,bare_gets_per_s\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%.0f,%.0f\n", r.mode, r.pod.median(), r.bare.median())
	}
	dir := filepath.Join(env.OutputDir, "serves")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "serves.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil { //nolint:gosec // A report.
		t.Fatal(err)
	}
	t.Logf("serves-csv %s", p)
}
