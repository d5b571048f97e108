//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// appliedWithin is how soon a changed field must reach the Deployment in the workload
// cluster: the provider watches Instances, so a change is applied at the next reconcile,
// not at the next poll.
const appliedWithin = 10 * time.Second

// A change of any field reaches the Memcached in another cluster, whether an Instance is
// changed directly or through a claim placed there: maxItemSizeMB and scheduling (a node
// selector, a toleration, a priority class) are in the remote Deployment within seconds, and
// the Instance and the claim are Available again. Until the provider's drift verdicts were
// keyed on every field, a change of either was never applied: the provider reused the verdict
// judged on the old spec, and the claim stayed "rolling out" until some live object changed.
func TestProviderAppliesEveryField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := workloads(t)
	ns := team(t, "fields", a)

	// A PriorityClass of the workload cluster, which the API server admits pods naming.
	pc := "cache-" + suffix()
	if _, err := a.Kube.Typed.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: pc}, Value: 1000, Description: "TestProviderAppliesEveryField",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Kube.Typed.SchedulingV1().PriorityClasses().Delete(ctx, pc, metav1.DeleteOptions{}) })

	// The kwok nodes carry type=kwok; the toleration matches no taint, which changes nothing
	// but the pod spec.
	change := fmt.Sprintf(`{"maxItemSizeMB":4,"scheduling":{"nodeSelector":{"type":"kwok"},`+
		`"tolerations":[{"key":"dedicated","operator":"Equal","value":"cache","effect":"NoSchedule"}],"priorityClassName":%q}}`, pc)

	t.Run("an Instance", func(t *testing.T) {
		const name = "direct"
		apply(t, newInstance(ns, name, a.Config, 1, nil, nil))
		waitInstance(t, ns, name, "Available", instanceAvailable(1))
		patched := time.Now()
		if _, err := env.Kube.MergePatch(ctx, instanceGVK, ns, name, []byte(`{"spec":{"forProvider":`+change+`}}`)); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, a, ns, name, pc, patched)
		waitInstance(t, ns, name, "Available again", instanceAvailable(1))
	})

	t.Run("a claim placed in another cluster", func(t *testing.T) {
		const name = "placed"
		apply(t, remoteClaim(ns, name, a.Config, 2))
		waitAvailable(t, claimGVK, ns, name, 2)
		patched := time.Now()
		if _, err := env.Kube.MergePatch(ctx, claimGVK, ns, name, []byte(`{"spec":`+change+`}`)); err != nil {
			t.Fatal(err)
		}
		waitApplied(t, a, ns, name, pc, patched)
		waitAvailable(t, claimGVK, ns, name, 2)
	})
}

// waitApplied waits, at most appliedWithin after since, until the Deployment name in the
// workload cluster c runs memcached with a 4 MB item size limit on kwok nodes, tolerating the
// dedicated=cache taint, at priority class pc.
func waitApplied(t *testing.T, c *workloadCluster, ns, name, pc string, since time.Time) {
	t.Helper()
	err := kube.Wait(context.Background(), appliedWithin-time.Since(since), "Deployment "+ns+"/"+name+" in "+c.Config+" with the new maxItemSizeMB and scheduling", func(ctx context.Context) error {
		d, err := c.Kube.Get(ctx, deploymentGVK, ns, name)
		if err != nil {
			return err
		}
		return hasFields(d, pc)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Deployment %s/%s has the new fields %.1fs after the change", ns, name, time.Since(since).Seconds())
}

// hasFields checks what maxItemSizeMB 4 and the scheduling of TestProviderAppliesEveryField
// render into a Deployment.
func hasFields(d *unstructured.Unstructured, pc string) error {
	pod, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	containers, _, _ := unstructured.NestedSlice(pod, "containers")
	var args []string
	for _, c := range containers {
		if m, _ := c.(map[string]any); m["name"] == "memcached" {
			as, _, _ := unstructured.NestedStringSlice(m, "args")
			args = as
		}
	}
	if !slices.Contains(args, "--max-item-size=4m") {
		return errors.Errorf("memcached args %v, want --max-item-size=4m", args)
	}
	if sel, _, _ := unstructured.NestedStringMap(pod, "nodeSelector"); sel["type"] != "kwok" {
		return errors.Errorf("nodeSelector %v, want type=kwok", sel)
	}
	tols, _, _ := unstructured.NestedSlice(pod, "tolerations")
	found := false
	for _, tol := range tols {
		m, _ := tol.(map[string]any)
		found = found || (m["key"] == "dedicated" && m["value"] == "cache" && m["effect"] == "NoSchedule")
	}
	if !found {
		return errors.Errorf("tolerations %v, want dedicated=cache:NoSchedule", tols)
	}
	if got, _, _ := unstructured.NestedString(pod, "priorityClassName"); got != pc {
		return errors.Errorf("priorityClassName %q, want %q", got, pc)
	}
	return nil
}
