package node

import "path/filepath"

// A placement is where a node runs and how its pods are networked: the node lane's one node
// on a bridge in the host's network namespace (lanePlacement), or one node of a cluster in a
// network namespace of its own (cluster.go). Everything the configuration files and the
// kubelet's flags say of the node comes from here.
type placement struct {
	// name is the Node's name; address its InternalIP, where the kubelet serves.
	name, address string
	// netns is the network namespace (under /run/netns) containerd and the kubelet run in;
	// empty for the host's.
	netns string
	// bridge is the pods' bridge; subnet, rangeStart and rangeEnd their addresses.
	bridge, subnet, rangeStart, rangeEnd string
	// gateway makes the bridge the pods' default gateway (the bridge's address is the
	// subnet's first); without it the pods get no route off the subnet.
	gateway bool
	// cgroupRoot is the kubelet's cgroup root; empty for the default, whose pods go under
	// kubepods in every hierarchy.
	cgroupRoot string
	// labels are the node's labels, k=v; taint registers it with the lane's NoSchedule taint.
	labels []string
	taint  bool
	// clusterDNS is the DNS Service's ClusterIP pods resolve with; empty for none.
	clusterDNS string
	// registry is the suite's registry as the node pulls from it; registryCA, when set, the
	// file of the CA its TLS certificate is signed by (else it is plain HTTP).
	registry, registryCA string
	// mirrors are the registry hosts pulled from registry instead (TLS registries only).
	mirrors []string
}

// lanePlacement is the node lane's real node.
func lanePlacement(registry string) placement {
	return placement{
		name: Name, address: Address,
		bridge: Bridge, subnet: Subnet, rangeStart: "10.210.0.16", rangeEnd: "10.210.0.254",
		labels: []string{LabelKey + "=" + LabelValue}, taint: true,
		registry: registry,
	}
}

// cgroupRoots are the top cgroups of the placement's pods, relative to each hierarchy.
func (p placement) cgroupRoots() []string {
	if p.cgroupRoot == "" {
		return []string{"kubepods"}
	}
	return []string{filepath.Clean(p.cgroupRoot)[1:]}
}
