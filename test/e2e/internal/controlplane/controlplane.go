// Package controlplane runs a real Kubernetes control plane as local processes on
// 127.0.0.1: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, and kwok playing
// the kubelets of a few fake nodes, so that Deployments roll out and become Available
// without containers. The PodSecurity admission plugin is on, so namespaces labelled
// `pod-security.kubernetes.io/enforce` judge real pods.
//
// Each component is a proc.Process that a scenario can restart or kill. StartCluster adds a
// whole second cluster — API server (its own etcd prefix, port and kubeconfig),
// controller-manager, scheduler and kwok nodes — the way a workload cluster reached through a
// kubeconfig Secret would be; StartAPIServer adds a bare API server.
package controlplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/pki"
	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// startTimeout bounds each component's start; a cold API server is ready in ~3 s.
const startTimeout = 90 * time.Second

// ServiceCIDR is the API server's service range, which the real node's network policy
// firewall must know too.
const ServiceCIDR = "10.96.0.0/24"

// Options configure a control plane.
type Options struct {
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
	BinDir string
	// WorkDir receives certificates, kubeconfigs and etcd's data; LogDir the components' logs.
	WorkDir, LogDir string
	// KwokStages is the file of kwok Stage objects that move fake nodes and pods along.
	KwokStages string
	// Nodes is the number of fake nodes, one per zone (zone-a, zone-b, …).
	Nodes int
	// PIDs records every process started.
	PIDs *proc.PIDFile
	// AuditLog, when set, is where the main API server writes an audit event (Metadata level:
	// who, verb, resource, no bodies) for every request it answers, so that a scenario can
	// say who makes the API server work (scale_test.go). Blocking mode: the batch mode's
	// buffer dropped most of the burst of 1,000 claims without a word; no rotation (its
	// default rotates at 100 MB, a third of such a run). Empty turns auditing
	// off: it costs the API server CPU the other scenarios need not pay.
	AuditLog string
	// Address is where the API servers listen and what the kubernetes Service's endpoint
	// says; empty for 127.0.0.1. Pods on real nodes in network namespaces of their own reach
	// it there (the production-shaped lane).
	Address string
	// ServiceCIDR is the Services' range; empty for ServiceCIDR.
	ServiceCIDR string
	// EndpointRouting makes the API server reach webhooks and aggregated APIs at their
	// Services' endpoints (pod addresses) rather than their ClusterIPs, which only the
	// nodes' kube-proxy serves: the API server runs on the host, not on a node.
	EndpointRouting bool
	// ControllerManagerArgs are more flags for the control plane's kube-controller-manager
	// (not the workload clusters'), e.g. its client's --kube-api-qps, which bounds how fast
	// its Deployment, ReplicaSet and garbage collector controllers write (scale_test.go).
	ControllerManagerArgs []string
	// AllowPrivileged admits privileged containers, which kube-proxy's DaemonSet needs (it
	// programs its node's netfilter); without it the API server refuses every one.
	AllowPrivileged bool
}

// address is where the API servers listen.
func (o Options) address() string {
	if o.Address == "" {
		return "127.0.0.1"
	}
	return o.Address
}

// serviceCIDR is the Services' range.
func (o Options) serviceCIDR() string {
	if o.ServiceCIDR == "" {
		return ServiceCIDR
	}
	return o.ServiceCIDR
}

// KubernetesServiceIP is the ClusterIP of the kubernetes Service: the range's first address.
func KubernetesServiceIP(cidr string) net.IP {
	_, n, _ := net.ParseCIDR(cidr)
	ip := n.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1)
}

// auditPolicy logs every request once, when its response is complete, without bodies.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
`

// A ControlPlane is a running control plane.
type ControlPlane struct {
	opts Options

	Etcd              *proc.Process
	APIServer         *APIServer
	ControllerManager *proc.Process
	Scheduler         *proc.Process
	Kwok              *proc.Process

	// CA signs the API servers' serving and client certificates.
	CA       *pki.CA
	certsDir string
	etcdURL  string
	extra    []*APIServer
	clusters []*Cluster
}

// An APIServer is one kube-apiserver and the admin credentials to reach it.
type APIServer struct {
	*proc.Process
	// URL is https://127.0.0.1:<port>.
	URL string
	// Kubeconfig is the path of an admin kubeconfig; KubeconfigBytes its content, to put in
	// a Secret for something that reaches this server as a remote cluster.
	Kubeconfig      string
	KubeconfigBytes []byte
	// Config is the admin rest.Config.
	Config *rest.Config
}

// Start starts etcd, the API server, the controller-manager, the scheduler and kwok, creates
// the fake nodes, and returns once a pod could be scheduled: the default ServiceAccount
// exists and the nodes are Ready. On error it stops whatever it started.
func Start(ctx context.Context, o Options) (cp *ControlPlane, err error) {
	cp = &ControlPlane{opts: o, certsDir: filepath.Join(o.WorkDir, "pki")}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	if err := cp.writeCertificates(); err != nil {
		return nil, err
	}
	if err := cp.startEtcd(ctx); err != nil {
		return nil, err
	}
	var audit []string
	if o.AuditLog != "" {
		policy := filepath.Join(o.WorkDir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return nil, errors.Wrap(err, "cannot write the audit policy")
		}
		audit = []string{"--audit-policy-file=" + policy, "--audit-log-path=" + o.AuditLog,
			"--audit-log-format=json", "--audit-log-mode=blocking", "--audit-log-maxsize=100000"}
	}
	if cp.APIServer, err = cp.startAPIServer(ctx, "kube-apiserver", "/registry", audit...); err != nil {
		return nil, err
	}
	if cp.ControllerManager, cp.Scheduler, cp.Kwok, err = cp.startNodeComponents("", cp.APIServer.Kubeconfig, cp.opts.ControllerManagerArgs...); err != nil {
		return nil, err
	}
	return cp, cp.waitSchedulable(ctx, cp.APIServer, o.Nodes)
}

// startNodeComponents starts, for the API server of kubeconfig, what makes Deployments roll
// out: a controller-manager, a scheduler and kwok. Their process names (and logs) carry
// prefix, empty for the control plane's own.
func (cp *ControlPlane) startNodeComponents(prefix, kubeconfig string, kcmArgs ...string) (kcm, scheduler, kwok *proc.Process, err error) {
	defer func() {
		if err != nil {
			for _, p := range []*proc.Process{kwok, scheduler, kcm} {
				if p != nil {
					_ = p.Stop()
				}
			}
		}
	}()
	if kcm, err = cp.startAs(prefix+"kube-controller-manager", "kube-controller-manager", append([]string{
		"--kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + cp.cert("sa.key"),
		"--root-ca-file=" + cp.cert("ca.crt"),
		"--cluster-signing-cert-file=" + cp.cert("ca.crt"),
		"--cluster-signing-key-file=" + cp.cert("ca.key"),
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--concurrent-gc-syncs=20",
		"--v=1",
	}, kcmArgs...)...); err != nil {
		return nil, nil, nil, err
	}
	if scheduler, err = cp.startAs(prefix+"kube-scheduler", "kube-scheduler",
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--v=1",
	); err != nil {
		return kcm, nil, nil, err
	}
	if kwok, err = cp.startAs(prefix+"kwok", "kwok",
		"--kubeconfig="+kubeconfig,
		"--config="+cp.opts.KwokStages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-lease-duration-seconds=40",
		"--cidr=10.244.0.0/16",
		"--node-ip=10.244.255.1",
	); err != nil {
		return kcm, scheduler, nil, err
	}
	return kcm, scheduler, kwok, nil
}

// A Cluster is a second, complete cluster beside the control plane — its own API server
// (on its own etcd prefix), controller-manager, scheduler and kwok nodes — that something in
// the control plane reaches through a kubeconfig: a workload cluster.
type Cluster struct {
	Name              string
	APIServer         *APIServer
	ControllerManager *proc.Process
	Scheduler         *proc.Process
	Kwok              *proc.Process
}

// Processes lists the cluster's components in start order.
func (c *Cluster) Processes() []*proc.Process {
	var ps []*proc.Process
	if c.APIServer != nil {
		ps = append(ps, c.APIServer.Process)
	}
	for _, p := range []*proc.Process{c.ControllerManager, c.Scheduler, c.Kwok} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// Stop stops the cluster's components, the API server last. It is safe to call more than
// once; ControlPlane.Stop stops a cluster too.
func (c *Cluster) Stop() error {
	return stopAll(c.Processes())
}

// StartCluster starts a workload cluster named name with nodes fake nodes (one per zone),
// returning once a pod could be scheduled on it. Its processes are named <name>-<component>;
// its admin kubeconfig (same CA and admin identity as the control plane) is
// APIServer.KubeconfigBytes. On error it stops whatever it started.
func (cp *ControlPlane) StartCluster(ctx context.Context, name string, nodes int) (c *Cluster, err error) {
	c = &Cluster{Name: name}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if c.APIServer, err = cp.startAPIServer(ctx, name+"-kube-apiserver", "/"+name); err != nil {
		return nil, err
	}
	if c.ControllerManager, c.Scheduler, c.Kwok, err = cp.startNodeComponents(name+"-", c.APIServer.Kubeconfig); err != nil {
		return nil, err
	}
	cp.clusters = append(cp.clusters, c)
	return c, cp.waitSchedulable(ctx, c.APIServer, nodes)
}

// KubeconfigPath is the admin kubeconfig of the main API server.
func (cp *ControlPlane) KubeconfigPath() string { return cp.APIServer.Kubeconfig }

// Processes lists every component, the API servers included, in start order.
func (cp *ControlPlane) Processes() []*proc.Process {
	var ps []*proc.Process
	if cp.APIServer != nil {
		ps = append(ps, cp.Etcd, cp.APIServer.Process)
	} else if cp.Etcd != nil {
		ps = append(ps, cp.Etcd)
	}
	for _, p := range []*proc.Process{cp.ControllerManager, cp.Scheduler, cp.Kwok} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	for _, a := range cp.extra {
		ps = append(ps, a.Process)
	}
	for _, c := range cp.clusters {
		ps = append(ps, c.Processes()...)
	}
	return ps
}

// Stop stops every component in reverse start order, so that nothing outlives what it
// depends on: workload clusters, extra API servers, kwok, the scheduler, the
// controller-manager, the API server, etcd.
func (cp *ControlPlane) Stop() error {
	return stopAll(cp.Processes())
}

// stopAll stops ps in reverse order.
func stopAll(ps []*proc.Process) error {
	var errs []string
	for i := len(ps) - 1; i >= 0; i-- {
		if err := ps[i].Stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// RestartAPIServer stops the main API server and starts it again, returning once it is ready:
// what every client of the control plane sees when its API server is upgraded or crashes.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	return cp.APIServer.restart(ctx)
}

// StartAPIServer starts another API server, named name, storing under its own etcd prefix
// in the same etcd: an empty cluster with its own kubeconfig (same CA and admin identity).
// No controller-manager or nodes run for it; StartCluster starts a cluster that has them.
func (cp *ControlPlane) StartAPIServer(ctx context.Context, name string) (*APIServer, error) {
	a, err := cp.startAPIServer(ctx, name, "/"+name)
	if err != nil {
		return nil, err
	}
	cp.extra = append(cp.extra, a)
	return a, nil
}

func (cp *ControlPlane) cert(name string) string { return filepath.Join(cp.certsDir, name) }

func (cp *ControlPlane) writeCertificates() error {
	ca, err := pki.NewCA("e2e-kubernetes-ca")
	if err != nil {
		return err
	}
	cp.CA = ca
	serving, err := ca.Issue(pki.Request{
		CommonName: "kube-apiserver",
		IPs:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(cp.opts.address()), KubernetesServiceIP(cp.opts.serviceCIDR())},
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return err
	}
	admin, err := ca.Issue(pki.Request{CommonName: "e2e-admin", Organization: []string{"system:masters"}})
	if err != nil {
		return err
	}
	saKey, saPub, err := pki.ServiceAccountKey()
	if err != nil {
		return err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	return pki.WriteFiles(cp.certsDir, map[string][]byte{
		"ca.crt": ca.CertPEM, "ca.key": caKey,
		"apiserver.crt": serving.CertPEM, "apiserver.key": serving.KeyPEM,
		"admin.crt": admin.CertPEM, "admin.key": admin.KeyPEM,
		"sa.key": saKey, "sa.pub": saPub,
	})
}

// start runs the binary of that name in BinDir, under the same name.
func (cp *ControlPlane) start(name string, args ...string) (*proc.Process, error) {
	return cp.startAs(name, name, args...)
}

// startAs runs the binary bin of BinDir as a process named name, for a second instance of a
// component (a workload API server) with its own log.
func (cp *ControlPlane) startAs(name, bin string, args ...string) (*proc.Process, error) {
	return proc.Start(proc.Spec{Name: name, Path: filepath.Join(cp.opts.BinDir, bin), Args: args}, cp.opts.LogDir, cp.opts.PIDs)
}

func (cp *ControlPlane) startEtcd(ctx context.Context) error {
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	dataDir := filepath.Join(cp.opts.WorkDir, "etcd")
	if err := os.RemoveAll(dataDir); err != nil {
		return errors.Wrap(err, "cannot clear etcd's data")
	}
	p, err := cp.start("etcd",
		"--name=e2e",
		"--data-dir="+dataDir,
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=e2e="+peer,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	cp.Etcd, cp.etcdURL = p, client
	return p.WaitHealthy(ctx, startTimeout, nil, client+"/health")
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, name, etcdPrefix string, extra ...string) (*APIServer, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	url := "https://" + net.JoinHostPort(cp.opts.address(), strconv.Itoa(ports[0]))
	kc, err := cp.writeKubeconfig(name, url)
	if err != nil {
		return nil, err
	}
	p, err := cp.startAs(name, "kube-apiserver", append([]string{
		"--etcd-servers=" + cp.etcdURL,
		"--etcd-prefix=" + etcdPrefix,
		"--bind-address=" + cp.opts.address(),
		"--advertise-address=" + cp.opts.address(),
		"--secure-port=" + strconv.Itoa(ports[0]),
		"--endpoint-reconciler-type=" + cp.endpointReconciler(),
		"--enable-aggregator-routing=" + strconv.FormatBool(cp.opts.EndpointRouting),
		"--allow-privileged=" + strconv.FormatBool(cp.opts.AllowPrivileged),
		// Nodes by their address: no DNS on this machine resolves their names (kubectl logs).
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--tls-cert-file=" + cp.cert("apiserver.crt"),
		"--tls-private-key-file=" + cp.cert("apiserver.key"),
		"--client-ca-file=" + cp.cert("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + cp.cert("sa.pub"),
		"--service-account-signing-key-file=" + cp.cert("sa.key"),
		"--service-cluster-ip-range=" + cp.opts.serviceCIDR(),
		"--authorization-mode=RBAC",
		// PodSecurity is on by default; named so that the suite fails loudly if a default ever
		// changes. PodNodeSelector and PodTolerationRestriction let a namespace's annotations
		// put its pods on the real node of the node lane, and only those (node.OptIn).
		"--enable-admission-plugins=PodSecurity,PodNodeSelector,PodTolerationRestriction",
		"--profiling=false",
		// Without a grace period for watches, a stopping API server drains everything but
		// then waits on its open watch connections until it is killed (10 s here); with one,
		// it closes them and exits in about a second.
		"--shutdown-watch-termination-grace-period=2s",
		"--v=1",
	}, extra...)...)
	if err != nil {
		return nil, err
	}
	a := &APIServer{Process: p, URL: url, Kubeconfig: kc}
	if a.KubeconfigBytes, err = os.ReadFile(kc); err != nil { //nolint:gosec // Our own file.
		return nil, errors.Wrap(err, "cannot read the kubeconfig")
	}
	if a.Config, err = clientcmd.BuildConfigFromFlags("", kc); err != nil {
		return nil, errors.Wrap(err, "cannot load the kubeconfig")
	}
	return a, a.waitReady(ctx)
}

// endpointReconciler keeps the kubernetes Service's endpoints at the API server's address,
// but not for 127.0.0.1, which EndpointSlices reject.
func (cp *ControlPlane) endpointReconciler() string {
	if cp.opts.address() == "127.0.0.1" {
		return "none"
	}
	return "lease"
}

func (a *APIServer) restart(ctx context.Context) error {
	if err := a.Process.Restart(); err != nil {
		return err
	}
	return a.waitReady(ctx)
}

func (a *APIServer) waitReady(ctx context.Context) error {
	hc, err := rest.HTTPClientFor(a.Config)
	if err != nil {
		return errors.Wrap(err, "cannot create an HTTP client for the API server")
	}
	return a.WaitHealthy(ctx, startTimeout, hc, a.URL+"/readyz")
}

func (cp *ControlPlane) writeKubeconfig(name, url string) (string, error) {
	read := func(f string) ([]byte, error) { return os.ReadFile(cp.cert(f)) } //nolint:gosec // Our own files.
	ca, err := read("ca.crt")
	if err != nil {
		return "", errors.Wrap(err, "cannot read the CA")
	}
	crt, err := read("admin.crt")
	if err != nil {
		return "", errors.Wrap(err, "cannot read the admin certificate")
	}
	key, err := read("admin.key")
	if err != nil {
		return "", errors.Wrap(err, "cannot read the admin key")
	}
	c := clientcmdapi.NewConfig()
	c.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: ca}
	c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	c.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: "admin"}
	c.CurrentContext = name
	path := filepath.Join(cp.opts.WorkDir, name+".kubeconfig")
	return path, errors.Wrap(clientcmd.WriteToFile(*c, path), "cannot write the kubeconfig")
}

// waitSchedulable creates nodes fake nodes on api and waits until kwok reports them Ready
// and the default namespace's ServiceAccount exists, without which no pod is admitted.
func (cp *ControlPlane) waitSchedulable(ctx context.Context, api *APIServer, nodes int) error {
	c, err := kube.New(api.Config)
	if err != nil {
		return err
	}
	for i := range nodes {
		zone := "zone-" + string(rune('a'+i))
		n := &corev1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("kwok-node-%d", i),
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{
					"type": "kwok", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
					"kubernetes.io/hostname":      fmt.Sprintf("kwok-node-%d", i),
					"topology.kubernetes.io/zone": zone,
				},
			},
		}
		u, err := kube.ToUnstructured(n)
		if err != nil {
			return err
		}
		if _, err := c.Apply(ctx, u); err != nil {
			return err
		}
	}
	return kube.Wait(ctx, startTimeout, "fake nodes Ready and the default ServiceAccount", func(ctx context.Context) error {
		list, err := c.Typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range list.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready < nodes {
			return errors.Errorf("%d/%d nodes Ready", ready, nodes)
		}
		_, err = c.Typed.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// FreePorts returns n distinct TCP ports free on 127.0.0.1 at the time of the call.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Wrap(err, "cannot find a free port")
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
