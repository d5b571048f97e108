package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group and Version of the provider's API.
const (
	Group   = "memcached.example.com"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group and version every type here is registered under.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder registers the types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

	// AddToScheme adds every type of this package to a scheme: the provider's manager calls
	// it once, and tests call it to build fake clients that know these kinds.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kinds of this API, and their GroupKind and GroupVersionKind, which controllers and the
// provider-config usage tracker use to name and create objects of each kind.
const (
	InstanceKind                   = "Instance"
	ProviderConfigKind             = "ProviderConfig"
	ClusterProviderConfigKind      = "ClusterProviderConfig"
	ProviderConfigUsageKind        = "ProviderConfigUsage"
	ClusterProviderConfigUsageKind = "ClusterProviderConfigUsage"
)

// Type metadata of each kind, for controller names, reconcilers and usage tracking.
var (
	// InstanceGroupKind names the Instance controller.
	InstanceGroupKind = schema.GroupKind{Group: Group, Kind: InstanceKind}.String()
	// InstanceGroupVersionKind is what the managed reconciler creates Instances from.
	InstanceGroupVersionKind = SchemeGroupVersion.WithKind(InstanceKind)

	// ProviderConfigGroupKind and ProviderConfigGroupVersionKind identify namespaced
	// ProviderConfigs.
	ProviderConfigGroupKind        = schema.GroupKind{Group: Group, Kind: ProviderConfigKind}.String()
	ProviderConfigGroupVersionKind = SchemeGroupVersion.WithKind(ProviderConfigKind)

	// ClusterProviderConfigGroupKind and ClusterProviderConfigGroupVersionKind identify
	// cluster-scoped ProviderConfigs.
	ClusterProviderConfigGroupKind        = schema.GroupKind{Group: Group, Kind: ClusterProviderConfigKind}.String()
	ClusterProviderConfigGroupVersionKind = SchemeGroupVersion.WithKind(ClusterProviderConfigKind)

	// ProviderConfigUsageGroupVersionKind and its list record which Instance uses which
	// (Cluster)ProviderConfig.
	ProviderConfigUsageGroupVersionKind     = SchemeGroupVersion.WithKind(ProviderConfigUsageKind)
	ProviderConfigUsageListGroupVersionKind = SchemeGroupVersion.WithKind(ProviderConfigUsageKind + "List")

	// ClusterProviderConfigUsageGroupVersionKind and its list are the cluster-scoped usage
	// kind; see ClusterProviderConfigUsage for why Instances do not create them.
	ClusterProviderConfigUsageGroupVersionKind     = SchemeGroupVersion.WithKind(ClusterProviderConfigUsageKind)
	ClusterProviderConfigUsageListGroupVersionKind = SchemeGroupVersion.WithKind(ClusterProviderConfigUsageKind + "List")
)

func init() {
	SchemeBuilder.Register(
		&Instance{}, &InstanceList{},
		&ProviderConfig{}, &ProviderConfigList{},
		&ClusterProviderConfig{}, &ClusterProviderConfigList{},
		&ProviderConfigUsage{}, &ProviderConfigUsageList{},
		&ClusterProviderConfigUsage{}, &ClusterProviderConfigUsageList{},
	)
}
