package resolve

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// Kinds of ProviderConfig a Memcached may be placed with.
const (
	KindClusterProviderConfig = "ClusterProviderConfig"
	KindProviderConfig        = "ProviderConfig"
)

// Placement resolves where a Memcached runs, from the providerConfigRef at p: nil for this
// cluster, or the ProviderConfig of the Memcached provider that reaches another one. A
// claim's own reference wins over the Input's default (which NewSettings checked), and must
// be one that policy.allowedProviderConfigs allows.
func Placement(p *field.Path, ref *cachev1alpha1.ProviderConfigReference, s Settings) (*cachev1alpha1.ProviderConfigReference, field.ErrorList) {
	if ref == nil {
		return s.ProviderConfigRef, nil
	}
	out := withDefaultKind(*ref)
	if errs := checkRef(p, out); len(errs) > 0 {
		return nil, errs
	}
	if errs := s.ProviderConfigAllowed(p, *out); len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// ProviderConfigAllowed reports, at p, a reference (its kind filled in) that
// policy.allowedProviderConfigs does not list. The function checks a claim's placement with
// it, and the provider an Instance's providerConfigRef, so both refuse the same configs.
func (s Settings) ProviderConfigAllowed(p *field.Path, r cachev1alpha1.ProviderConfigReference) field.ErrorList {
	if len(s.AllowedProviderConfigs) == 0 {
		return nil
	}
	allowed := make([]string, len(s.AllowedProviderConfigs))
	for i, a := range s.AllowedProviderConfigs {
		if a == r {
			return nil
		}
		allowed[i] = a.Kind + "/" + a.Name
	}
	return field.ErrorList{field.Invalid(p, r.Kind+"/"+r.Name, "is not allowed; policy.allowedProviderConfigs allows "+strings.Join(allowed, ", "))}
}

// withDefaultKind returns a copy of r whose empty kind reads ClusterProviderConfig, the
// platform's kind of config.
func withDefaultKind(r cachev1alpha1.ProviderConfigReference) *cachev1alpha1.ProviderConfigReference {
	if r.Kind == "" {
		r.Kind = KindClusterProviderConfig
	}
	return &r
}

// checkRef reports a reference that names nothing or a kind the Memcached provider does not
// have, whether a claim or the platform's Input wrote it.
func checkRef(p *field.Path, r *cachev1alpha1.ProviderConfigReference) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the name of a ProviderConfig of the Memcached provider"))
	}
	if r.Kind != KindClusterProviderConfig && r.Kind != KindProviderConfig {
		errs = append(errs, field.NotSupported(p.Child("kind"), r.Kind, []string{KindClusterProviderConfig, KindProviderConfig}))
	}
	return errs
}

// Remote adapts m, resolved from spec at root (spec for a claim, spec.forProvider for an
// Instance), to a Memcached in another cluster, which the Memcached provider runs: its
// Deployment, Service and PodDisruptionBudget. Authentication and TLS (whose credentials and
// certificate live in this cluster) and the NetworkPolicy (which the provider does not manage
// yet) are not supported there. A claim that asks for one explicitly, or a platform policy
// that requires one, is refused, naming the field; a platform default that turned one on does
// not apply there. The ServiceMonitor belongs to the Prometheus of the cluster the Memcached
// runs in, and is dropped too.
func Remote(root *field.Path, spec cachev1alpha1.MemcachedSpec, m render.Memcached, s Settings) (render.Memcached, field.ErrorList) {
	var errs field.ErrorList
	unsupported := func(p *field.Path, v any, what string, required bool, policy string) {
		detail := "not supported for a Memcached in another cluster yet"
		if required {
			detail += "; " + policy + " requires it, so this Memcached cannot run in another cluster"
		}
		errs = append(errs, field.Invalid(p, v, what+" is "+detail))
	}
	explicit := spec.Auth != nil && spec.Auth.Enabled != nil && *spec.Auth.Enabled
	if m.Auth != nil && (explicit || s.RequireAuth) {
		unsupported(root.Child("auth", "enabled"), true, "authentication", s.RequireAuth, "policy.requireAuth")
	}
	if m.TLS != nil {
		unsupported(root.Child("tls", "secretName"), m.TLS.SecretName, "TLS", false, "")
	}
	if np := spec.NetworkPolicy; m.NetworkPolicy != nil {
		switch {
		case np != nil && np.AllowedNamespaces != nil:
			unsupported(root.Child("networkPolicy", "allowedNamespaces"), "{...}", "a NetworkPolicy", s.RequireNetworkPolicy, "policy.requireNetworkPolicy")
		case (np != nil && np.Enabled != nil && *np.Enabled) || s.RequireNetworkPolicy:
			unsupported(root.Child("networkPolicy", "enabled"), true, "a NetworkPolicy", s.RequireNetworkPolicy, "policy.requireNetworkPolicy")
		}
	}
	m.Auth, m.AuthProxyImage, m.TLS, m.NetworkPolicy, m.ServiceMonitor = nil, "", nil, nil, false
	return m, errs
}
