package resolve

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	cachev1alpha1 "github.com/example/function-memcached/apis/v1alpha1"
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
	if len(d.errs) == 0 && out.Name == "" {
		d.errs = append(d.errs, field.Required(field.NewPath("spec", "providerConfigRef", "name"), "the name of a ProviderConfig of the Memcached provider"))
	}
	if out.Kind != KindClusterProviderConfig && out.Kind != KindProviderConfig {
		d.errs = append(d.errs, field.NotSupported(field.NewPath("spec", "providerConfigRef", "kind"), out.Kind,
			[]string{KindClusterProviderConfig, KindProviderConfig}))
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return out, nil
}
