package instance

import (
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// A managedKind is one object the provider manages in a target cluster for an Instance.
// managedKinds lists them all, and everything else derives from that list: the watches of
// each target namespace (WatchedObjects), what Observe reads, judges drift on and claims,
// what Create and Update apply (in the list's order) and prune, and what Delete deletes.
type managedKind struct {
	// role names it in what Observe found: the kind, or what a Secret is for.
	role string
	// kind is its Kubernetes kind, for messages.
	kind string
	// object returns an empty object of the kind, to read into.
	object func() client.Object
	// name is its name, from the Memcached's base name.
	name func(base string) string
	// needed reports whether m has one.
	needed func(m render.Memcached) bool
	// render renders it for m.
	render func(m render.Memcached) render.Object
	// diff is how the fields the Instance owns in live differ from desired; empty when
	// they do not.
	diff func(desired render.Object, live client.Object, cr *v1alpha1.Instance) (string, error)
	// adoptable kinds may be taken over (spec.adoptionPolicy: Adopt). A Secret never is:
	// whoever made it knows what it holds, so credentials or a TLS pair someone else wrote
	// under the Instance's names would never be the Instance's own.
	adoptable bool
	// legacy kinds may have been made by an earlier provider, under LegacyFieldManager
	// and without the ownership label. Earlier providers made no Secret and no
	// NetworkPolicy: an unlabelled one is someone else's, whatever its managed fields say
	// (anyone who may write an object may write those).
	legacy bool
}

// Roles of the managed kinds.
const (
	roleDeployment    = "Deployment"
	roleService       = "Service"
	rolePDB           = "PodDisruptionBudget"
	roleNetworkPolicy = "NetworkPolicy"
	roleAuthSecret    = "AuthSecret"
	roleTLSSecret     = "TLSSecret"
)

// managedKinds are the kinds the provider manages, in apply order: the Secrets the pods mount
// before the Deployment that mounts them.
var managedKinds = []managedKind{
	{
		role: roleAuthSecret, kind: "Secret",
		object: func() client.Object { return &corev1.Secret{} },
		name:   func(base string) string { return render.AuthSecretName(render.Memcached{Name: base}) },
		needed: func(m render.Memcached) bool { return m.Auth != nil },
		render: func(m render.Memcached) render.Object { return render.AuthSecret(m) },
		diff:   secretDiff,
	},
	{
		role: roleTLSSecret, kind: "Secret",
		object: func() client.Object { return &corev1.Secret{} },
		name:   func(base string) string { return render.TLSSecretName(render.Memcached{Name: base}) },
		needed: func(m render.Memcached) bool { return m.TLS != nil },
		render: func(m render.Memcached) render.Object { return render.TLSSecret(m) },
		diff:   secretDiff,
	},
	{
		role: roleDeployment, kind: "Deployment", adoptable: true, legacy: true,
		object: func() client.Object { return &appsv1.Deployment{} },
		name:   same,
		needed: always,
		render: func(m render.Memcached) render.Object { return render.Deployment(m) },
		diff:   diffOwned[appsv1ac.DeploymentApplyConfiguration](cmpopts.IgnoreFields(appsv1ac.DeploymentApplyConfiguration{}, "Status")),
	},
	{
		role: roleService, kind: "Service", adoptable: true, legacy: true,
		object: func() client.Object { return &corev1.Service{} },
		name:   same,
		needed: always,
		render: func(m render.Memcached) render.Object { return render.Service(m) },
		diff:   diffOwned[corev1ac.ServiceApplyConfiguration](cmpopts.IgnoreFields(corev1ac.ServiceApplyConfiguration{}, "Status")),
	},
	{
		role: rolePDB, kind: "PodDisruptionBudget", adoptable: true, legacy: true,
		object: func() client.Object { return &policyv1.PodDisruptionBudget{} },
		name:   same,
		needed: render.NeedsPodDisruptionBudget,
		render: func(m render.Memcached) render.Object { return render.PodDisruptionBudget(m) },
		diff:   diffOwned[policyv1ac.PodDisruptionBudgetApplyConfiguration](cmpopts.IgnoreFields(policyv1ac.PodDisruptionBudgetApplyConfiguration{}, "Status")),
	},
	{
		role: roleNetworkPolicy, kind: "NetworkPolicy", adoptable: true,
		object: func() client.Object { return &networkingv1.NetworkPolicy{} },
		name:   same,
		needed: func(m render.Memcached) bool { return m.NetworkPolicy != nil },
		render: func(m render.Memcached) render.Object { return render.NetworkPolicy(m) },
		diff:   diffOwned[networkingv1ac.NetworkPolicyApplyConfiguration](),
	},
}

// WatchedObjects are the kinds the provider watches in each target namespace, one of each:
// those it manages (managedKinds).
func WatchedObjects() []client.Object {
	seen := map[string]bool{}
	var out []client.Object
	for _, k := range managedKinds {
		if !seen[k.kind] {
			seen[k.kind] = true
			out = append(out, k.object())
		}
	}
	return out
}

// ownership says whose o, of this kind, is to the Instance whose UID is uid.
func (k managedKind) ownership(o client.Object, uid types.UID) ownership {
	if w := ownershipOf(o, uid); w != legacy || k.legacy {
		return w
	}
	return foreign
}

func same(base string) string { return base }

func always(render.Memcached) bool { return true }

// diffOwned is the diff of a kind whose apply configuration is AC: ownedDiff with opts.
func diffOwned[AC any](opts ...cmp.Option) func(render.Object, client.Object, *v1alpha1.Instance) (string, error) {
	return func(desired render.Object, live client.Object, cr *v1alpha1.Instance) (string, error) {
		return ownedDiff[AC](desired, live, cr, opts...)
	}
}

// secretDiff says whether the fields the Instance owns in a live Secret differ from what
// it renders, never how: a Secret holds credentials or a private key, and a drift is logged.
func secretDiff(desired render.Object, live client.Object, cr *v1alpha1.Instance) (string, error) {
	d, err := ownedDiff[corev1ac.SecretApplyConfiguration](desired, live, cr)
	if err != nil || d == "" {
		return "", err
	}
	return "differs from what the provider renders (a Secret's contents are not shown)", nil
}

// needs are the roles m needs.
func needs(m render.Memcached) map[string]bool {
	out := make(map[string]bool, len(managedKinds))
	for _, k := range managedKinds {
		out[k.role] = k.needed(m)
	}
	return out
}

// observed is what exists in the target cluster under an Instance's names, by role.
type observed map[string]client.Object

// each calls f with the kind and object of every object that exists, in managedKinds'
// order.
func (o observed) each(f func(k managedKind, obj client.Object)) {
	for _, k := range managedKinds {
		if obj, ok := o[k.role]; ok {
			f(k, obj)
		}
	}
}

// exists reports whether any object exists.
func (o observed) exists() bool {
	return len(o) > 0
}

// keep keeps only the objects whose ownership (to the Instance whose UID is uid) is one of
// those listed.
func (o observed) keep(uid types.UID, owned ...ownership) observed {
	out := observed{}
	o.each(func(k managedKind, obj client.Object) {
		for _, w := range owned {
			if k.ownership(obj, uid) == w {
				out[k.role] = obj
			}
		}
	})
	return out
}

// deployment is the observed Deployment, nil when absent.
func (o observed) deployment() *appsv1.Deployment {
	d, _ := o[roleDeployment].(*appsv1.Deployment)
	return d
}

// secret is the observed Secret of role, nil when absent.
func (o observed) secret(role string) *corev1.Secret {
	s, _ := o[role].(*corev1.Secret)
	return s
}
