package v1alpha1

import "github.com/crossplane/crossplane-runtime/v2/pkg/resource"

// The interfaces crossplane-runtime's reconcilers and usage tracker need. angryjet generates
// the method sets (zz_generated.*.go, `make generate`); these assertions make a type that
// stops satisfying them a compile error rather than a reconciler that fails at run time.
var (
	_ resource.ModernManaged            = &Instance{}
	_ resource.ManagedList              = &InstanceList{}
	_ resource.ProviderConfig           = &ProviderConfig{}
	_ resource.ProviderConfig           = &ClusterProviderConfig{}
	_ resource.TypedProviderConfigUsage = &ProviderConfigUsage{}
	_ resource.TypedProviderConfigUsage = &ClusterProviderConfigUsage{}
	_ resource.ProviderConfigUsageList  = &ProviderConfigUsageList{}
	_ resource.ProviderConfigUsageList  = &ClusterProviderConfigUsageList{}
)
