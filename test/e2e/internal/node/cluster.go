package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A cluster of real nodes, shaped as kind shapes one: each node a kubelet with its own
// containerd in a network namespace of its own, so that each runs its own kube-proxy (its own
// iptables) and its pods get a subnet of their own, routed between the nodes. The nodes meet
// the host on one bridge, where the host has ClusterHostAddress: the API server and the
// registry listen there for them. Nothing is routed off the machine and nothing masquerades.
const (
	// ClusterBridge is the host's bridge every node's veth is attached to.
	ClusterBridge = "e2e-cl0"
	// ClusterHostAddress is the host's address on ClusterBridge.
	ClusterHostAddress = "10.211.0.1"
	// clusterNetwork holds ClusterHostAddress and the nodes' addresses.
	clusterNetwork = "10.211.0.0/24"
	// ClusterPodCIDR holds every node's pod subnet, 10.212.<i+1>.0/24.
	ClusterPodCIDR = "10.212.0.0/16"
	// clusterNetnsPrefix names the nodes' network namespaces; clusterVethPrefix their veths'
	// host ends.
	clusterNetnsPrefix = "e2e-cl-"
	clusterVethPrefix  = "e2e-clv"
	// ZoneLabel is the label the scheduler spreads by; cluster nodes are in zone-a, zone-b…
	ZoneLabel = "topology.kubernetes.io/zone"
)

// ClusterNodeName is the name of the cluster's node i (from 0).
func ClusterNodeName(i int) string { return fmt.Sprintf("e2e-node-%d", i+1) }

// clusterNodeDir is node i's directory under the cluster's: its number alone, since the
// kubelet's sockets under it must fit sun_path from a checkout as deep as CI's.
func clusterNodeDir(dir string, i int) string { return filepath.Join(dir, strconv.Itoa(i+1)) }

// clusterPlacement is the cluster's node i: address 10.211.0.<11+i>, pods on 10.212.<i+1>.0/24
// behind its bridge cni0, its own cgroup root, in zone-<a+i>.
func clusterPlacement(i int, registry, registryCA, clusterDNS string) placement {
	name := ClusterNodeName(i)
	return placement{
		name:    name,
		address: fmt.Sprintf("10.211.0.%d", 11+i),
		netns:   clusterNetnsPrefix + name,
		bridge:  "cni0", subnet: fmt.Sprintf("10.212.%d.0/24", i+1),
		rangeStart: fmt.Sprintf("10.212.%d.10", i+1), rangeEnd: fmt.Sprintf("10.212.%d.250", i+1),
		gateway:    true,
		cgroupRoot: "/" + name,
		labels:     []string{ZoneLabel + "=zone-" + string(rune('a'+i))},
		clusterDNS: clusterDNS, registry: registry, registryCA: registryCA,
	}
}

// A Cluster is the cluster's network and its nodes.
type Cluster struct {
	dir, logDir string
	places      []placement
	// Nodes are the running nodes, in order.
	Nodes []*Node
}

// ClusterNetwork checks the machine can run n nodes, cleans up after a crashed run in dir,
// records the host's state and sets up the network: the host's bridge with
// ClusterHostAddress, then for each node a network namespace, a veth into the bridge with the
// node's address, forwarding, and routes to the other nodes' pods (and, on the host, to
// every node's). serviceCIDR is the Services' range. The API server and the registry may
// listen on ClusterHostAddress once it returns; Start starts the nodes.
func ClusterNetwork(dir, logDir string, n int, serviceCIDR string) (c *Cluster, err error) {
	if err := Preflight(); err != nil {
		return nil, err
	}
	if err := checkSocketPaths(clusterNodeDir(dir, n-1)); err != nil {
		return nil, err
	}
	if err := Down(dir); err != nil {
		return nil, errors.Wrap(err, "cannot clean up after an earlier run")
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, errors.Wrapf(err, "cannot clear %s", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errors.Wrapf(err, "cannot create %s", dir)
	}
	c = &Cluster{dir: dir, logDir: logDir}
	var netns, roots []string
	for i := range n {
		p := clusterPlacement(i, "", "", "")
		c.places = append(c.places, p)
		netns = append(netns, p.netns)
		roots = append(roots, p.cgroupRoots()...)
	}
	for _, cidr := range []string{clusterNetwork, ClusterPodCIDR} {
		if err := checkFree(cidr); err != nil {
			return nil, err
		}
	}
	if _, err := snapshot(dir, logDir, ClusterBridge, netns, roots); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = Down(dir)
		}
	}()
	cmds := [][]string{
		{"link", "add", ClusterBridge, "type", "bridge"},
		{"addr", "add", ClusterHostAddress + "/24", "dev", ClusterBridge},
		{"link", "set", ClusterBridge, "up"},
	}
	for i, p := range c.places {
		veth := fmt.Sprintf("%s%d", clusterVethPrefix, i+1)
		cmds = append(cmds,
			[]string{"netns", "add", p.netns},
			[]string{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", p.netns},
			[]string{"link", "set", veth, "master", ClusterBridge, "up"},
			[]string{"-n", p.netns, "addr", "add", p.address + "/24", "dev", "eth0"},
			[]string{"-n", p.netns, "link", "set", "lo", "up"},
			[]string{"-n", p.netns, "link", "set", "eth0", "up"},
			// Only for the route lookup of a node's own connections to a Service, before
			// kube-proxy's DNAT rewrites them: nothing is sent there.
			[]string{"-n", p.netns, "route", "add", serviceCIDR, "via", ClusterHostAddress},
			[]string{"route", "add", p.subnet, "via", p.address},
		)
		for j, q := range c.places {
			if j != i {
				cmds = append(cmds, []string{"-n", p.netns, "route", "add", q.subnet, "via", q.address})
			}
		}
	}
	for _, args := range cmds {
		if err := run("ip", args...); err != nil {
			return nil, errors.Wrap(err, "cannot set up the cluster's network")
		}
	}
	for _, p := range c.places {
		// Forwarding for the pods' traffic; bridged traffic through iptables, so that a
		// reply from a Service's pod to a client on the same bridge is un-DNATed by
		// kube-proxy's conntrack entry (per network namespace since Linux 5.3).
		if err := run("nsenter", "--net="+filepath.Join("/run/netns", p.netns), "--", "sysctl", "-q", "-w",
			"net.ipv4.ip_forward=1", "net.bridge.bridge-nf-call-iptables=1"); err != nil {
			return nil, errors.Wrapf(err, "cannot let node %s forward its pods' traffic", p.name)
		}
		if err := makeCgroupRoot(p.cgroupRoot); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// makeCgroupRoot creates the kubelet's cgroup root in every hierarchy: the kubelet refuses a
// root that does not exist.
func makeCgroupRoot(root string) error {
	for _, h := range dirEntries("/sys/fs/cgroup") {
		d := filepath.Join("/sys/fs/cgroup", h, root)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return errors.Wrapf(err, "cannot create cgroup %s", d)
		}
	}
	return nil
}

// checkFree fails when cidr overlaps an address of this machine's (another network, or a
// cluster left by a crash that Down could not undo).
func checkFree(cidr string) error {
	_, subnet, _ := net.ParseCIDR(cidr)
	ifaces, err := net.Interfaces()
	if err != nil {
		return errors.Wrap(err, "cannot list network interfaces")
	}
	for _, i := range ifaces {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && (subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP)) {
				return errors.Errorf("the cluster's network %s overlaps %s on interface %s", cidr, ipn, i.Name)
			}
		}
	}
	return nil
}

// Start starts every node's containerd and kubelet, in its network namespace, and returns once
// all are Ready. o's Dir is ignored: each node keeps its state under the cluster's directory;
// o.Registry is the registry as the nodes reach it, over TLS verified with o.RegistryCA.
func (c *Cluster) Start(ctx context.Context, o Options) error {
	for i := range c.places {
		c.places[i].registry, c.places[i].registryCA, c.places[i].clusterDNS = o.Registry, o.RegistryCA, o.ClusterDNS
		c.places[i].mirrors = o.Mirrors
	}
	for i, p := range c.places {
		no := o
		no.Dir, no.LogDir = clusterNodeDir(c.dir, i), c.logDir
		n := &Node{opts: no, p: p, Socket: filepath.Join(no.Dir, "containerd", "containerd.sock")}
		c.Nodes = append(c.Nodes, n)
		if err := n.writeFiles(); err != nil {
			return err
		}
		if err := n.authorize(ctx); err != nil {
			return err
		}
		if err := n.startContainerd(ctx); err != nil {
			return err
		}
		if err := n.startKubelet(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Name is the node's name.
func (n *Node) Name() string { return n.p.name }

// Address is the node's InternalIP.
func (n *Node) Address() string { return n.p.address }

// StopNodes drains and stops every node, all at once, and leaves the cluster's network up.
// What else listens on that network, the control plane and the registry, stops next, while
// its address still exists: an API server whose address went first does not finish its
// graceful shutdown, and is killed after its grace, ten seconds each.
func (c *Cluster) StopNodes() error {
	var errs []string
	if err := keepPodLogs(c.logDir); err != nil {
		errs = append(errs, err.Error())
	}
	// Cordon all first, so that no pod drained from one node is started again on another.
	for _, n := range c.Nodes {
		if n.Kubelet != nil && n.Kubelet.Running() {
			ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
			_ = n.cordon(ctx)
			cancel()
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range c.Nodes {
		wg.Go(func() {
			e := n.stopProcesses()
			mu.Lock()
			errs = append(errs, e...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Down undoes what the cluster did on the host: the network namespaces, the bridge, the
// cgroups, the mounts. Call it after StopNodes and after what listens on the network stopped.
func (c *Cluster) Down() error {
	return Down(c.dir)
}
