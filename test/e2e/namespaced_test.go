//go:build e2e

package e2e

import "testing"

// The v2 namespaced XR from example/namespaced (no claim) composes into its own namespace,
// and, having no connection secret of its own, gets a Secret <name>-connection.
func TestNamespacedXR(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t, "team-b")
	xr := exampleObject(t, "namespaced/xr.yaml", ns)
	name := xr.GetName()
	apply(t, xr)

	m := waitAvailable(t, namespacedGVK, ns, name, 2)
	t.Logf("XR %s/%s: %s", ns, name, m)
	for _, gvk := range []struct {
		kind string
		ok   bool
	}{
		{"Deployment", exists(t, deploymentGVK, ns, name)},
		{"Service", exists(t, serviceGVK, ns, name)},
		{"PodDisruptionBudget", exists(t, pdbGVK, ns, name)},
	} {
		if !gvk.ok {
			t.Errorf("want a %s %s/%s", gvk.kind, ns, name)
		}
	}
	wantConnectionDetails(t, ns, name+"-connection", name)
}
