package resolve

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
)

// Kinds of ProviderConfig a Memcached may be placed with.
const (
	KindClusterProviderConfig = "ClusterProviderConfig"
	KindProviderConfig        = "ProviderConfig"
)

// Placement resolves where a Memcached runs: nil for this cluster, or the ProviderConfig of
// the Memcached provider that reaches another one. The spec's providerConfigRef wins over
// the Input's default.
func Placement(spec map[string]any, s Settings) (*cachev1alpha1.ProviderConfigReference, field.ErrorList) {
	d := decoder{}
	ref := d.object(spec, "spec", "providerConfigRef")
	if ref == nil {
		if len(d.errs) > 0 {
			return nil, d.errs
		}
		return s.ProviderConfigRef, nil
	}
	out := &cachev1alpha1.ProviderConfigReference{
		Name: d.str(ref, "spec.providerConfigRef", "name", ""),
		Kind: d.str(ref, "spec.providerConfigRef", "kind", KindClusterProviderConfig),
	}
	if len(d.errs) == 0 {
		d.errs = checkRef(field.NewPath("spec", "providerConfigRef"), out)
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return out, nil
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
