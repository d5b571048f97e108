package example_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// tenantRBAC reads tenant-rbac.yaml's ClusterRole and RoleBinding.
func tenantRBAC(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.RoleBinding) {
	t.Helper()
	b, err := os.ReadFile("tenant-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	var binding *rbacv1.RoleBinding
	for _, u := range splitYAML(t, b) {
		switch u.GetKind() {
		case "ClusterRole":
			role = &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, role, true); err != nil {
				t.Fatalf("tenant-rbac.yaml: ClusterRole: %v", err)
			}
		case "RoleBinding":
			binding = &rbacv1.RoleBinding{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, binding, true); err != nil {
				t.Fatalf("tenant-rbac.yaml: RoleBinding: %v", err)
			}
		default:
			t.Errorf("tenant-rbac.yaml: unexpected %s %s", u.GetKind(), u.GetName())
		}
	}
	if role == nil || binding == nil {
		t.Fatalf("tenant-rbac.yaml: want a ClusterRole and a RoleBinding, got %v and %v", role, binding)
	}
	return role, binding
}

// allows says whether rules grant verb on group/resource, as the RBAC authorizer reads them.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}

// TestTenantRBAC keeps the tenant's role to what docs/security.md says a tenant may do: write
// the four kinds they own, read what explains them, and never write what Crossplane or the
// provider writes or anything cluster-wide.
func TestTenantRBAC(t *testing.T) {
	role, binding := tenantRBAC(t)
	type args struct {
		group, resource, verb string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   bool
	}{
		"CreateClaim":                {"A tenant creates Memcached claims.", args{"cache.example.com", "memcacheds", "create"}, true},
		"ScaleClaim":                 {"kubectl scale and autoscalers resize a claim.", args{"cache.example.com", "memcacheds/scale", "update"}, true},
		"CreateNamespacedXR":         {"A tenant creates namespaced XRs.", args{"namespaced.cache.example.com", "memcacheds", "create"}, true},
		"CreateInstance":             {"A tenant creates Instances.", args{"memcached.example.com", "instances", "create"}, true},
		"CreateProviderConfig":       {"A tenant creates namespaced ProviderConfigs.", args{"memcached.example.com", "providerconfigs", "create"}, true},
		"CreateSecret":               {"A tenant creates the TLS and kubeconfig Secrets its objects name.", args{"", "secrets", "create"}, true},
		"ReadPodLogs":                {"A tenant reads its pods' logs to debug.", args{"", "pods/log", "get"}, true},
		"ReadDeployments":            {"A tenant reads what Crossplane composes.", args{"apps", "deployments", "list"}, true},
		"NoClaimStatus":              {"Status is Crossplane's.", args{"cache.example.com", "memcacheds/status", "update"}, false},
		"NoInstanceStatus":           {"Status is the provider's.", args{"memcached.example.com", "instances/status", "patch"}, false},
		"NoClusterProviderConfig":    {"ClusterProviderConfigs are the platform's.", args{"memcached.example.com", "clusterproviderconfigs", "create"}, false},
		"NoProviderConfigUsageWrite": {"Usages are the provider's record: deleting one unblocks a config's deletion.", args{"memcached.example.com", "providerconfigusages", "delete"}, false},
		"NoClusterXR":                {"Cluster-scoped XRs are made by Crossplane from claims.", args{"cache.example.com", "xmemcacheds", "create"}, false},
		"NoComposition":              {"Compositions carry the platform's policy.", args{"apiextensions.crossplane.io", "compositions", "update"}, false},
		"NoCompositionRevision":      {"A revision is what a pinned claim would run.", args{"apiextensions.crossplane.io", "compositionrevisions", "create"}, false},
		"NoDeploymentWrite":          {"Composed Deployments are Crossplane's.", args{"apps", "deployments", "update"}, false},
		"NoNetworkPolicyWrite":       {"The NetworkPolicy is the function's.", args{"networking.k8s.io", "networkpolicies", "delete"}, false},
		"NoPodCreate":                {"Pods come from the composed Deployment only.", args{"", "pods", "create"}, false},
		"NoPodExec":                  {"No shell in a pod holding the auth file.", args{"", "pods/exec", "create"}, false},
		"NoRoleBinding":              {"A tenant cannot widen its own rights.", args{"rbac.authorization.k8s.io", "rolebindings", "create"}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := allows(role.Rules, tc.args.group, tc.args.resource, tc.args.verb); got != tc.want {
				t.Errorf("%s\nallows(%q, %q, %q): want %t, got %t", tc.reason, tc.args.group, tc.args.resource, tc.args.verb, tc.want, got)
			}
		})
	}

	t.Run("BindingNamesTheRoleInANamespace", func(t *testing.T) {
		want := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
		if diff := cmp.Diff(want, binding.RoleRef); diff != "" {
			t.Errorf("the RoleBinding's roleRef: -want, +got:\n%s", diff)
		}
		if binding.Namespace == "" {
			t.Error("the RoleBinding has no namespace: the role would apply nowhere, or a ClusterRoleBinding everywhere")
		}
	})
	t.Run("NoAggregation", func(t *testing.T) {
		if role.AggregationRule != nil || len(role.Labels) > 0 {
			t.Errorf("the tenant's ClusterRole aggregates or is aggregated (labels %v): its rules would change with other roles'", role.Labels)
		}
	})
}

// TestTenantRBACNamesRealKinds keeps every resource of this project's API groups that the
// tenant's role names equal to a plural the XRDs and the provider's CRDs define: a renamed kind
// would otherwise leave tenants silently without the right.
func TestTenantRBACNamesRealKinds(t *testing.T) {
	role, _ := tenantRBAC(t)
	defined := map[string]bool{}
	for _, f := range []string{"definition.yaml", filepath.Join("namespaced", "definition.yaml")} {
		xrd := readOne(t, f)
		group, _, _ := unstructured.NestedString(xrd.Object, "spec", "group")
		for _, names := range []string{"names", "claimNames"} {
			if plural, ok, _ := unstructured.NestedString(xrd.Object, "spec", names, "plural"); ok {
				defined[group+"/"+plural] = true
			}
		}
	}
	crds, err := filepath.Glob(filepath.Join("..", "package-provider", "crds", "*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no provider CRDs: %v", err)
	}
	for _, f := range crds {
		crd := readOne(t, f)
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		defined[group+"/"+plural] = true
	}
	ours := map[string]bool{"cache.example.com": true, "namespaced.cache.example.com": true, "memcached.example.com": true}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			if !ours[g] {
				continue
			}
			for _, res := range r.Resources {
				base, _, _ := strings.Cut(res, "/")
				if !defined[g+"/"+base] {
					t.Errorf("tenant-rbac.yaml names %s/%s, which no XRD or provider CRD defines (defined: %v)", g, res, defined)
				}
			}
		}
	}
}
