package example_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
)

// tenantPolicy reads tenant-policy.yaml: the policy and its binding, and no parameters,
// whose absence could otherwise refuse every Secret write in the cluster.
func tenantPolicy(t *testing.T) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	params, policy, binding := admissionPolicy(t, "tenant-policy.yaml")
	if params != nil {
		t.Fatal("tenant-policy.yaml: want no ConfigMap: the policy takes no parameters")
	}
	return policy, binding
}

// hpa is a HorizontalPodAutoscaler of team-a scaling target (apiVersion, kind, name) to 50.
func hpa(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"scaleTargetRef": map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name},
		"minReplicas":    int64(50),
		"maxReplicas":    int64(50),
	}}}
	u.SetAPIVersion("autoscaling/v2")
	u.SetKind("HorizontalPodAutoscaler")
	u.SetName("sessions")
	return u
}

// secret is a Secret of team-a of type typ, annotated for the ServiceAccount admin.
func secret(typ string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"type": typ}}
	if typ == "" {
		delete(u.Object, "type")
	}
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	u.SetName("token")
	u.SetAnnotations(map[string]string{"kubernetes.io/service-account.name": "admin"})
	return u
}

// TestTenantPolicy evaluates tenant-policy.yaml as the API server does, on autoscalers and
// Secrets written by a tenant, by Crossplane, by the platform team and by the cluster's
// components: a tenant cannot point an autoscaler at what Crossplane composes, nor have the
// token controller mint it a ServiceAccount's token; autoscaling a claim, TLS and Opaque
// Secrets and every exempt identity's writes are admitted.
func TestTenantPolicy(t *testing.T) {
	policy, binding := tenantPolicy(t)
	if binding.Spec.PolicyName != policy.Name {
		t.Fatalf("the binding names policy %q, want %q", binding.Spec.PolicyName, policy.Name)
	}
	v := compile(policy)

	const tokenType = "kubernetes.io/service-account-token"
	type args struct {
		user     string
		groups   []string
		old, new *unstructured.Unstructured // old nil on create
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string // a part of the refusal, empty when admitted
	}{
		"TenantAutoscalesComposedDeployment": {
			reason: "The HPA controller would scale the Deployment past policy.maxSize, and keep it there while the claim is invalid.",
			args:   args{user: tenant, new: hpa("apps/v1", "Deployment", "sessions")},
			want:   "spec.scaleTargetRef: apps/v1 Deployment sessions is not a Memcached",
		},
		"TenantRetargetsToDeployment": {
			reason: "An update moving an admitted autoscaler onto the Deployment is refused alike.",
			args:   args{user: tenant, old: hpa("cache.example.com/v1alpha1", "Memcached", "sessions"), new: hpa("apps/v1", "Deployment", "sessions")},
			want:   "spec.scaleTargetRef: apps/v1 Deployment sessions is not a Memcached",
		},
		"TenantAutoscalesReplicaSet": {
			reason: "The composed ReplicaSet has a scale subresource too.",
			args:   args{user: tenant, new: hpa("apps/v1", "ReplicaSet", "sessions-7d4b9")},
			want:   "spec.scaleTargetRef: apps/v1 ReplicaSet sessions-7d4b9 is not a Memcached",
		},
		"TenantAutoscalesClusterXR": {
			reason: "The claim's cluster-scoped XR is Crossplane's, not a tenant's target.",
			args:   args{user: tenant, new: hpa("cache.example.com/v1alpha1", "XMemcached", "sessions-x7k2p")},
			want:   "is not a Memcached",
		},
		"TenantAutoscalesLookalikeGroup": {
			reason: "A group that merely starts like ours is another API.",
			args:   args{user: tenant, new: hpa("cache.example.com.evil.io/v1", "Memcached", "sessions")},
			want:   "is not a Memcached",
		},
		"TenantAutoscalesWithoutAPIVersion": {
			reason: "A target without apiVersion names no Memcached.",
			args:   args{user: tenant, new: hpa("", "Memcached", "sessions")},
			want:   "is not a Memcached",
		},
		"TenantAutoscalesClaim": {
			reason: "The product autoscales claims through their scale subresource, bounded by the policy.",
			args:   args{user: tenant, new: hpa("cache.example.com/v1alpha1", "Memcached", "sessions")},
		},
		"TenantUpdatesClaimAutoscaler": {
			reason: "Changing the bounds of an autoscaler on a claim is admitted.",
			args:   args{user: tenant, old: hpa("cache.example.com/v1alpha1", "Memcached", "sessions"), new: hpa("cache.example.com/v1alpha1", "Memcached", "sessions")},
		},
		"TenantAutoscalesNamespacedXR": {
			reason: "A namespaced XR scales through its scale subresource like a claim.",
			args:   args{user: tenant, new: hpa("namespaced.cache.example.com/v1alpha1", "Memcached", "cache")},
		},
		"PlatformAutoscalesDeployment": {
			reason: "The platform team may autoscale anything, on purpose.",
			args:   args{user: "bob", groups: []string{platformTeam, user.AllAuthenticated}, new: hpa("apps/v1", "Deployment", "sessions")},
		},
		"UserNamedLikeThePlatformGroup": {
			reason: "The exemption is by group: a user named platform-team is a tenant.",
			args:   args{user: platformTeam, groups: []string{user.AllAuthenticated}, new: hpa("apps/v1", "Deployment", "sessions")},
			want:   "is not a Memcached",
		},
		"TenantCreatesTokenSecret": {
			reason: "The token controller would fill in the ServiceAccount's token for the tenant to read.",
			args:   args{user: tenant, groups: []string{"team-a", user.AllAuthenticated}, new: secret(tokenType)},
			want:   "type: only the platform team may write a Secret of type kubernetes.io/service-account-token",
		},
		"TenantUpdatesTokenSecret": {
			reason: "Re-pointing an existing token Secret at another ServiceAccount (and emptying its token) is refused alike.",
			args:   args{user: tenant, old: secret(tokenType), new: secret(tokenType)},
			want:   "type: only the platform team",
		},
		"TenantServiceAccountCreatesTokenSecret": {
			reason: "A tenant's ServiceAccount is a tenant, whatever its name.",
			args:   args{user: "system:serviceaccount:team-a:crossplane", groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a"}, new: secret(tokenType)},
			want:   "type: only the platform team",
		},
		"TenantCreatesTLSSecret": {
			reason: "A claim's TLS pair is the tenant's to write.",
			args:   args{user: tenant, new: secret("kubernetes.io/tls")},
		},
		"TenantCreatesOpaqueSecret": {
			reason: "A ProviderConfig's kubeconfig is an Opaque Secret; the annotation alone mints nothing.",
			args:   args{user: tenant, new: secret("Opaque")},
		},
		"TenantCreatesSecretWithoutType": {
			reason: "A Secret without type is Opaque.",
			args:   args{user: tenant, new: secret("")},
		},
		"CrossplaneWritesConnectionSecret": {
			reason: "Crossplane's connection Secrets are never refused.",
			args:   args{user: crossplaneSA, groups: []string{"system:serviceaccounts", "system:serviceaccounts:crossplane-system"}, old: secret("connection.crossplane.io/v1alpha1"), new: secret("connection.crossplane.io/v1alpha1")},
		},
		"CrossplaneWritesTokenSecret": {
			reason: "Crossplane is exempt by name, whatever it writes.",
			args:   args{user: crossplaneSA, new: secret(tokenType)},
		},
		"PlatformCreatesTokenSecret": {
			reason: "The platform team may hand a tenant a token on purpose.",
			args:   args{user: "bob", groups: []string{platformTeam}, new: secret(tokenType)},
		},
		"TokenControllerFillsIn": {
			reason: "kube-controller-manager's token controller writes the token into the Secret.",
			args:   args{user: "system:kube-controller-manager", groups: []string{user.AllAuthenticated}, old: secret(tokenType), new: secret(tokenType)},
		},
		"LegacyTokenCleanerLabels": {
			reason: "kube-system's controllers label unused legacy tokens.",
			args:   args{user: "system:serviceaccount:kube-system:legacy-service-account-token-cleaner", groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}, old: secret(tokenType), new: secret(tokenType)},
		},
		"APIServerRecordsUse": {
			reason: "kube-apiserver records a legacy token's last use, as system:apiserver in system:masters.",
			args:   args{user: user.APIServerUser, groups: []string{user.SystemPrivilegedGroup}, old: secret(tokenType), new: secret(tokenType)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := admit(t, v, nil, tc.args.user, tc.args.groups, tc.args.old, tc.args.new)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("%s\nwant admitted, got refused: %s", tc.reason, got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("%s\nwant refused with %q, got %q", tc.reason, tc.want, got)
			}
		})
	}

	// A binding whose parameters are missing refuses every request it matches, before any
	// condition: with every Secret write in the cluster matched, Crossplane's and kube-system's
	// would be refused whenever a ConfigMap was missing.
	t.Run("NoParameters", func(t *testing.T) {
		if policy.Spec.ParamKind != nil || binding.Spec.ParamRef != nil {
			t.Errorf("the policy takes parameters (%+v, %+v): a missing ConfigMap would refuse every Secret write in the cluster", policy.Spec.ParamKind, binding.Spec.ParamRef)
		}
	})
	// Every namespace, kube-system's included: the exemptions are by identity, not place.
	t.Run("BindingEverywhere", func(t *testing.T) {
		if binding.Spec.MatchResources != nil {
			t.Errorf("the binding limits where it applies (%+v): a tenant namespace left out keeps both holes", binding.Spec.MatchResources)
		}
		if len(binding.Spec.ValidationActions) != 1 || binding.Spec.ValidationActions[0] != admissionregistrationv1.Deny {
			t.Errorf("the binding's validationActions %v, want [Deny]", binding.Spec.ValidationActions)
		}
	})
}

// admit runs v on a write of newObj (over oldObj, nil on create) in team-a by username in
// groups, with parameters params (nil when the policy takes none), and returns the refusals'
// messages, empty when admitted. An evaluation error fails t: with failurePolicy Fail it would
// refuse the write whoever made it.
func admit(t *testing.T, v validating.Validator, params runtime.Object, username string, groups []string, oldObj, newObj *unstructured.Unstructured) string {
	t.Helper()
	gvk := newObj.GroupVersionKind()
	resource := map[string]string{"HorizontalPodAutoscaler": "horizontalpodautoscalers", "Secret": "secrets"}[gvk.Kind]
	gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource}
	newObj.SetNamespace("team-a")
	op := admission.Create
	var old runtime.Object
	if oldObj != nil {
		oldObj.SetNamespace("team-a")
		op, old = admission.Update, oldObj
	}
	attrs := admission.NewAttributesRecord(newObj, old, gvk, "team-a", newObj.GetName(), gvr, "", op, nil, false,
		&user.DefaultInfo{Name: username, Groups: groups})
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: newObj, VersionedOldObject: old}
	ns := &corev1.Namespace{}
	ns.Name = "team-a"
	res := v.Validate(context.Background(), gvr, va, params, ns, celconfig.RuntimeCELCostBudget, nil)
	var denied []string
	for _, d := range res.Decisions {
		if d.Evaluation == validating.EvalError {
			t.Fatalf("the policy failed to evaluate: %s", d.Message)
		}
		if d.Action == validating.ActionDeny {
			denied = append(denied, d.Message)
		}
	}
	return strings.Join(denied, "; ")
}
