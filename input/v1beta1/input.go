package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
)

// Input configures the function from a Composition pipeline step. No Input at all means
// every default below. The Memcached provider reads the Input of the Composition labelled
// memcached.example.com/instance-policy=true as the policy of Instances created directly, so
// that they obey exactly what claims obey.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=crossplane
type Input struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Defaults fill the fields a claim leaves empty.
	// +optional
	Defaults Defaults `json:"defaults,omitempty"`

	// Policy bounds what a claim may ask for. A claim outside it is reported on the claim
	// and changes nothing that runs.
	// +optional
	Policy Policy `json:"policy,omitempty"`

	// Diagnostics say how much the function may look at to explain a Memcached that is not
	// available.
	// +optional
	Diagnostics Diagnostics `json:"diagnostics,omitempty"`
}

// Diagnostics configure what the function reads beyond its composed resources.
type Diagnostics struct {
	// Pods, true by default, asks Crossplane for a Memcached's pods while not every replica
	// is available, so that the claim's Available message names the cause (an image that
	// cannot be pulled, a crash loop, an OOM kill, no node that fits, a failing probe).
	// Crossplane must be allowed to get, list and watch pods (example/rbac.yaml), and it
	// caches every pod of the cluster once it has read them. Without that permission such a
	// claim's composite is not synced (its reconcile waits two minutes for pods, then fails)
	// until the Memcached is available again: set false where Crossplane may not read pods.
	// +optional
	Pods *bool `json:"pods,omitempty"`
}

// Defaults are the values used where a claim is silent.
type Defaults struct {
	// Image is the memcached image used when a claim names none.
	// +optional
	Image string `json:"image,omitempty"`

	// MemoryLimitMB is the cache size used when a claim names none.
	// +kubebuilder:validation:Minimum=16
	// +optional
	MemoryLimitMB *int32 `json:"memoryLimitMB,omitempty"`

	// ExporterImage is the Prometheus memcached exporter image used when metrics are on.
	// +optional
	ExporterImage string `json:"exporterImage,omitempty"`

	// ProviderConfigRef, when set, runs every claim that names none in the cluster this
	// ProviderConfig of the Memcached provider reaches, through a composed Instance.
	// +optional
	ProviderConfigRef *cachev1alpha1.ProviderConfigReference `json:"providerConfigRef,omitempty"`
}

// Policy bounds the claims a platform accepts.
type Policy struct {
	// MaxSize is the largest number of replicas a claim may ask for.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxSize *int32 `json:"maxSize,omitempty"`

	// MaxMemoryLimitMB is the largest cache, in megabytes, a claim may ask for.
	// +kubebuilder:validation:Minimum=16
	// +optional
	MaxMemoryLimitMB *int32 `json:"maxMemoryLimitMB,omitempty"`

	// AllowedRegistries, when set, are the only registries images may come from, for
	// example "docker.io" or "registry.example.com:5000". Empty allows any registry.
	// +optional
	AllowedRegistries []string `json:"allowedRegistries,omitempty"`

	// AllowedProviderConfigs, when set, are the only ProviderConfigs of the Memcached
	// provider a claim may place a Memcached with (its providerConfigRef or
	// defaults.providerConfigRef), and, for the provider, the only ones an Instance may
	// name. A kind left empty means ClusterProviderConfig. Empty allows any.
	// +optional
	AllowedProviderConfigs []cachev1alpha1.ProviderConfigReference `json:"allowedProviderConfigs,omitempty"`
}
