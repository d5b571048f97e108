//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/addons"
	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/provider"
)

// providerActivated is the production-shaped lane's activation of the provider. Crossplane's
// chart there activates nothing (provider.defaultActivations: [], suite/cluster.go), so the
// provider, which declares safe-start, runs no pod until the platform applies
// package-provider/examples/activation-policy.yaml: TestClusterProviderActivation does, before
// every other provider scenario; a run that leaves it out activates the provider in the first
// scenario that needs it.
var providerActivated setUp

var mrdGVK = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1alpha1", Kind: "ManagedResourceDefinition"}

// activationTimeout bounds the provider's runtime becoming Available once activated: Crossplane
// scales it up and a node starts its pod (the image is pulled already or from the registry).
const activationTimeout = 3 * time.Minute

// activateProvider applies the platform's ManagedResourceActivationPolicy and waits until the
// Instance's CRD is served and the provider's runtime Deployment is Available.
func activateProvider(ctx context.Context) error {
	if _, err := env.Kube.ApplyFile(ctx, filepath.Join(env.RepoRoot, "package-provider", "examples", "activation-policy.yaml")); err != nil {
		return err
	}
	if err := crossplane.WaitEstablished(ctx, env.Kube, provider.InstanceCRD); err != nil {
		return err
	}
	var name string
	err := kube.Wait(ctx, activationTimeout, "the provider's runtime Deployment scaled up", func(ctx context.Context) error {
		d, err := providerRuntime(ctx)
		if err != nil {
			return err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas == 0 {
			return errors.Errorf("Deployment %s has no replicas", d.Name)
		}
		name = d.Name
		return nil
	})
	if err != nil {
		return err
	}
	return addons.WaitAvailable(ctx, env.Kube, crossplane.Namespace, name, activationTimeout)
}

// providerRuntime returns the Deployment Crossplane's Default runtime runs the provider's
// revision as.
func providerRuntime(ctx context.Context) (*appsv1.Deployment, error) {
	list, err := env.Kube.Typed.AppsV1().Deployments(crossplane.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var found []*appsv1.Deployment
	for i := range list.Items {
		if o := metav1.GetControllerOf(&list.Items[i]); o != nil && o.Kind == provider.ProviderRevisionGVK.Kind && strings.HasPrefix(o.Name, provider.Name+"-") {
			found = append(found, &list.Items[i])
		}
	}
	if len(found) != 1 {
		return nil, errors.Errorf("%d runtime Deployments of the provider, want one", len(found))
	}
	return found[0], nil
}

// With the provider installed and nothing activated, the provider costs nothing: Crossplane
// keeps its runtime at zero replicas and the Instance's CRD uncreated, and a claim placed in
// another cluster says why, on the claim, in words a team can act on. Once the platform applies
// the documented ManagedResourceActivationPolicy, the provider runs and the same claim becomes
// Available, untouched.
func TestClusterProviderActivation(t *testing.T) {
	requireCluster(t)
	ctx := context.Background()

	mrd, err := env.Kube.Get(ctx, mrdGVK, "", provider.InstanceCRD)
	if err != nil {
		t.Fatalf("the Instance's ManagedResourceDefinition: %v", err)
	}
	if state, _, _ := unstructured.NestedString(mrd.Object, "spec", "state"); state != "Inactive" {
		t.Fatalf("ManagedResourceDefinition %s is %q before this scenario activated it: nothing may activate it in this lane (provider.defaultActivations: []), and this scenario must run before every other provider scenario", provider.InstanceCRD, state)
	}

	t.Run("nothing activated: no Instance CRD, no provider pod", func(t *testing.T) {
		if _, err := env.Kube.Get(ctx, crdGVK, "", provider.InstanceCRD); !kerrors.IsNotFound(err) {
			t.Errorf("CRD %s: %v, want none until it is activated", provider.InstanceCRD, err)
		}
		for _, n := range provider.ConfigCRDs() {
			if _, err := env.Kube.Get(ctx, crdGVK, "", n); err != nil {
				t.Errorf("CRD %s, which the package installs whatever is activated: %v", n, err)
			}
		}
		revs, err := env.Kube.Resource(provider.ProviderRevisionGVK, "")
		if err != nil {
			t.Fatal(err)
		}
		list, err := revs.List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/package=" + provider.Name})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("want one ProviderRevision of %s: %v", provider.Name, err)
		}
		if s, reason, msg, _ := kube.Condition(&list.Items[0], "RuntimeActive"); reason != "AwaitingActivation" {
			t.Errorf("ProviderRevision %s RuntimeActive=%s/%s %q, want reason AwaitingActivation", list.Items[0].GetName(), s, reason, msg)
		}
		d, err := providerRuntime(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
			t.Errorf("the provider's runtime Deployment %s: replicas %v, want 0", d.Name, d.Spec.Replicas)
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := env.Kube.Typed.CoreV1().Pods(crossplane.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 0 {
			t.Errorf("the provider has %d pods, want none while nothing is activated", len(pods.Items))
		}
	})

	a, _ := startWorkloads(t)
	ns := team(t, "activation", a)
	const name = "sessions"
	apply(t, remoteClaim(ns, name, a.Config, 1))
	m := waitMemcached(t, claimGVK, ns, name, "InvalidSpec naming providerConfigRef: the Instance is not served", func(m memcached) error {
		if m.Available != "False" || m.AvailableReason != "InvalidSpec" || !strings.Contains(m.Message, "providerConfigRef") || !strings.Contains(m.Message, "not served") {
			return errors.New("not yet")
		}
		return nil
	})
	t.Logf("before activation: %s", m)

	start := time.Now()
	providerActivated.require(t, activateProvider)
	t.Logf("activation-timing: policy applied → the Instance's CRD served and the provider's pod Available %.1fs; provider RSS %s", time.Since(start).Seconds(), providerRSS())
	activatedClaim = waitingClaim{namespace: ns, name: name, since: start}
}

// activatedClaim is the claim TestClusterProviderActivation saw refused before it activated
// the provider, which TestClusterProviderActivatedClaim waits for among the parallel
// scenarios: the function calls it again within a minute, a minute that need not hold up the
// scenarios that run one at a time.
var activatedClaim waitingClaim

type waitingClaim struct {
	namespace, name string
	since           time.Time
}

// A claim the function refused because the Instance kind was not served becomes Available,
// untouched, once the provider is activated.
func TestClusterProviderActivatedClaim(t *testing.T) {
	requireCluster(t)
	t.Parallel()
	c := activatedClaim
	if c.name == "" {
		t.Skip("TestClusterProviderActivation did not run: it leaves the claim this scenario waits for")
	}
	m := waitAvailable(t, claimGVK, c.namespace, c.name, 1)
	t.Logf("activation-timing: policy applied → the claim Available %.0fs (its condition's transition; seen %.1fs after): %s",
		m.AvailableSince.Sub(c.since).Seconds(), time.Since(c.since).Seconds(), m)
}

// providerRSS is the resident memory of the provider's process in its pod (the package's
// runtime image runs /provider), read from the host's /proc, or why it cannot be: a figure
// logged, not judged.
func providerRSS() string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline")) //nolint:gosec // procfs.
		if err != nil || !strings.HasPrefix(string(cmd), "/provider\x00") {
			continue
		}
		status, err := os.ReadFile(filepath.Join(d, "status")) //nolint:gosec // procfs.
		if err != nil {
			continue
		}
		for l := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				out = append(out, strconv.FormatFloat(float64(kb)/1024, 'f', 1, 64)+" MiB (pid "+filepath.Base(d)+")")
			}
		}
	}
	if len(out) == 0 {
		return "unknown (no /provider process seen)"
	}
	return strings.Join(out, ", ")
}
