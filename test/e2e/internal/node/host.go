package node

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Host programs and files the node needs, from the Debian packages `make node-packages`
// installs.
var hostRequirements = []struct{ path, from string }{
	{"/usr/bin/containerd", "containerd"},
	{"/usr/bin/containerd-shim-runc-v2", "containerd"},
	{"/usr/bin/ctr", "containerd"},
	{"/usr/sbin/runc", "runc"},
	{CNIBinDir + "/bridge", "containernetworking-plugins"},
	{CNIBinDir + "/host-local", "containernetworking-plugins"},
	{CNIBinDir + "/loopback", "containernetworking-plugins"},
	{"/usr/sbin/iptables", "iptables"},
	{"/usr/sbin/ip6tables", "iptables"},
	{"/usr/sbin/ipset", "ipset"},
	{"/usr/sbin/conntrack", "conntrack"},
	{"/usr/sbin/ip", "iproute2"},
}

// CNIBinDir is where Debian's containernetworking-plugins puts the plugins.
const CNIBinDir = "/usr/lib/cni"

// Preflight says everything that keeps this machine from running the node, at once: not
// root, no cgroup memory controller, a program missing. The suite fails with it rather than
// skipping the node lane.
func Preflight(binaries ...string) error {
	var problems []string
	if os.Geteuid() != 0 {
		problems = append(problems, fmt.Sprintf("not root (euid %d): the kubelet, containerd and runc need root", os.Geteuid()))
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err != nil {
		problems = append(problems, "no cgroup v1 memory controller at /sys/fs/cgroup/memory: the node lane runs on cgroup v1 hierarchies (see docs/e2e.md)")
	}
	for _, r := range hostRequirements {
		if _, err := os.Stat(r.path); err != nil {
			problems = append(problems, fmt.Sprintf("%s missing (Debian package %s)", r.path, r.from))
		}
	}
	for _, b := range binaries {
		if _, err := os.Stat(b); err != nil {
			problems = append(problems, b+" missing (make node-tools)")
		}
	}
	if len(problems) > 0 {
		return errors.Errorf("this machine cannot run the node lane:\n  - %s\ninstall what it needs with `make node-packages node-tools` as root, or run without it: E2E_NODE=off",
			strings.Join(problems, "\n  - "))
	}
	return nil
}

// Host paths the kubelet, containerd and the CNI plugins write outside the node's directory
// (fixed in their code). The ones that did not exist before the node started are removed
// with everything in them; in the ones that did, only the node's own entries are.
var fixedDirs = []string{
	"/run/containerd/runc/k8s.io",
	"/run/containerd/runc",
	"/run/containerd/s",
	"/run/containerd",
	"/run/netns",
	"/var/log/containers",
	"/var/lib/cni/results",
	"/var/lib/cni",
}

// Kernel settings the kubelet (setupKernelTunables) and the CNI bridge plugin may change;
// each is put back as it was.
var sysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	"net/ipv4/ip_forward",
}

// iptables tables the kubelet adds chains to.
var iptablesTables = []string{"filter", "nat", "mangle"}

// hostState is what the node found on the host before changing anything, written to
// <dir>/state.json before the first change, so that Down can undo exactly what the node did,
// also from another process after a crash.
type hostState struct {
	// Bridge is the host's bridge the node made (the lane's, or the cluster's), deleted by Down.
	Dir, LogDir, Bridge string
	// OwnNetns are the network namespaces the nodes run in (a cluster's), deleted by Down.
	OwnNetns []string
	// CgroupRoots are the nodes' top cgroups relative to each hierarchy (kubepods for the
	// lane's node).
	CgroupRoots []string
	Sysctls     map[string]string
	// Chains lists, per "iptables/filter" and so on, the chains that already existed.
	Chains map[string][]string
	// Netns lists /run/netns's entries before.
	Netns []string
	// IPSets lists the ipsets that already existed.
	IPSets []string
	// Existed tells, per fixed directory and per cgroup hierarchy's kubepods, whether it
	// existed before.
	Existed map[string]bool
	Started time.Time
}

// StatePath is where the node records the host's state; `make e2e` cleans up after a crashed
// suite when it is still there.
func StatePath(dir string) string { return filepath.Join(dir, "state.json") }

func snapshot(dir, logDir, bridge string, ownNetns, cgroupRoots []string) (_ *hostState, err error) {
	s := &hostState{Dir: dir, LogDir: logDir, Bridge: bridge, OwnNetns: ownNetns, CgroupRoots: cgroupRoots,
		Sysctls: map[string]string{}, Chains: map[string][]string{}, Existed: map[string]bool{}, Started: time.Now()}
	for _, k := range sysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read sysctl %s", k)
		}
		s.Sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, t := range iptablesTables {
			chains, _, err := iptablesSave(ipt, t)
			if err != nil {
				return nil, err
			}
			s.Chains[ipt+"/"+t] = chains
		}
	}
	s.Netns = dirEntries("/run/netns")
	if s.IPSets, err = ipsetNames(); err != nil {
		return nil, err
	}
	for _, d := range append(append([]string{}, fixedDirs...), s.cgroups()...) {
		_, err := os.Lstat(d)
		s.Existed[d] = err == nil
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the host's state")
	}
	return s, errors.Wrap(os.WriteFile(StatePath(dir), b, 0o600), "cannot record the host's state")
}

// cgroups are the nodes' top cgroups in every v1 hierarchy (and the v2 one).
func (s *hostState) cgroups() []string {
	roots := s.CgroupRoots
	if len(roots) == 0 {
		roots = []string{"kubepods"}
	}
	var out []string
	for _, h := range dirEntries("/sys/fs/cgroup") {
		for _, r := range roots {
			out = append(out, filepath.Join("/sys/fs/cgroup", h, r))
		}
	}
	return out
}

func dirEntries(dir string) []string {
	es, _ := os.ReadDir(dir)
	names := make([]string, 0, len(es))
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// iptablesSave returns the chains of table and its rules, from `<ipt>-save -t table`.
func iptablesSave(ipt, table string) (chains, rules []string, err error) {
	out, err := exec.Command(ipt+"-save", "-t", table).Output() //nolint:gosec // Fixed programs.
	if err != nil {
		return nil, nil, errors.Wrapf(err, "cannot run %s-save -t %s", ipt, table)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, ":"):
			chains = append(chains, strings.Fields(l[1:])[0])
		case strings.HasPrefix(l, "-A "):
			rules = append(rules, l)
		}
	}
	return chains, rules, nil
}

// Down undoes on the host whatever the node in dir did, from the state it recorded: it kills
// every process left in the kubelet's cgroups and the containerd shims of the node's socket,
// unmounts what is mounted under dir and the pods' network namespaces, deletes the bridge,
// the iptables chains and cgroups that were not there before, puts sysctls back, removes the
// fixed directories it created, and finally dir itself. It is what Node.Stop ends with, and
// what `make e2e` runs after a crashed suite (test/e2e/cmd/node-down). Without a state file it
// does nothing. It returns what it could not undo.
func Down(dir string) error {
	b, err := os.ReadFile(StatePath(dir)) //nolint:gosec // Our own file.
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return errors.Wrap(err, "cannot read the host's state")
	}
	s := &hostState{}
	if err := json.Unmarshal(b, s); err != nil {
		return errors.Wrapf(err, "cannot decode %s", StatePath(dir))
	}
	var problems []string
	fail := func(err error) {
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	fail(killLeftovers(s))
	fail(unmountUnder(s))
	fail(removeNetns(s))
	for _, n := range s.OwnNetns {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
			fail(run("ip", "netns", "del", n))
		}
	}
	if _, err := os.Stat("/sys/class/net/" + s.Bridge); s.Bridge != "" && err == nil {
		fail(run("ip", "link", "del", s.Bridge))
	}
	fail(removeChains(s))
	fail(removeIPSets(s.IPSets, isFirewallSet))
	fail(removeCgroups(s))
	for k, v := range s.Sysctls {
		fail(errors.Wrapf(os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644), "cannot restore sysctl %s=%s", k, v)) //nolint:gosec // A sysctl.
	}
	fail(removeFixedDirs(s))
	if len(problems) > 0 {
		return errors.Errorf("cannot undo everything the real node did on this host (state kept in %s for another try):\n  - %s", StatePath(dir), strings.Join(problems, "\n  - "))
	}
	if err := os.Remove(StatePath(dir)); err != nil {
		return errors.Wrap(err, "cannot remove the host's state")
	}
	return errors.Wrapf(os.RemoveAll(dir), "cannot remove %s", dir)
}

// killLeftovers SIGKILLs every process in the kubelet's cgroups and the node's own programs
// (nodePrograms), then waits for them to go.
func killLeftovers(s *hostState) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids := leftoverPIDs(s)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Errorf("processes still running after SIGKILL: %v", pids)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// nodePrograms are the programs of the node that outlive a crashed suite: containerd's shims
// always (by design), containerd and the kubelet when the suite was killed outright. Each is
// recognised by its name and by the node's directory on its command line.
var nodePrograms = []string{"containerd", "containerd-shim-runc-v2", "kubelet"}

func leftoverPIDs(s *hostState) []int {
	seen := map[int]bool{}
	for _, cg := range s.cgroups() {
		if s.Existed[cg] {
			continue
		}
		_ = filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil //nolint:nilerr // A cgroup gone meanwhile is fine.
			}
			for _, pid := range readPIDs(p) {
				seen[pid] = true
			}
			return nil
		})
	}
	for _, e := range dirEntries("/proc") {
		pid, err := strconv.Atoi(e)
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e, "cmdline")) //nolint:gosec // procfs.
		if err != nil {
			continue
		}
		argv := strings.Split(string(cmd), "\x00")
		if slices.Contains(nodePrograms, filepath.Base(argv[0])) && strings.Contains(string(cmd), s.Dir+"/") {
			seen[pid] = true
		}
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	return pids
}

func readPIDs(path string) []int {
	b, err := os.ReadFile(path) //nolint:gosec // cgroupfs.
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// mountPoints returns the mount points of this mount namespace, from /proc/self/mountinfo.
func mountPoints() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the mount table")
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 {
			out = append(out, unescapeMount(f[4]))
		}
	}
	return out, nil
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space and so on).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ours reports whether the mount point belongs to the node: under its directory, or a
// network namespace it made.
func (s *hostState) ours(mp string) bool {
	if strings.HasPrefix(mp, s.Dir+"/") {
		return true
	}
	if d, n := filepath.Split(mp); d == "/run/netns/" {
		return strings.HasPrefix(n, "cni-") && !slices.Contains(s.Netns, n)
	}
	// runc bind-mounts a copy of itself into a container's state directory while it starts
	// one; a start cut short by the teardown left that mount, and the directory, which the
	// node made, could not be removed.
	const runcState = "/run/containerd/runc/k8s.io"
	return !s.Existed[runcState] && strings.HasPrefix(mp, runcState+"/")
}

// unmountUnder lazily unmounts, deepest first, every mount that belongs to the node.
func unmountUnder(s *hostState) error {
	for range 5 {
		mps, err := mountPoints()
		if err != nil {
			return err
		}
		var left []string
		for _, mp := range mps {
			if s.ours(mp) {
				left = append(left, mp)
			}
		}
		if len(left) == 0 {
			return nil
		}
		sort.Sort(sort.Reverse(sort.StringSlice(left)))
		for _, mp := range left {
			_ = syscall.Unmount(mp, syscall.MNT_DETACH)
		}
	}
	return errors.New("mounts of the node left after five rounds of unmounting")
}

func removeNetns(s *hostState) error {
	var errs []string
	for _, n := range dirEntries("/run/netns") {
		if strings.HasPrefix(n, "cni-") && !slices.Contains(s.Netns, n) {
			if err := os.Remove(filepath.Join("/run/netns", n)); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return errors.Errorf("cannot remove network namespaces: %s", strings.Join(errs, "; "))
	}
	return nil
}

// removeChains deletes every KUBE-* chain that did not exist before (the kubelet's and, after
// a crash, the network policy firewall's), and the rules of other chains that jump to one of
// them.
func removeChains(s *hostState) error {
	return removeChainsMatching(s.Chains, iptablesTables, func(c string) bool { return strings.HasPrefix(c, "KUBE-") })
}

// removeChainsMatching deletes, in each table of iptables and ip6tables, the chains match
// selects that are not in before (per "iptables/filter" and so on), and the rules of other
// chains that jump to one of them.
func removeChainsMatching(before map[string][]string, tables []string, match func(chain string) bool) error {
	var errs []string
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, t := range tables {
			chains, rules, err := iptablesSave(ipt, t)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			var added []string
			for _, c := range chains {
				if match(c) && !slices.Contains(before[ipt+"/"+t], c) {
					added = append(added, c)
				}
			}
			if len(added) == 0 {
				continue
			}
			for _, r := range rules {
				f := ruleFields(r)
				for i := range len(f) - 1 {
					if (f[i] == "-j" || f[i] == "-g") && slices.Contains(added, f[i+1]) && !slices.Contains(added, f[1]) {
						if err := run(ipt, append([]string{"-t", t, "-D"}, f[1:]...)...); err != nil {
							errs = append(errs, err.Error())
						}
						break
					}
				}
			}
			for _, op := range []string{"-F", "-X"} {
				for _, c := range added {
					if err := run(ipt, "-t", t, op, c); err != nil {
						errs = append(errs, err.Error())
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.Errorf("cannot remove iptables chains: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ruleFields splits a rule as iptables-save prints it into arguments, undoing its quoting:
// a comment with spaces is one double-quoted word, with \" and \\ escaped inside.
func ruleFields(rule string) []string {
	var out []string
	var b strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(rule); i++ {
		c := rule[i]
		switch {
		case quoted && c == '\\' && i+1 < len(rule):
			i++
			b.WriteByte(rule[i])
		case c == '"':
			quoted, inWord = !quoted, true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				out = append(out, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, b.String())
	}
	return out
}

// ipsetNames lists the ipsets of this machine.
func ipsetNames() ([]string, error) {
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return nil, errors.Wrap(err, "cannot list ipsets")
	}
	return strings.Fields(string(out)), nil
}

// removeIPSets destroys the ipsets match selects that are not in before. The chains that
// match against them must be gone first.
func removeIPSets(before []string, match func(set string) bool) error {
	names, err := ipsetNames()
	if err != nil {
		return err
	}
	var errs []string
	for _, n := range names {
		if match(n) && !slices.Contains(before, n) {
			if err := run("ipset", "destroy", n); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return errors.Errorf("cannot remove ipsets: %s", strings.Join(errs, "; "))
	}
	return nil
}

// removeCgroups removes, deepest first, the kubelet's cgroup trees that did not exist before.
func removeCgroups(s *hostState) error {
	var errs []string
	for _, cg := range s.cgroups() {
		if s.Existed[cg] {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return errors.Errorf("cannot remove the kubelet's cgroups: %s", strings.Join(errs, "; "))
	}
	return nil
}

// removeFixedDirs removes the fixed directories the node created, and, in /var/log/containers
// when it existed, the kubelet's links to the node's pod logs.
func removeFixedDirs(s *hostState) error {
	var errs []string
	if s.Existed["/var/log/containers"] {
		for _, n := range dirEntries("/var/log/containers") {
			p := filepath.Join("/var/log/containers", n)
			if t, err := os.Readlink(p); err == nil && (strings.HasPrefix(t, s.Dir+"/") || strings.HasPrefix(t, s.LogDir+"/")) {
				if err := os.Remove(p); err != nil {
					errs = append(errs, err.Error())
				}
			}
		}
	}
	for _, d := range fixedDirs {
		if s.Existed[d] {
			continue
		}
		if d == "/run/netns" {
			// `ip netns add` bind-mounts the directory on itself the first time; undo that
			// (every mount of it, should there be several) before removing it.
			for syscall.Unmount(d, 0) == nil {
			}
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return errors.Errorf("cannot remove the node's files: %s", strings.Join(errs, "; "))
	}
	return nil
}

// run runs a host program, returning its output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput() //nolint:gosec // Fixed programs.
	if err != nil {
		return errors.Wrapf(err, "%s %s: %s", name, strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	return nil
}
