package node

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// What the kernel says of this very process is what a scenario reads of a container's.
func TestReadProcess(t *testing.T) {
	p, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.UID[0] != os.Getuid() || p.UID[1] != os.Geteuid() || p.GID[0] != os.Getgid() {
		t.Errorf("uids %v gids %v, want this process's %d/%d/%d", p.UID, p.GID, os.Getuid(), os.Geteuid(), os.Getgid())
	}
	if len(p.Cmdline) == 0 || p.Cmdline[0] != os.Args[0] {
		t.Errorf("command line %q, want it to start with %q", p.Cmdline, os.Args[0])
	}
	if p.Env["PATH"] != os.Getenv("PATH") {
		t.Errorf("PATH %q, want %q", p.Env["PATH"], os.Getenv("PATH"))
	}
	if _, ok := p.Mounts["/"]; !ok {
		t.Errorf("mounts %v: no root", p.Mounts)
	}
}

func TestUnescapeMount(t *testing.T) {
	cases := map[string]struct {
		reason, in, want string
	}{
		"Plain":   {"A path without escapes is itself.", "/run/netns/cni-1", "/run/netns/cni-1"},
		"Space":   {"mountinfo writes a space as \\040.", `/tmp/a\040b`, "/tmp/a b"},
		"Trailer": {"A backslash too close to the end is kept.", `/tmp/a\04`, `/tmp/a\04`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := unescapeMount(tc.in); got != tc.want {
				t.Errorf("%s\nunescapeMount(%q) = %q, want %q", tc.reason, tc.in, got, tc.want)
			}
		})
	}
}

func TestRuleFields(t *testing.T) {
	cases := map[string]struct {
		reason, in string
		want       []string
	}{
		"Plain": {"A rule without quotes splits on spaces.", "-A INPUT -j KUBE-FIREWALL", []string{"-A", "INPUT", "-j", "KUBE-FIREWALL"}},
		"Comment": {"A quoted comment with spaces is one argument, without its quotes (kube-router's jumps).",
			`-A INPUT -m comment --comment "kube-router netpol - 4IA2OSFRMVNDXBVV" -j KUBE-ROUTER-INPUT`,
			[]string{"-A", "INPUT", "-m", "comment", "--comment", "kube-router netpol - 4IA2OSFRMVNDXBVV", "-j", "KUBE-ROUTER-INPUT"}},
		"Escapes": {"Escaped quotes and backslashes inside quotes are unescaped.", `-A X -m comment --comment "a \"b\" \\c" -j Y`,
			[]string{"-A", "X", "-m", "comment", "--comment", `a "b" \c`, "-j", "Y"}},
		"Empty": {"An empty quoted word is an argument.", `-A X --comment "" -j Y`, []string{"-A", "X", "--comment", "", "-j", "Y"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ruleFields(tc.in)); diff != "" {
				t.Errorf("%s\nruleFields(%q): -want +got:\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}

// Down unmounts and removes only what belongs to the node.
func TestOurs(t *testing.T) {
	s := &hostState{Dir: "/work/_output/e2e/node", Netns: []string{"cni-old"}}
	cases := map[string]bool{
		"/work/_output/e2e/node/containerd/state/x/rootfs": true,
		"/work/_output/e2e/node":                           false, // the directory itself is not a mount of ours
		"/work/_output/e2e/nodes/x":                        false,
		"/run/netns/cni-new":                               true,
		"/run/netns/cni-old":                               false, // there before the node
		"/run/netns/other":                                 false,
		"/":                                                false,
		"/run/containerd/runc/k8s.io/08ed4c47/runc.WVPZqb": true, // runc's copy of itself, the node's
	}
	for mp, want := range cases {
		if got := s.ours(mp); got != want {
			t.Errorf("ours(%q) = %v, want %v", mp, got, want)
		}
	}
	// The host's own containerd, there before the node, keeps its runc mounts.
	host := &hostState{Dir: s.Dir, Existed: map[string]bool{"/run/containerd/runc/k8s.io": true}}
	if mp := "/run/containerd/runc/k8s.io/08ed4c47/runc.WVPZqb"; host.ours(mp) {
		t.Errorf("ours(%q) = true with the host's own runc state directory, want false", mp)
	}
}

// The kubelet's configuration says what this machine needs and keeps every server on the
// node's address or loopback.
func TestKubeletConfig(t *testing.T) {
	var got map[string]any
	if err := yaml.Unmarshal([]byte(kubeletConfig("/n", "/logs", "/n/containerd/containerd.sock", lanePlacement("127.0.0.1:5000"), 12345)), &got); err != nil {
		t.Fatalf("the kubelet configuration is not YAML: %v", err)
	}
	want := map[string]any{
		"failCgroupV1":             false,
		"cgroupDriver":             "cgroupfs",
		"oomScoreAdj":              float64(0),
		"address":                  Address,
		"healthzBindAddress":       "127.0.0.1",
		"readOnlyPort":             float64(0),
		"containerRuntimeEndpoint": "unix:///n/containerd/containerd.sock",
		"podLogsDir":               "/logs/node-pods/" + Name,
		// No disk-pressure eviction: the node's disk is the host's, shared (kind's choice).
		"evictionHard":                map[string]any{"memory.available": "200Mi", "nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"},
		"imageGCHighThresholdPercent": float64(100),
	}
	for k, v := range want {
		if diff := cmp.Diff(v, got[k]); diff != "" {
			t.Errorf("%s: -want, +got:\n%s", k, diff)
		}
	}
	taints, _ := json.Marshal(got["registerWithTaints"])
	if string(taints) != `[{"effect":"NoSchedule","key":"`+TaintKey+`","value":"true"}]` {
		t.Errorf("registerWithTaints %s, want the real node's taint", taints)
	}
}

// Each of the production-shaped lane's kubelets writes its pods' logs to a directory of its
// own: a kubelet's garbage collection removes, within a minute, every pod directory there whose
// pod it does not run, so a shared one lost the other node's running pods' logs.
func TestKubeletPodLogsPerNode(t *testing.T) {
	seen := map[string]string{}
	for i := range 3 {
		p := clusterPlacement(i, "127.0.0.1:5000", "/ca.crt", "10.96.0.10")
		var got struct {
			PodLogsDir string `json:"podLogsDir"`
		}
		if err := yaml.Unmarshal([]byte(kubeletConfig("/n", "/logs", "/n/containerd/containerd.sock", p, 12345)), &got); err != nil {
			t.Fatalf("the kubelet configuration is not YAML: %v", err)
		}
		if got.PodLogsDir != "/logs/node-pods/"+p.name {
			t.Errorf("%s: podLogsDir %q, want /logs/node-pods/%s", p.name, got.PodLogsDir, p.name)
		}
		if other, ok := seen[got.PodLogsDir]; ok {
			t.Errorf("%s and %s share the pod log directory %s", other, p.name, got.PodLogsDir)
		}
		seen[got.PodLogsDir] = p.name
	}
}

// The CNI network gives pods the node's subnet and no route off it.
func TestCNIConfig(t *testing.T) {
	var got struct {
		Plugins []struct {
			Type, Bridge      string
			IsGateway, IPMasq bool
			IPAM              struct {
				Ranges [][]struct{ Subnet string }
				Routes []any
			}
		}
	}
	if err := json.Unmarshal([]byte(cniConfig("/n", lanePlacement("127.0.0.1:5000"))), &got); err != nil {
		t.Fatalf("the CNI configuration is not JSON: %v", err)
	}
	var types []string
	for _, p := range got.Plugins {
		types = append(types, p.Type)
	}
	if !slices.Equal(types, []string{"bridge"}) {
		t.Fatalf("plugins %v, want only the bridge", types)
	}
	b := got.Plugins[0]
	if b.Bridge != Bridge || b.IsGateway || b.IPMasq || len(b.IPAM.Routes) != 0 || b.IPAM.Ranges[0][0].Subnet != Subnet {
		t.Errorf("bridge plugin %+v: want bridge %s, subnet %s, no gateway, no masquerading, no routes", b, Bridge, Subnet)
	}
}

// A cluster's node keeps to a cgroup root of its own, resolves with the cluster's DNS, takes
// every pod (no taint), and routes its pods through its bridge; containerd verifies the
// registry's certificate instead of pulling over plain HTTP.
func TestClusterNodeConfig(t *testing.T) {
	p := clusterPlacement(1, "10.211.0.1:5000", "/ca.crt", "10.213.0.10")
	var kc map[string]any
	if err := yaml.Unmarshal([]byte(kubeletConfig("/n", "/logs", "/n/c.sock", p, 12345)), &kc); err != nil {
		t.Fatalf("the kubelet configuration is not YAML: %v", err)
	}
	want := map[string]any{"cgroupRoot": "/e2e-node-2", "clusterDNS": []any{"10.213.0.10"}, "address": "10.211.0.12", "registerWithTaints": nil}
	for k, v := range want {
		if diff := cmp.Diff(v, kc[k]); diff != "" {
			t.Errorf("kubelet %s: -want, +got:\n%s", k, diff)
		}
	}
	var cni struct {
		Plugins []struct {
			Bridge    string
			IsGateway bool
			IPAM      struct{ Ranges [][]struct{ Subnet string } }
		}
	}
	if err := json.Unmarshal([]byte(cniConfig("/n", p)), &cni); err != nil {
		t.Fatalf("the CNI configuration is not JSON: %v", err)
	}
	if b := cni.Plugins[0]; b.Bridge != "cni0" || !b.IsGateway || b.IPAM.Ranges[0][0].Subnet != "10.212.2.0/24" {
		t.Errorf("bridge plugin %+v: want cni0 as the gateway of 10.212.2.0/24", b)
	}
	cd := containerdConfig("/n", p, "pause")
	for _, w := range []string{`registry.configs."10.211.0.1:5000".tls]`, `ca_file = "/ca.crt"`} {
		if !strings.Contains(cd, w) {
			t.Errorf("containerd's configuration lacks %s:\n%s", w, cd)
		}
	}
	if strings.Contains(cd, "mirrors") {
		t.Errorf("containerd's configuration has a plain-HTTP mirror for a TLS registry:\n%s", cd)
	}
}

// Both lanes fit the kubelet's sockets from a checkout as deep as CI's (/check/work/main), and
// a deeper one is refused before anything starts, with the way out in the message.
func TestSocketPaths(t *testing.T) {
	cases := map[string]struct {
		reason, dir string
		wantErr     bool
	}{
		"Suite": {"The main suite's node under CI's checkout.", "/check/work/main/_output/e2e/node", false},
		"Lane": {"The production-shaped lane's last node under CI's checkout.",
			clusterNodeDir("/check/work/main/_output/e2e-cluster/cluster", 1), false},
		"Deep": {"A checkout 40 characters deep cannot hold the lane's sockets.",
			clusterNodeDir("/home/someone/src/github.com/example/fn/_output/e2e-cluster/cluster", 1), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkSocketPaths(tc.dir)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\ncheckSocketPaths(%q) = %v, want error %t", tc.reason, tc.dir, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "E2E_OUTPUT") {
				t.Errorf("%s\nerror %q does not say how to fix it (E2E_OUTPUT)", tc.reason, err)
			}
		})
	}
}
