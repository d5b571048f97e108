package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A HostCgroup is a cgroup of the host's own, outside the kubelet's kubepods, in the cpu and
// cpuacct hierarchies: where a scenario runs a process on the host with the CPU limit a
// container has, to compare the two under the same limit.
type HostCgroup struct {
	name string
}

// NewHostCgroup makes the cgroup name in the cpu and cpuacct hierarchies with the CFS quota
// and period given (a quota of -1: no limit).
func NewHostCgroup(name string, quota, period int64) (*HostCgroup, error) {
	g := &HostCgroup{name: name}
	for _, h := range []string{"cpu", "cpuacct"} {
		if err := os.Mkdir(g.dir(h), 0o755); err != nil && !os.IsExist(err) {
			_ = g.Remove()
			return nil, errors.Wrapf(err, "cannot make cgroup %s", g.dir(h))
		}
	}
	for _, f := range []struct {
		file string
		v    int64
	}{{"cpu.cfs_period_us", period}, {"cpu.cfs_quota_us", quota}} {
		if err := os.WriteFile(filepath.Join(g.dir("cpu"), f.file), []byte(strconv.FormatInt(f.v, 10)), 0o644); err != nil { //nolint:gosec // cgroupfs.
			_ = g.Remove()
			return nil, errors.Wrapf(err, "cannot set %s", f.file)
		}
	}
	return g, nil
}

func (g *HostCgroup) dir(hierarchy string) string {
	return filepath.Join("/sys/fs/cgroup", hierarchy, g.name)
}

// Add moves process pid, every thread of it, into the cgroup.
func (g *HostCgroup) Add(pid int) error {
	for _, h := range []string{"cpu", "cpuacct"} {
		if err := os.WriteFile(filepath.Join(g.dir(h), "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil { //nolint:gosec // cgroupfs.
			return errors.Wrapf(err, "cannot move process %d into %s", pid, g.dir(h))
		}
	}
	return nil
}

// CPUTime is the CPU time the cgroup's processes used (cpuacct.usage).
func (g *HostCgroup) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(g.dir("cpuacct"), "cpuacct.usage"))
	if err != nil {
		return 0, errors.Wrap(err, "cannot read cpuacct.usage")
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return time.Duration(ns), errors.Wrap(err, "cannot parse cpuacct.usage")
}

// Remove removes the cgroup, which must hold no process any more.
func (g *HostCgroup) Remove() error {
	var first error
	for _, h := range []string{"cpu", "cpuacct"} {
		if err := os.Remove(g.dir(h)); err != nil && !os.IsNotExist(err) && first == nil {
			first = errors.Wrapf(err, "cannot remove %s", g.dir(h))
		}
	}
	return first
}
