package node

import (
	"fmt"
	"path/filepath"
)

// KubeletPort is where the kubelet serves on the node's address (nothing else listens there).
const KubeletPort = 10250

// containerdConfig is Debian's containerd 1.6 (config schema v2) with every path under dir:
// the CRI plugin with runc and cgroupfs, the CNI network of cniConfig, and the suite's
// registry as a plain-HTTP mirror of itself.
func containerdConfig(dir, registry, pauseImage string) string {
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
  # The suite's registry serves plain HTTP on 127.0.0.1; the mirror says so.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%[9]q]
    endpoint = [%[10]q]
`,
		filepath.Join(dir, "containerd", "root"),
		filepath.Join(dir, "containerd", "state"),
		filepath.Join(dir, "containerd", "containerd.sock"),
		filepath.Join(dir, "containerd", "containerd.sock.ttrpc"),
		filepath.Join(dir, "containerd", "opt"),
		pauseImage,
		CNIBinDir,
		filepath.Join(dir, "cni", "net.d"),
		registry,
		"http://"+registry,
	)
}

// cniConfig attaches every pod to the node's bridge with an address of the node's subnet.
// No gateway, no masquerading, no default route: a pod reaches the node and the other pods
// and nothing else.
func cniConfig(dir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "e2e-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "rangeStart": "10.210.0.16", "rangeEnd": "10.210.0.254"}]],
        "dataDir": %q
      }
    }
  ]
}
`, Bridge, Subnet, filepath.Join(dir, "cni", "ipam"))
}

// kubeletConfig is the kubelet's configuration: cgroupfs on this machine's cgroup v1
// hierarchies (which Kubernetes 1.35 refuses unless failCgroupV1 is false), serving on the
// node's address with client certificates and webhook authorization, registering tainted, and
// writing pod logs beside the suite's other logs.
func kubeletConfig(dir, logDir, socket string, healthzPort int) string {
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
registerWithTaints:
- {key: %[8]s, value: "true", effect: NoSchedule}
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
podLogsDir: %[9]s
maxPods: 60
serializeImagePulls: false
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
# A scratch machine: evict only when really short.
evictionHard:
  memory.available: "200Mi"
  nodefs.available: "2%%"
  nodefs.inodesFree: "2%%"
  imagefs.available: "2%%"
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
`,
		socket,
		Address, KubeletPort, healthzPort,
		filepath.Join(dir, "pki", "serving.crt"), filepath.Join(dir, "pki", "serving.key"), filepath.Join(dir, "pki", "ca.crt"),
		TaintKey,
		filepath.Join(logDir, "node-pods"),
	)
}
