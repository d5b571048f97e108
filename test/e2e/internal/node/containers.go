package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Container is a running container of a pod on the real node, as the host sees it: its
// cgroups (the kubelet's cgroupfs layout, kubepods[/<qos>]/pod<uid>/<container id>) and its
// processes. What a scenario reads here is what the kernel enforces, not what a spec asks.
type Container struct {
	// ID is the runtime's container ID; Path the cgroup path below each hierarchy's root.
	ID, Path string
}

// FindContainer returns the running container named name of pod, which must be on the real
// node.
func FindContainer(pod *corev1.Pod, name string) (Container, error) {
	if pod.Spec.NodeName != Name {
		return Container{}, errors.Errorf("pod %s/%s runs on node %q, not on the real node", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	var id string
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name && s.State.Running != nil {
			_, id, _ = strings.Cut(s.ContainerID, "://")
		}
	}
	if id == "" {
		return Container{}, errors.Errorf("pod %s/%s has no running container %s", pod.Namespace, pod.Name, name)
	}
	for _, qos := range []string{"", "burstable", "besteffort"} {
		p := filepath.Join("kubepods", qos, "pod"+string(pod.UID), id)
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", p)); err == nil {
			return Container{ID: id, Path: p}, nil
		}
	}
	return Container{}, errors.Errorf("no memory cgroup for container %s of pod %s/%s (uid %s)", id, pod.Namespace, pod.Name, pod.UID)
}

// cgroupFile reads a number from file of the container's cgroup in hierarchy.
func (c Container) cgroupFile(hierarchy, file string) (int64, error) {
	p := filepath.Join("/sys/fs/cgroup", hierarchy, c.Path, file)
	b, err := os.ReadFile(p) //nolint:gosec // cgroupfs.
	if err != nil {
		return 0, errors.Wrapf(err, "cannot read %s", p)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, errors.Wrapf(err, "cannot parse %s", p)
}

// MemoryLimit is the cgroup's memory.limit_in_bytes: the limit the kernel enforces.
func (c Container) MemoryLimit() (int64, error) {
	return c.cgroupFile("memory", "memory.limit_in_bytes")
}

// MemoryPeak is the cgroup's memory.max_usage_in_bytes: the most it ever used.
func (c Container) MemoryPeak() (int64, error) {
	return c.cgroupFile("memory", "memory.max_usage_in_bytes")
}

// OOMKills is how many processes the kernel's OOM killer killed in the cgroup (the oom_kill
// line of memory.oom_control).
func (c Container) OOMKills() (int64, error) {
	p := filepath.Join("/sys/fs/cgroup/memory", c.Path, "memory.oom_control")
	b, err := os.ReadFile(p) //nolint:gosec // cgroupfs.
	if err != nil {
		return 0, errors.Wrapf(err, "cannot read %s", p)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "oom_kill" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, errors.Errorf("no oom_kill in %s", p)
}

// CPUTime is the CPU time the container's processes used (cpuacct.usage).
func (c Container) CPUTime() (time.Duration, error) {
	ns, err := c.cgroupFile("cpuacct", "cpuacct.usage")
	return time.Duration(ns), err
}

// PIDs are the host PIDs of the container's processes.
func (c Container) PIDs() ([]int, error) {
	p := filepath.Join("/sys/fs/cgroup/memory", c.Path, "cgroup.procs")
	pids := readPIDs(p)
	if len(pids) == 0 {
		return nil, errors.Errorf("no process in %s", p)
	}
	return pids, nil
}

// A Process is what the kernel says of a running process: its identity, privileges, command
// line, environment and file system.
type Process struct {
	PID int
	// UID and GID are the real, effective, saved and file-system IDs.
	UID, GID [4]int
	// CapEff, CapPrm, CapBnd and CapAmb are its capability sets.
	CapEff, CapPrm, CapBnd, CapAmb uint64
	// NoNewPrivs is 1 when it can never gain privileges (allowPrivilegeEscalation false).
	NoNewPrivs int
	// Seccomp is 2 under a seccomp filter.
	Seccomp int
	Cmdline []string
	Env     map[string]string
	// Mounts maps each mount point, as the process sees it, to its mount options.
	Mounts map[string][]string
}

// ReadProcess reads /proc/<pid>.
func ReadProcess(pid int) (Process, error) {
	p := Process{PID: pid, Env: map[string]string{}, Mounts: map[string][]string{}}
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status")) //nolint:gosec // procfs.
	if err != nil {
		return p, errors.Wrapf(err, "cannot read the status of process %d", pid)
	}
	for _, l := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		switch k {
		case "Uid", "Gid":
			ids := &p.UID
			if k == "Gid" {
				ids = &p.GID
			}
			for i := 0; i < 4 && i < len(f); i++ {
				ids[i], _ = strconv.Atoi(f[i])
			}
		case "CapEff", "CapPrm", "CapBnd", "CapAmb":
			c, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			*map[string]*uint64{"CapEff": &p.CapEff, "CapPrm": &p.CapPrm, "CapBnd": &p.CapBnd, "CapAmb": &p.CapAmb}[k] = c
		case "NoNewPrivs":
			p.NoNewPrivs, _ = strconv.Atoi(strings.TrimSpace(v))
		case "Seccomp":
			p.Seccomp, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	cmd, err := os.ReadFile(filepath.Join(dir, "cmdline")) //nolint:gosec // procfs.
	if err != nil {
		return p, errors.Wrapf(err, "cannot read the command line of process %d", pid)
	}
	p.Cmdline = strings.Split(strings.TrimSuffix(string(cmd), "\x00"), "\x00")
	env, err := os.ReadFile(filepath.Join(dir, "environ")) //nolint:gosec // procfs.
	if err != nil {
		return p, errors.Wrapf(err, "cannot read the environment of process %d", pid)
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p.Env[k] = v
		}
	}
	mi, err := os.ReadFile(filepath.Join(dir, "mountinfo")) //nolint:gosec // procfs.
	if err != nil {
		return p, errors.Wrapf(err, "cannot read the mounts of process %d", pid)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 5 {
			p.Mounts[unescapeMount(f[4])] = strings.Split(f[5], ",")
		}
	}
	return p, nil
}

// CPUQuota is the cgroup's CFS quota and period (cpu.cfs_quota_us, cpu.cfs_period_us): the
// CPU limit the kernel enforces, quota/period CPUs; a quota of -1 is no limit.
func (c Container) CPUQuota() (quota, period int64, err error) {
	if quota, err = c.cgroupFile("cpu", "cpu.cfs_quota_us"); err != nil {
		return 0, 0, err
	}
	period, err = c.cgroupFile("cpu", "cpu.cfs_period_us")
	return quota, period, err
}
