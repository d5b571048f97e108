package node

import (
	"fmt"
	"path/filepath"
	"strings"
)

// KubeletPort is where the kubelet serves on the node's address (nothing else listens there).
const KubeletPort = 10250

// containerdConfig is Debian's containerd 1.6 (config schema v2) with every path under dir:
// the CRI plugin with runc and cgroupfs, the CNI network of cniConfig, and the suite's
// registry: a plain-HTTP mirror of itself, or over TLS verified with the placement's CA.
func containerdConfig(dir string, p placement, pauseImage string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  # Root on this kind of VM lacks CAP_SYS_RESOURCE, so runc cannot give the sandbox the
  # negative oom_score_adj the CRI asks for ("nsexec: failed to update /proc/self/oom_score_adj:
  # Permission denied"). Clamp every container's oom_score_adj to at least containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
    max_conf_num = 1
%[9]s`,
		filepath.Join(dir, "containerd", "root"),
		filepath.Join(dir, "containerd", "state"),
		filepath.Join(dir, "containerd", "containerd.sock"),
		filepath.Join(dir, "containerd", "containerd.sock.ttrpc"),
		filepath.Join(dir, "containerd", "opt"),
		pauseImage,
		CNIBinDir,
		filepath.Join(dir, "cni", "net.d"),
		registryConfig(p),
	)
}

// registryConfig tells containerd how to reach the suite's registry, and which registries
// it mirrors.
func registryConfig(p placement) string {
	if p.registryCA != "" {
		var b strings.Builder
		fmt.Fprintf(&b, `  # The suite's registry serves TLS with a certificate of the suite's own CA.
  [plugins."io.containerd.grpc.v1.cri".registry.configs.%q.tls]
    ca_file = %q
`, p.registry, p.registryCA)
		for _, m := range p.mirrors {
			fmt.Fprintf(&b, `  # %[1]s's images come from the suite's registry, as behind a pull-through mirror.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%[1]q]
    endpoint = [%[2]q]
`, m, "https://"+p.registry)
		}
		return b.String()
	}
	return fmt.Sprintf(`  # The suite's registry serves plain HTTP on 127.0.0.1; the mirror says so.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%q]
    endpoint = [%q]
`, p.registry, "http://"+p.registry)
}

// cniConfig attaches every pod to the placement's bridge with an address of its subnet. No
// masquerading; without a gateway, no default route either: a pod reaches the node and the
// other pods and nothing else. With one, the bridge holds the subnet's first address and
// routes the pods' traffic through the node's network namespace.
func cniConfig(dir string, p placement) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "e2e-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": %t,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "rangeStart": %q, "rangeEnd": %q}]],
        "routes": [%s],
        "dataDir": %q
      }
    }
  ]
}
`, p.bridge, p.gateway, p.subnet, p.rangeStart, p.rangeEnd, defaultRoute(p), filepath.Join(dir, "cni", "ipam"))
}

// defaultRoute is the pods' default route through the bridge, when it is their gateway: the
// bridge plugin adds only the routes the IPAM result lists.
func defaultRoute(p placement) string {
	if !p.gateway {
		return ""
	}
	return `{"dst": "0.0.0.0/0"}`
}

// kubeletConfig is the kubelet's configuration: cgroupfs on this machine's cgroup v1
// hierarchies (which Kubernetes 1.35 refuses unless failCgroupV1 is false), serving on the
// node's address with client certificates and webhook authorization, registering tainted when
// the placement says so, and writing pod logs beside the suite's other logs.
func kubeletConfig(dir, logDir, socket string, p placement, healthzPort int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%[1]s
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
# No CAP_SYS_RESOURCE here: the kubelet's default -999 for itself fails (it only logs it).
oomScoreAdj: 0
address: %[2]s
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
tlsCertFile: %[5]s
tlsPrivateKeyFile: %[6]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[7]s}
authorization:
  mode: Webhook
rotateCertificates: false
serverTLSBootstrap: false
%[8]sresolvConf: /etc/resolv.conf
clusterDomain: cluster.local
podLogsDir: %[9]s
maxPods: 60
serializeImagePulls: false
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
# No disk-pressure eviction, as kind's nodes: the node's filesystem is the host's, shared with
# everything else on it, and a nearly full disk (2%% of it free) tainted both nodes and failed
# every claim with "untolerated taint(s)". A full disk fails with ENOSPC, which says so.
evictionHard:
  memory.available: "200Mi"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
  imagefs.available: "0%%"
imageGCHighThresholdPercent: 100
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
%[10]s`,
		socket,
		p.address, KubeletPort, healthzPort,
		filepath.Join(dir, "pki", "serving.crt"), filepath.Join(dir, "pki", "serving.key"), filepath.Join(dir, "pki", "ca.crt"),
		taints(p),
		podLogsDir(logDir, p.name),
		clusterSettings(p),
	)
}

func taints(p placement) string {
	if !p.taint {
		return ""
	}
	return "registerWithTaints:\n- {key: " + TaintKey + `, value: "true", effect: NoSchedule}` + "\n"
}

// clusterSettings are the cluster node's: its own cgroup root, so that two kubelets on one
// machine keep to their own pods, and the cluster's DNS.
func clusterSettings(p placement) string {
	var s string
	if p.cgroupRoot != "" {
		s += "cgroupRoot: " + p.cgroupRoot + "\n"
	}
	if p.clusterDNS != "" {
		s += "clusterDNS: [" + p.clusterDNS + "]\n"
	}
	return s
}
