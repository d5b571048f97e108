package example_test

import (
	"context"
	"os"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	celplugin "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

// admissionPolicy reads an example file of a ValidatingAdmissionPolicy: the policy, its
// binding, and the ConfigMap of its parameters when the file has one (nil otherwise). Any
// other kind in the file fails the test, and so does a policy or binding missing.
func admissionPolicy(t *testing.T, file string) (*corev1.ConfigMap, *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var (
		params  *corev1.ConfigMap
		policy  *admissionregistrationv1.ValidatingAdmissionPolicy
		binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	)
	for _, u := range splitYAML(t, b) {
		var into any
		switch u.GetKind() {
		case "ConfigMap":
			params = &corev1.ConfigMap{}
			into = params
		case "ValidatingAdmissionPolicy":
			policy = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			into = policy
		case "ValidatingAdmissionPolicyBinding":
			binding = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			into = binding
		default:
			t.Fatalf("%s: unexpected %s %s", file, u.GetKind(), u.GetName())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
			t.Fatalf("%s: %s: %v", file, u.GetKind(), err)
		}
	}
	if policy == nil || binding == nil {
		t.Fatalf("%s: want a ValidatingAdmissionPolicy and its binding", file)
	}
	return params, policy, binding
}

// compositionPolicy reads composition-policy.yaml, whose policy takes its parameters from the
// ConfigMap beside it.
func compositionPolicy(t *testing.T) (*corev1.ConfigMap, *admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	params, policy, binding := admissionPolicy(t, "composition-policy.yaml")
	if params == nil {
		t.Fatal("composition-policy.yaml: want the ConfigMap of the policy's parameters")
	}
	return params, policy, binding
}

// compile builds the policy's validator as kube-apiserver's ValidatingAdmissionPolicy plugin
// does (k8s.io/apiserver's validating.compilePolicy, which is not exported): the same CEL
// environment, variables, match conditions, validations and message expressions.
func compile(p *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	env, err := celplugin.NewCompositionEnv(celplugin.VariablesTypeName, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		panic(err)
	}
	hasParams := p.Spec.ParamKind != nil
	vars := celplugin.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	msgVars := celplugin.OptionalVariableDeclarations{HasParams: hasParams}
	c := celplugin.NewCompositedCompilerFromTemplate(env)
	named := make([]celplugin.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		named[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(named, vars, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		mc := make([]celplugin.ExpressionAccessor, len(p.Spec.MatchConditions))
		for i := range p.Spec.MatchConditions {
			mc[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(c.CompileCondition(mc, vars, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	validations := make([]celplugin.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]celplugin.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	return validating.NewValidator(c.CompileCondition(validations, vars, environment.StoredExpressions), matcher,
		c.CompileCondition(nil, vars, environment.StoredExpressions), c.CompileCondition(messages, msgVars, environment.StoredExpressions),
		p.Spec.FailurePolicy)
}

// The identities composition-policy.yaml's parameters name, and a tenant's.
const (
	crossplaneSA = "system:serviceaccount:crossplane-system:crossplane"
	platformTeam = "platform-team"
	tenant       = "alice"
)

// TestCompositionPolicy evaluates composition-policy.yaml as the API server does, for claims
// and namespaced XRs written by a tenant, by Crossplane and by the platform team: a tenant
// cannot keep an old CompositionRevision or choose a Composition the platform does not offer;
// Crossplane's own writes and the platform's pins are not refused.
func TestCompositionPolicy(t *testing.T) {
	params, policy, binding := compositionPolicy(t)
	if binding.Spec.PolicyName != policy.Name || binding.Spec.ParamRef == nil || binding.Spec.ParamRef.Name != params.Name ||
		binding.Spec.ParamRef.Namespace != params.Namespace {
		t.Fatalf("the binding names policy %q and parameters %+v, want %q and %s/%s", binding.Spec.PolicyName, binding.Spec.ParamRef, policy.Name, params.Namespace, params.Name)
	}
	v := compile(policy)

	ref := func(name string) map[string]any { return map[string]any{"name": name} }
	sel := map[string]any{"matchLabels": map[string]any{"channel": "old"}}
	const (
		claim = "cache.example.com"
		xr    = "namespaced.cache.example.com"
		def   = "xmemcacheds.cache.example.com"
		rev1  = "xmemcacheds.cache.example.com-aaaaaaa"
		rev2  = "xmemcacheds.cache.example.com-bbbbbbb"
	)
	type args struct {
		group    string
		user     string
		groups   []string
		old, new map[string]any // the Crossplane fields: spec's of a claim, spec.crossplane's of an XR; old nil on create
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string // a part of the refusal, empty when admitted
	}{
		"TenantCreatesPlainClaim": {
			reason: "A claim that chooses nothing is admitted.",
			args:   args{group: claim, user: tenant, new: map[string]any{}},
		},
		"TenantCreatesAutomatic": {
			reason: "compositionUpdatePolicy: Automatic is what Crossplane does anyway.",
			args:   args{group: claim, user: tenant, new: map[string]any{"compositionUpdatePolicy": "Automatic"}},
		},
		"TenantCreatesManual": {
			reason: "Manual keeps the revision current at creation forever.",
			args:   args{group: claim, user: tenant, new: map[string]any{"compositionUpdatePolicy": "Manual"}},
			want:   "spec.compositionUpdatePolicy: only the platform team may set Manual",
		},
		"TenantCreatesWithRevisionRef": {
			reason: "A revision ref names an old revision, with its old policy.",
			args:   args{group: claim, user: tenant, new: map[string]any{"compositionUpdatePolicy": "Manual", "compositionRevisionRef": ref(rev1)}},
			want:   "spec.compositionRevisionRef: only Crossplane and the platform team may choose a CompositionRevision",
		},
		"TenantCreatesWithRevisionSelector": {
			reason: "A revision selector chooses revisions by label.",
			args:   args{group: claim, user: tenant, new: map[string]any{"compositionRevisionSelector": sel}},
			want:   "spec.compositionRevisionSelector: only the platform team",
		},
		"TenantNamesAnotherComposition": {
			reason: "A Composition the platform does not offer may carry any Input.",
			args:   args{group: claim, user: tenant, new: map[string]any{"compositionRef": ref("unvetted")}},
			want:   "spec.compositionRef: unvetted is not one of the platform's Compositions (xmemcacheds.cache.example.com, memcacheds.namespaced.cache.example.com)",
		},
		"TenantNamesThePlatformsComposition": {
			reason: "Naming the default Composition chooses nothing.",
			args:   args{group: claim, user: tenant, new: map[string]any{"compositionRef": ref(def)}},
		},
		"TenantSelectsCompositions": {
			reason: "A selector may match a Composition the platform did not mean for claims.",
			args:   args{group: claim, user: tenant, new: map[string]any{"compositionSelector": sel}},
			want:   "spec.compositionSelector: only the platform team may select Compositions",
		},
		"TenantUpdatesKeepingCrossplanesRefs": {
			reason: "An update that leaves what Crossplane wrote (a resize, say) is admitted.",
			args: args{group: claim, user: tenant,
				old: map[string]any{"compositionRef": ref(def), "compositionRevisionRef": ref(rev1), "compositionUpdatePolicy": "Automatic"},
				new: map[string]any{"compositionRef": ref(def), "compositionRevisionRef": ref(rev1), "compositionUpdatePolicy": "Automatic"}},
		},
		"TenantSwitchesToManual": {
			reason: "Manual set later pins the revision current then.",
			args: args{group: claim, user: tenant,
				old: map[string]any{"compositionRef": ref(def), "compositionRevisionRef": ref(rev2)},
				new: map[string]any{"compositionRef": ref(def), "compositionRevisionRef": ref(rev2), "compositionUpdatePolicy": "Manual"}},
			want: "spec.compositionUpdatePolicy",
		},
		"TenantChangesRevisionRef": {
			reason: "Changing the ref Crossplane wrote to an older revision is refused.",
			args: args{group: claim, user: tenant,
				old: map[string]any{"compositionRevisionRef": ref(rev2)}, new: map[string]any{"compositionRevisionRef": ref(rev1)}},
			want: "spec.compositionRevisionRef",
		},
		"TenantRemovesRevisionRef": {
			reason: "Removing the ref hands the choice back to Crossplane.",
			args:   args{group: claim, user: tenant, old: map[string]any{"compositionRevisionRef": ref(rev1)}, new: map[string]any{}},
		},
		"TenantKeepsThePlatformsPin": {
			reason: "A claim the platform pinned stays editable by its tenant.",
			args: args{group: claim, user: tenant,
				old: map[string]any{"compositionUpdatePolicy": "Manual", "compositionRevisionRef": ref(rev1), "compositionRef": ref("special")},
				new: map[string]any{"compositionUpdatePolicy": "Manual", "compositionRevisionRef": ref(rev1), "compositionRef": ref("special")}},
		},
		"TenantPinsANamespacedXR": {
			reason: "A v2 XR keeps these fields under spec.crossplane.",
			args:   args{group: xr, user: tenant, new: map[string]any{"compositionUpdatePolicy": "Manual"}},
			want:   "spec.crossplane.compositionUpdatePolicy",
		},
		"TenantNamesARevisionOnANamespacedXR": {
			reason: "The revision ref of a v2 XR is refused alike.",
			args:   args{group: xr, user: tenant, old: map[string]any{"compositionRevisionRef": ref(rev2)}, new: map[string]any{"compositionRevisionRef": ref(rev1)}},
			want:   "spec.crossplane.compositionRevisionRef",
		},
		"TenantCreatesPlainNamespacedXR": {
			reason: "A v2 XR that chooses nothing is admitted.",
			args:   args{group: xr, user: tenant, new: map[string]any{}},
		},
		"CrossplaneWritesItsRefs": {
			reason: "Crossplane sets the Composition and revision it selected, on the XR and the claim.",
			args: args{group: claim, user: crossplaneSA, groups: []string{"system:serviceaccounts", "system:serviceaccounts:crossplane-system"},
				old: map[string]any{}, new: map[string]any{"compositionRef": ref(def), "compositionRevisionRef": ref(rev1)}},
		},
		"CrossplaneMovesToTheNewRevision": {
			reason: "Under Automatic Crossplane moves the ref to each new revision.",
			args: args{group: xr, user: crossplaneSA, groups: []string{"system:serviceaccounts"},
				old: map[string]any{"compositionRevisionRef": ref(rev1)}, new: map[string]any{"compositionRevisionRef": ref(rev2)}},
		},
		"PlatformTeamPins": {
			reason: "The platform team may pin a Memcached on purpose.",
			args: args{group: claim, user: "bob", groups: []string{platformTeam, user.AllAuthenticated},
				old: map[string]any{"compositionRevisionRef": ref(rev2)}, new: map[string]any{"compositionUpdatePolicy": "Manual", "compositionRevisionRef": ref(rev1)}},
		},
		"UserNamedLikeThePlatformGroup": {
			reason: "The exemption is by group: a user named platform-team is a tenant.",
			args:   args{group: claim, user: platformTeam, groups: []string{user.AllAuthenticated}, new: map[string]any{"compositionUpdatePolicy": "Manual"}},
			want:   "spec.compositionUpdatePolicy",
		},
		"ServiceAccountNamedCrossplaneElsewhere": {
			reason: "A tenant's own ServiceAccount named crossplane is not Crossplane.",
			args:   args{group: claim, user: "system:serviceaccount:team-a:crossplane", groups: []string{"system:serviceaccounts"}, new: map[string]any{"compositionRevisionRef": ref(rev1)}},
			want:   "spec.compositionRevisionRef",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := evaluate(t, v, params, tc.args.group, tc.args.user, tc.args.groups, tc.args.old, tc.args.new)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("%s\nwant admitted, got refused: %s", tc.reason, got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("%s\nwant refused with %q, got %q", tc.reason, tc.want, got)
			}
		})
	}

	t.Run("WithoutParameters", func(t *testing.T) {
		if got := evaluate(t, v, &corev1.ConfigMap{}, claim, crossplaneSA, nil, nil, map[string]any{"compositionRevisionRef": ref(rev1)}); got == "" {
			t.Error("with empty parameters Crossplane's own write was admitted: want every choice refused, the exemptions being empty")
		}
	})
}

// evaluate runs v on a Memcached of group (a claim or a namespaced XR) written by username in
// groups, with the Crossplane fields old (nil on create) and new, and returns the refusals'
// messages, empty when admitted. An evaluation error fails t: with failurePolicy Fail it would
// refuse every write, Crossplane's too.
func evaluate(t *testing.T, v validating.Validator, params *corev1.ConfigMap, group, username string, groups []string, old, new map[string]any) string {
	t.Helper()
	obj := func(fields map[string]any) *unstructured.Unstructured {
		spec := map[string]any{"size": int64(3)}
		if group == "cache.example.com" {
			for k, v := range fields {
				spec[k] = v
			}
		} else {
			spec["crossplane"] = fields
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion(group + "/v1alpha1")
		u.SetKind("Memcached")
		u.SetNamespace("team-a")
		u.SetName("sessions")
		return u
	}
	gvk := schema.GroupVersionKind{Group: group, Version: "v1alpha1", Kind: "Memcached"}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "memcacheds"}
	op := admission.Create
	var oldObj runtime.Object
	if old != nil {
		op, oldObj = admission.Update, obj(old)
	}
	newObj := obj(new)
	attrs := admission.NewAttributesRecord(newObj, oldObj, gvk, "team-a", "sessions", gvr, "", op, nil, false,
		&user.DefaultInfo{Name: username, Groups: groups})
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: newObj, VersionedOldObject: oldObj}
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
