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

// Remote adapts m to a Memcached in another cluster, which the Memcached provider runs. It
// carries everything a claim has there, authentication, TLS and the NetworkPolicy included:
// the provider generates the credentials in the target cluster and reads the TLS Secret
// there, so a Memcached is the same wherever it runs. Only the ServiceMonitor and the
// PrometheusRule are dropped: they belong to the Prometheus of the cluster the Memcached runs
// in, which the control plane's Input knows nothing of.
func Remote(m render.Memcached) render.Memcached {
	m.ServiceMonitor = false
	m.PrometheusRule = false
	return m
}
