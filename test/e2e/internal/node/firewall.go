package node

import (
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// The network policy firewall: the node's CNI bridge enforces no NetworkPolicy, so a scenario
// that proves the function's NetworkPolicy holds runs kube-router's network policy controller
// beside the kubelet, and only that (no routing, no service proxy). It filters the pods' traffic
// on the bridge with iptables chains and ipsets in the host's filter table. Traffic whose source
// is the node itself (the kubelet's probes, the suite's own clients on the host) is always
// admitted, so the other scenarios are unaffected while it runs.

// Chain and ipset names kube-router's firewall makes (its netpol controller's prefixes).
var (
	firewallChainPrefixes = []string{"KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-"}
	firewallSetPrefixes   = []string{"KUBE-SRC-", "KUBE-DST-", "inet6:KUBE-SRC-", "inet6:KUBE-DST-"}
)

// firewallForwardChain is the chain kube-router hooks into FORWARD; once it exists the
// firewall has synced its rules once.
const firewallForwardChain = "KUBE-ROUTER-FORWARD"

func isFirewallChain(c string) bool { return hasAnyPrefix(c, firewallChainPrefixes) }
func isFirewallSet(s string) bool   { return hasAnyPrefix(s, firewallSetPrefixes) }

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// FirewallOptions configure the network policy firewall.
type FirewallOptions struct {
	// Binary is kube-router (make node-tools).
	Binary string
	// Kubeconfig reaches the control plane as a user who may list and watch pods,
	// namespaces, NetworkPolicies and nodes.
	Kubeconfig string
	// ServiceCIDR is the control plane's service range.
	ServiceCIDR string
	// LogDir receives kube-router.log.
	LogDir string
	PIDs   *proc.PIDFile
}

// A Firewall is kube-router's network policy controller running for the real node.
type Firewall struct {
	Process *proc.Process
	// MetricsURL is kube-router's Prometheus endpoint, on 127.0.0.1.
	MetricsURL string
	// Synced is how long kube-router took, from its start, to install its chains.
	Synced time.Duration
	// chains and sets are what existed before it started.
	chains map[string][]string
	sets   []string
}

// firewallStartTimeout bounds how long kube-router may take to sync its rules once.
const firewallStartTimeout = time.Minute

// StartFirewall starts kube-router's firewall for the real node and returns once it has
// installed its chains. On error it has stopped it and removed what it installed.
func StartFirewall(ctx context.Context, o FirewallOptions) (f *Firewall, err error) {
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, errors.Wrapf(err, "no kube-router at %s (make node-tools)", o.Binary)
	}
	f = &Firewall{chains: map[string][]string{}}
	for _, ipt := range []string{"iptables", "ip6tables"} {
		chains, _, err := iptablesSave(ipt, "filter")
		if err != nil {
			return nil, err
		}
		for _, c := range chains {
			if isFirewallChain(c) {
				return nil, errors.Errorf("%s's filter table already has chain %s: another network policy firewall runs on this machine", ipt, c)
			}
		}
		f.chains[ipt+"/filter"] = chains
	}
	if f.sets, err = ipsetNames(); err != nil {
		return nil, err
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return nil, err
	}
	f.MetricsURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])) + "/metrics"
	defer func() {
		if err != nil {
			_ = f.Stop()
		}
	}()
	start := time.Now()
	f.Process, err = proc.Start(proc.Spec{
		Name: "kube-router",
		Path: o.Binary,
		Args: []string{
			"--kubeconfig=" + o.Kubeconfig,
			"--hostname-override=" + Name,
			"--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
			"--enable-cni=false", "--enable-ipv6=false",
			"--service-cluster-ip-range=" + o.ServiceCIDR,
			// Its health port would listen on every interface: off. Metrics on loopback only.
			"--health-port=0",
			"--metrics-addr=127.0.0.1", "--metrics-port=" + strconv.Itoa(ports[0]),
			"--v=1",
		},
	}, o.LogDir, o.PIDs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, firewallStartTimeout)
	defer cancel()
	err = f.Process.WaitReady(ctx, func(context.Context) error {
		chains, _, err := iptablesSave("iptables", "filter")
		if err != nil {
			return err
		}
		for _, c := range chains {
			if c == firewallForwardChain {
				return nil
			}
		}
		return errors.Errorf("no chain %s yet", firewallForwardChain)
	})
	f.Synced = time.Since(start)
	return f, err
}

// RSS is kube-router's resident memory in bytes, from /proc.
func (f *Firewall) RSS() (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(f.Process.PID()) + "/status")
	if err != nil {
		return 0, errors.Wrap(err, "cannot read kube-router's status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, errors.Wrapf(err, "cannot parse VmRSS %q", v)
		}
	}
	return 0, errors.New("no VmRSS in kube-router's status")
}

// Stop stops kube-router and removes the chains and ipsets it made (and the rules of the
// built-in chains that jump to them). It does not run kube-router --cleanup-config: in v2.1.0
// that mode builds its network policy controller without iptables or ipset handlers, so it
// removes none of them while logging success, then tries to flush every IPVS definition on the
// machine and panics (a nil pointer in the service proxy's hairpin clean-up). It returns what
// it could not remove. It is safe to call more than once.
func (f *Firewall) Stop() error {
	var errs []string
	if f.Process != nil {
		if err := f.Process.Stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := removeChainsMatching(f.chains, []string{"filter"}, isFirewallChain); err != nil {
		errs = append(errs, err.Error())
	}
	if err := removeIPSets(f.sets, isFirewallSet); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return errors.Errorf("cannot undo what kube-router's firewall did: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Left lists the firewall's chains and ipsets that exist now and did not before it started:
// none after Stop.
func (f *Firewall) Left() ([]string, error) {
	var out []string
	for _, ipt := range []string{"iptables", "ip6tables"} {
		chains, _, err := iptablesSave(ipt, "filter")
		if err != nil {
			return nil, err
		}
		for _, c := range chains {
			if isFirewallChain(c) && !slices.Contains(f.chains[ipt+"/filter"], c) {
				out = append(out, ipt+" chain "+c)
			}
		}
	}
	sets, err := ipsetNames()
	if err != nil {
		return nil, err
	}
	for _, s := range sets {
		if isFirewallSet(s) && !slices.Contains(f.sets, s) {
			out = append(out, "ipset "+s)
		}
	}
	return out, nil
}

// FirewallRules returns the iptables rules of the firewall's chains (iptables-save lines),
// where a scenario sees which pods and policies it filters.
func FirewallRules() ([]string, error) {
	_, rules, err := iptablesSave("iptables", "filter")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rules {
		if f := strings.Fields(r); len(f) > 1 && isFirewallChain(f[1]) {
			out = append(out, r)
		}
	}
	return out, nil
}
