// Package node runs one real Kubernetes node for the end-to-end suite beside kwok's fake
// ones: the kubelet (built from the same pinned Kubernetes as the control plane), Debian's
// containerd and runc, and CNI bridge networking, so that the pods the function renders really
// start, pass their probes, run under their memory limits and serve clients.
//
// Everything stays on this machine: the node's address and its pods' addresses live on a
// bridge of their own with no route off the machine (the pods get no default route at all),
// the kubelet serves on the node's address and 127.0.0.1, and containerd pulls only from the
// suite's registry on 127.0.0.1. The node is tainted, so only namespaces that opt in (OptIn:
// the PodNodeSelector and PodTolerationRestriction admission plugins' annotations) place pods
// on it; the other scenarios' pods keep going to the fake nodes.
//
// The node changes host state that no directory holds — cgroups, iptables chains, network
// namespaces, a bridge, sysctls, a few fixed paths — so only one can run on a machine at a
// time, it needs root, and it records what it found before changing anything (Down undoes it,
// also after a crash).
package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/pki"
	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// The node's identity and network. The pod subnet is neither kwok's (10.244.0.0/16) nor the
// service range (10.96.0.0/24).
const (
	// Name is the real node's name.
	Name = "e2e-real-node"
	// Bridge is the node's bridge: the node's address and every pod's veth.
	Bridge = "e2e-node0"
	// Subnet holds the node's address (its first) and its pods' addresses.
	Subnet = "10.210.0.0/24"
	// Address is the node's InternalIP, on Bridge.
	Address = "10.210.0.1"
	// LabelKey labels the real node LabelKey=LabelValue; TaintKey taints it NoSchedule.
	LabelKey   = "e2e.example.com/node"
	LabelValue = "real"
	TaintKey   = "e2e.example.com/real-node"
)

// startTimeout bounds containerd's start and the node becoming Ready.
const startTimeout = 2 * time.Minute

// Options configure the node.
type Options struct {
	// Kubelet is the kubelet binary.
	Kubelet string
	// Dir holds all the node's state: containerd's root and state, the kubelet's root,
	// certificates, configuration. It is wiped at start and removed by Stop.
	Dir string
	// LogDir receives containerd.log, kubelet.log and, under node-pods/<node>/, the pods' logs.
	LogDir string
	PIDs   *proc.PIDFile
	// APIServer is the control plane's URL; CA its CA, which signs the kubelet's client
	// certificate; Kube an admin client.
	APIServer string
	CA        *pki.CA
	Kube      *kube.Client
	// Registry is the host:port of the suite's registry, served over plain HTTP on 127.0.0.1;
	// PauseImage the sandbox image in it.
	Registry, PauseImage string
	// RegistryCA is the file of the CA the registry's certificate is signed by, and
	// ClusterDNS the DNS Service's ClusterIP: a cluster's nodes only (Cluster.Start).
	RegistryCA, ClusterDNS string
	// Mirrors are registry hosts (docker.io, …) whose images the nodes pull from the suite's
	// registry instead, as a cluster behind a pull-through mirror does: a cluster's nodes only.
	Mirrors []string
}

// A Node is a running real node.
type Node struct {
	opts       Options
	p          placement
	Containerd *proc.Process
	Kubelet    *proc.Process
	// Socket is containerd's socket.
	Socket string
	// Started is when the kubelet started; Ready how long the node took to be Ready after.
	Started time.Time
	Ready   time.Duration
}

// Start checks the machine can run a node, cleans up after a crashed earlier run in o.Dir,
// then sets up the bridge, starts containerd and the kubelet, and returns once the node is
// Ready. On error it undoes what it did.
func Start(ctx context.Context, o Options) (n *Node, err error) {
	if err := Preflight(o.Kubelet); err != nil {
		return nil, err
	}
	if err := checkSocketPaths(o.Dir); err != nil {
		return nil, err
	}
	if err := Down(o.Dir); err != nil {
		return nil, errors.Wrap(err, "cannot clean up after an earlier run")
	}
	if err := os.RemoveAll(o.Dir); err != nil {
		return nil, errors.Wrapf(err, "cannot clear %s", o.Dir)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, errors.Wrapf(err, "cannot create %s", o.Dir)
	}
	if err := checkSubnetFree(); err != nil {
		return nil, err
	}
	if _, err := snapshot(o.Dir, o.LogDir, Bridge, nil, lanePlacement("").cgroupRoots()); err != nil {
		return nil, err
	}
	n = &Node{opts: o, p: lanePlacement(o.Registry), Socket: filepath.Join(o.Dir, "containerd", "containerd.sock")}
	defer func() {
		if err != nil {
			_ = n.Stop()
		}
	}()
	if err := setUpBridge(); err != nil {
		return nil, err
	}
	if err := n.writeFiles(); err != nil {
		return nil, err
	}
	if err := n.authorize(ctx); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	return n, n.startKubelet(ctx)
}

// checkSocketPaths fails early when the node's unix sockets would not fit sun_path (108
// bytes): the kubelet's deepest is under its root directory.
func checkSocketPaths(dir string) error {
	if p := filepath.Join(dir, "kubelet", "plugins_registry", "x", "csi.sock.0123456789"); len(p) > 100 {
		return errors.Errorf("the node's directory %s is too long for unix socket paths; set E2E_OUTPUT to a shorter path", dir)
	}
	return nil
}

// checkSubnetFree fails when the node's subnet is already routed on this machine (another
// network, or a node left by a crash that Down could not undo).
func checkSubnetFree() error {
	_, subnet, _ := net.ParseCIDR(Subnet)
	ifaces, err := net.Interfaces()
	if err != nil {
		return errors.Wrap(err, "cannot list network interfaces")
	}
	for _, i := range ifaces {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && (subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP)) {
				return errors.Errorf("the node's subnet %s overlaps %s on interface %s", Subnet, ipn, i.Name)
			}
		}
	}
	return nil
}

// setUpBridge makes the node's bridge with the node's address. The CNI bridge plugin then
// only attaches pods to it (isGateway false): the pods reach the node and each other on the
// subnet and nothing else; the node reaches them through the bridge's connected route.
func setUpBridge() error {
	for _, args := range [][]string{
		{"link", "add", Bridge, "type", "bridge"},
		{"addr", "add", Address + "/24", "dev", Bridge},
		{"link", "set", Bridge, "up"},
	} {
		if err := run("ip", args...); err != nil {
			return errors.Wrap(err, "cannot set up the node's bridge")
		}
	}
	return nil
}

func (n *Node) path(p ...string) string { return filepath.Join(append([]string{n.opts.Dir}, p...)...) }

// writeFiles writes the kubelet's certificates and kubeconfig, and the configuration of
// containerd, the CNI network and the kubelet.
func (n *Node) writeFiles() error {
	// The node's own pod log directory (podLogsDir), and node-pods/ above it.
	if err := os.MkdirAll(podLogsDir(n.opts.LogDir, n.p.name), 0o755); err != nil {
		return errors.Wrap(err, "cannot create the kubelet's pod log directory")
	}
	client, err := n.opts.CA.Issue(pki.Request{CommonName: "system:node:" + n.p.name, Organization: []string{"system:nodes"}})
	if err != nil {
		return err
	}
	serving, err := n.opts.CA.Issue(pki.Request{CommonName: "system:node:" + n.p.name, IPs: []net.IP{net.ParseIP(n.p.address), net.ParseIP("127.0.0.1")}, DNSNames: []string{n.p.name}})
	if err != nil {
		return err
	}
	if err := pki.WriteFiles(n.path("pki"), map[string][]byte{
		"ca.crt": n.opts.CA.CertPEM, "client.crt": client.CertPEM, "client.key": client.KeyPEM,
		"serving.crt": serving.CertPEM, "serving.key": serving.KeyPEM,
	}); err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: n.opts.APIServer, CertificateAuthority: n.path("pki", "ca.crt")}
	kc.AuthInfos["kubelet"] = &clientcmdapi.AuthInfo{ClientCertificate: n.path("pki", "client.crt"), ClientKey: n.path("pki", "client.key")}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "kubelet"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, n.path("kubelet.kubeconfig")); err != nil {
		return errors.Wrap(err, "cannot write the kubelet's kubeconfig")
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return err
	}
	files := map[string]string{
		n.path("containerd", "config.toml"):       containerdConfig(n.opts.Dir, n.p, n.opts.PauseImage),
		n.path("cni", "net.d", "10-e2e.conflist"): cniConfig(n.opts.Dir, n.p),
		n.path("kubelet", "config.yaml"):          kubeletConfig(n.opts.Dir, n.opts.LogDir, n.Socket, n.p, ports[0]),
	}
	for p, content := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return errors.Wrapf(err, "cannot create %s", filepath.Dir(p))
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil { //nolint:gosec // Configuration, no secrets.
			return errors.Wrapf(err, "cannot write %s", p)
		}
	}
	return nil
}

// authorize binds the kubelet's user to the system:node role. The control plane authorizes
// with RBAC alone (no Node authorizer), where system:node is not bound by default.
func (n *Node) authorize(ctx context.Context) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e:node:" + n.p.name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "system:node:" + n.p.name}},
	}
	_, err := n.opts.Kube.Typed.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if kerrors.IsAlreadyExists(err) {
		return nil
	}
	return errors.Wrap(err, "cannot bind the kubelet's user to system:node")
}

func (n *Node) startContainerd(ctx context.Context) (err error) {
	n.Containerd, err = proc.Start(n.inNetns(proc.Spec{
		Name: n.processName("containerd"),
		Path: "/usr/bin/containerd",
		Args: []string{"--config", n.path("containerd", "config.toml")},
	}), n.opts.LogDir, n.opts.PIDs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return n.Containerd.WaitReady(ctx, func(ctx context.Context) error {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "unix", n.Socket)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

func (n *Node) startKubelet(ctx context.Context) (err error) {
	n.Started = time.Now()
	n.Kubelet, err = proc.Start(n.inNetns(proc.Spec{
		Name: n.processName("kubelet"),
		Path: n.opts.Kubelet,
		Args: []string{
			"--config=" + n.path("kubelet", "config.yaml"),
			"--kubeconfig=" + n.path("kubelet.kubeconfig"),
			"--root-dir=" + n.path("kubelet", "root"),
			"--cert-dir=" + n.path("kubelet", "pki"),
			"--hostname-override=" + n.p.name,
			"--node-ip=" + n.p.address,
			"--node-labels=" + strings.Join(n.p.labels, ","),
			"--v=2",
		},
	}), n.opts.LogDir, n.opts.PIDs)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	err = n.Kubelet.WaitReady(ctx, func(ctx context.Context) error {
		node, err := n.opts.Kube.Typed.CoreV1().Nodes().Get(ctx, n.p.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.Errorf("node %s not Ready: %v", n.p.name, node.Status.Conditions)
	})
	n.Ready = time.Since(n.Started)
	return err
}

// OptIn lets the pods of namespace run on the real node, and only there: the PodNodeSelector
// admission plugin adds the node's label to their node selector, PodTolerationRestriction
// adds a toleration of its taint. Nothing the function renders changes.
func OptIn(ctx context.Context, c *kube.Client, namespace string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{`+
		`"scheduler.alpha.kubernetes.io/node-selector":%q,`+
		`"scheduler.alpha.kubernetes.io/defaultTolerations":%q}}}`,
		LabelKey+"="+LabelValue,
		`[{"key":"`+TaintKey+`","operator":"Exists","effect":"NoSchedule"}]`)
	_, err := c.Typed.CoreV1().Namespaces().Patch(ctx, namespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: kube.FieldManager})
	return errors.Wrapf(err, "cannot let namespace %s onto the real node", namespace)
}

// Processes lists containerd and the kubelet.
func (n *Node) Processes() []*proc.Process {
	var ps []*proc.Process
	for _, p := range []*proc.Process{n.Containerd, n.Kubelet} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// drainTimeout bounds how long Stop waits for the kubelet to stop the node's pods.
const drainTimeout = 60 * time.Second

// Stop stops the node and undoes what it did on the host: it keeps its pods' logs
// (keptPodLogs), cordons the node and deletes its pods, so that the kubelet tears down their
// containers, network namespaces and addresses; stops the kubelet and containerd; then Down.
// It is safe to call more than once.
func (n *Node) Stop() error {
	var errs []string
	if err := keepPodLogs(n.opts.LogDir); err != nil {
		errs = append(errs, err.Error())
	}
	errs = append(errs, n.stopProcesses()...)
	if err := Down(n.opts.Dir); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// stopProcesses drains the node and stops the kubelet and containerd, returning what failed.
func (n *Node) stopProcesses() []string {
	var errs []string
	if n.Kubelet != nil && n.Kubelet.Running() {
		if err := n.drain(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	for _, p := range []*proc.Process{n.Kubelet, n.Containerd} {
		if p != nil {
			if err := p.Stop(); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	return errs
}

// inNetns runs s in the placement's network namespace (and the host's mount namespace, so
// that containerd sees the volumes the kubelet mounts): nsenter execs the program, which keeps
// the PID the suite records.
func (n *Node) inNetns(s proc.Spec) proc.Spec {
	if n.p.netns == "" {
		return s
	}
	s.Args = append([]string{"--net=" + filepath.Join("/run/netns", n.p.netns), "--", s.Path}, s.Args...)
	s.Path = "/usr/bin/nsenter"
	return s
}

// processName names a process (and its log) after the node when it is one of a cluster's.
func (n *Node) processName(program string) string {
	if n.p.netns == "" {
		return program
	}
	return n.p.name + "-" + program
}

// cordon marks the node unschedulable.
func (n *Node) cordon(ctx context.Context) error {
	_, err := n.opts.Kube.Typed.CoreV1().Nodes().Patch(ctx, n.p.name, types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
	return errors.Wrapf(err, "cannot cordon node %s", n.p.name)
}

// drain cordons the node, deletes every pod on it and waits until they are gone (the kubelet
// confirms a deletion once their containers stopped).
func (n *Node) drain() error {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := n.cordon(ctx); err != nil {
		return err
	}
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.p.name}
	return kube.Wait(ctx, drainTimeout, "the pods of node "+n.p.name+" gone", func(ctx context.Context) error {
		list, err := n.opts.Kube.Typed.CoreV1().Pods("").List(ctx, onNode)
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Namespace+"/"+p.Name)
			if p.DeletionTimestamp == nil {
				_ = n.opts.Kube.Typed.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](2)})
			}
		}
		return errors.Errorf("%d pods left: %s", len(names), strings.Join(names, ", "))
	})
}
