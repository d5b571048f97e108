// Package v1alpha1 holds the Go types of the Memcached provider (group memcached.example.com):
// the managed resource Instance, which runs a Memcached in another cluster, and the
// ProviderConfig and ClusterProviderConfig that say how to reach that cluster. They are the
// single source of the provider's CRDs in package-provider/crds: `make generate` derives the
// CRDs, the deepcopy code and, with angryjet, the method sets that make them
// crossplane-runtime managed resources, ProviderConfigs and usages.
//
// An Instance is a Crossplane v2 managed resource: namespaced, with a local connection secret
// reference and a typed providerConfigRef (resource.ModernManaged). Its forProvider carries
// the same Memcached fields as the claim (apis/cache/v1alpha1.MemcachedSpec), so a composition can
// hand a claim's spec to an Instance without translating it.
//
// +kubebuilder:object:generate=true
// +groupName=memcached.example.com
// +versionName=v1alpha1
package v1alpha1
