//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/availability"
)

// An application team applies the example claim (size 3) and gets a Memcached that reports
// itself Available, with its endpoint in status and in its connection Secret, and columns
// that `kubectl get memcached` prints.
func TestClaimBecomesAvailable(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "team-a")
	claim := exampleObject(t, "claim.yaml", ns)
	name := claim.GetName()
	apply(t, claim)

	m := waitAvailable(t, claimGVK, ns, name, 3)
	t.Logf("claim %s/%s: %s", ns, name, m)

	t.Run("connection secret holds endpoint, host and port", func(t *testing.T) {
		secret, _, _ := unstructured.NestedString(claim.Object, "spec", "writeConnectionSecretToRef", "name")
		wantConnectionDetails(t, ns, secret, name)
	})

	t.Run("kubectl get memcached shows size, availability and endpoint", func(t *testing.T) {
		// The condition columns are read again for no longer than a run of Crossplane's echoes
		// of the claim's earlier conditions may last (availability.MaxEcho); any other column
		// must be right at once.
		deadline := time.Now().Add(availability.MaxEcho)
		for {
			echoed, err := wantTable(context.Background(), ns, name)
			if err == nil {
				return
			}
			if !echoed || time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	})

	t.Run("crossplane resource trace shows every composed resource", func(t *testing.T) {
		wantTraced(t, ns, name)
	})

	t.Run("pods run under the restricted Pod Security Standard", func(t *testing.T) {
		pods, err := env.Kube.Typed.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + name})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running != 3 {
			t.Errorf("running pods: got %d, want 3", running)
		}
		// The namespace really enforces it: a pod that asks for nothing is refused.
		bare := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "bare"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "memcached:1.6.39-alpine"}}},
		}
		_, err = env.Kube.Typed.CoreV1().Pods(ns).Create(context.Background(), bare, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
			t.Errorf("a pod without a security context: got %v, want a PodSecurity violation", err)
		}
	})
}

// conditionColumns are the columns of `kubectl get memcached` that show conditions, which
// Crossplane may echo for a moment (availability).
var conditionColumns = []string{"AVAILABLE", "SYNCED", "READY"}

// wantTable checks the table `kubectl get memcached` prints in ns: one row, claim name's,
// with the columns and values a user reads. echoed is true when only condition columns are
// wrong.
func wantTable(ctx context.Context, ns, name string) (echoed bool, err error) {
	table, err := env.Kube.Table(ctx, claimGVK, ns)
	if err != nil {
		return false, err
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	want := []string{"Name", "SIZE", "AVAILABLE", "ENDPOINT", "SYNCED", "READY", "CONNECTION-SECRET", "AGE"}
	if strings.Join(cols, ",") != strings.Join(want, ",") {
		return false, errors.Errorf("columns: got %v, want %v", cols, want)
	}
	if len(table.Rows) != 1 {
		return false, errors.Errorf("rows: got %d, want 1", len(table.Rows))
	}
	row := map[string]string{}
	for i, c := range cols {
		row[c] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	values := map[string]string{
		"Name": name, "SIZE": "3", "AVAILABLE": "True", "ENDPOINT": name + "." + ns + ".svc.cluster.local:11211",
		"SYNCED": "True", "READY": "True", "CONNECTION-SECRET": name + "-memcached",
	}
	var wrong []string
	echoed = true
	for _, col := range want[:len(want)-1] { // AGE changes.
		if v := values[col]; row[col] != v {
			wrong = append(wrong, fmt.Sprintf("column %s: got %q, want %q", col, row[col], v))
			echoed = echoed && slices.Contains(conditionColumns, col)
		}
	}
	if len(wrong) > 0 {
		return echoed, errors.New(strings.Join(wrong, "; "))
	}
	return false, nil
}

// A claim named with 60 characters — near the 63 of a DNS label, past what a generated
// XR name keeps — composes objects under its own name and becomes Available.
func TestSixtyCharacterName(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "long")
	name := dnsLabel("orders-cache-for-the-checkout-service-in-eu-west-", 60)
	apply(t, newClaim(ns, name, 1))

	m := waitAvailable(t, claimGVK, ns, name, 1)
	t.Logf("claim %s/%s: %s", ns, name, m)
	if !exists(t, deploymentGVK, ns, name) || !exists(t, serviceGVK, ns, name) {
		t.Errorf("want a Deployment and a Service named %q (%d characters) in %s", name, len(name), ns)
	}
	wantConnectionDetails(t, ns, name+"-memcached", name)
}

// traceNode is one resource of `crossplane resource trace -o json`'s tree.
type traceNode struct {
	Object   unstructured.Unstructured `json:"object"`
	Children []traceNode               `json:"children"`
}

// wantTraced runs `crossplane resource trace mc/<name> -n <ns> -o json` with the pinned CLI,
// as docs/operations.md tells an operator to, and checks that its tree holds the claim, its
// XR and every resource the XR composed (spec.resourceRefs), so that what an operator follows
// down is all there is.
func wantTraced(t *testing.T, ns, name string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.BinDir, "crossplane"), "resource", "trace", "mc/"+name, "-n", ns, "-o", "json") //nolint:gosec // The suite's own CLI.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.ControlPlane.KubeconfigPath(), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crossplane resource trace mc/%s -n %s: %v\n%s", name, ns, err, out)
	}
	var root traceNode
	if err := json.Unmarshal(out, &root); err != nil {
		t.Fatalf("crossplane resource trace -o json: %v\n%s", err, out)
	}
	var traced []string
	var walk func(n traceNode)
	walk = func(n traceNode) {
		traced = append(traced, n.Object.GetKind()+" "+n.Object.GetNamespace()+"/"+n.Object.GetName())
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)

	xr, _, _ := unstructured.NestedString(get(t, claimGVK, ns, name).Object, "spec", "resourceRef", "name")
	want := []string{"Memcached " + ns + "/" + name, "XMemcached /" + xr}
	refs, _, _ := unstructured.NestedSlice(get(t, xrGVK, "", xr).Object, "spec", "resourceRefs")
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		refNS, _ := ref["namespace"].(string)
		if refNS == "" {
			refNS = ns
		}
		want = append(want, fmt.Sprintf("%s %s/%s", ref["kind"], refNS, ref["name"]))
	}
	for _, w := range want {
		if !slices.Contains(traced, w) {
			t.Errorf("crossplane resource trace does not show %s; it shows %v", w, traced)
		}
	}
	if len(refs) < 4 {
		t.Errorf("the XR composed %d resources; the example claim composes at least a Deployment, a Service, a PodDisruptionBudget and a connection Secret", len(refs))
	}
}
