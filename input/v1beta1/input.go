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

	// Metrics configure who may scrape a Memcached's exporter, and how.
	// +optional
	Metrics MetricsSettings `json:"metrics,omitempty"`
}

// MetricsSettings configure the scraping of the exporter sidecar of claims with metrics on.
type MetricsSettings struct {
	// MonitoringNamespace is the namespace whose pods (Prometheus) may reach the metrics
	// port through the NetworkPolicy. Unset means no pod outside the Memcached's own may.
	// +optional
	MonitoringNamespace string `json:"monitoringNamespace,omitempty"`

	// ServiceMonitor composes a Prometheus Operator ServiceMonitor (monitoring.coreos.com/v1)
	// for every claim with metrics on. Off by default: the ServiceMonitor CRD must be
	// installed, or Crossplane cannot compose it.
	// +optional
	ServiceMonitor bool `json:"serviceMonitor,omitempty"`

	// PrometheusRule composes a Prometheus Operator PrometheusRule (monitoring.coreos.com/v1)
	// with the alerts docs/operations.md lists (down, connection limit, out of memory, a
	// cache too small) for every claim with metrics on, each alert labelled with the
	// Memcached's name and namespace. Off by default, like serviceMonitor, whose scrape the
	// alerts read: the PrometheusRule CRD must be installed.
	// +optional
	PrometheusRule bool `json:"prometheusRule,omitempty"`
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

	// Auth is the default of a claim's spec.auth.
	// +optional
	Auth AuthDefaults `json:"auth,omitempty"`

	// NetworkPolicy is the default of a claim's spec.networkPolicy.
	// +optional
	NetworkPolicy NetworkPolicyDefaults `json:"networkPolicy,omitempty"`

	// AuthProxyImage is the image of the memcached-auth-proxy sidecar (built by this
	// repository: make auth-proxy-image, make push), through which the exporter reaches a
	// memcached that requires authentication, since the exporter cannot authenticate. Claims
	// with both auth and metrics need it.
	// +optional
	AuthProxyImage string `json:"authProxyImage,omitempty"`
}

// AuthDefaults are the defaults of a claim's authentication.
type AuthDefaults struct {
	// Enabled is spec.auth.enabled for claims that do not set it. False unless set: turning
	// authentication on locks out every client of a running Memcached that has no
	// credentials, so it is the platform team's explicit choice.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Mode is spec.auth.mode for claims that do not set it: Password unless set, so that
	// upgrading the function changes no running claim's mode. ClientCertificate is the mode
	// most client libraries can use (docs/clients.md); changing this default changes the
	// mode, and so the credentials, of every claim that sets none.
	// +kubebuilder:validation:Enum=Password;ClientCertificate;SASL
	// +optional
	Mode string `json:"mode,omitempty"`
}

// NetworkPolicyDefaults are the defaults of a claim's NetworkPolicy.
type NetworkPolicyDefaults struct {
	// Enabled is spec.networkPolicy.enabled for claims that do not set it. True unless set.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
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

	// MaxExternalStorageMB is the largest volume, in megabytes, a claim may give each replica
	// for external storage (spec.externalStorage.sizeMB): disk the platform provides, on the
	// node (an emptyDir) or from a StorageClass it allows. Unset means 1024; 0 refuses
	// external storage.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxExternalStorageMB *int32 `json:"maxExternalStorageMB,omitempty"`

	// AllowedStorageClasses are the StorageClasses a claim may name in
	// spec.externalStorage.storageClassName, for a generic ephemeral volume per replica.
	// Empty allows none: external storage is then an emptyDir on the node's disk.
	// +optional
	AllowedStorageClasses []string `json:"allowedStorageClasses,omitempty"`

	// AllowedRegistries, when set, are the only registries images may come from, for
	// example "docker.io" or "registry.example.com:5000". Empty allows any registry.
	// +optional
	AllowedRegistries []string `json:"allowedRegistries,omitempty"`

	// RequireAuth refuses claims that turn authentication off (spec.auth.enabled: false).
	// +optional
	RequireAuth bool `json:"requireAuth,omitempty"`

	// AllowedAuthModes, when set, are the only spec.auth.mode values a claim may choose (and
	// must include defaults.auth.mode). Empty allows every mode.
	// +optional
	AllowedAuthModes []string `json:"allowedAuthModes,omitempty"`

	// RequireNetworkPolicy refuses claims that turn the NetworkPolicy off
	// (spec.networkPolicy.enabled: false).
	// +optional
	RequireNetworkPolicy bool `json:"requireNetworkPolicy,omitempty"`

	// NetworkPolicy bounds what a claim's NetworkPolicy may admit.
	// +optional
	NetworkPolicy NetworkPolicyPolicy `json:"networkPolicy,omitempty"`

	// AllowedPriorityClasses, when set, are the only PriorityClasses a claim may name in
	// spec.scheduling.priorityClassName. Empty allows any but the system- classes, which only
	// a platform may hand out.
	// +optional
	AllowedPriorityClasses []string `json:"allowedPriorityClasses,omitempty"`

	// Scheduling bounds the node selector and tolerations a claim may use in
	// spec.scheduling.
	// +optional
	Scheduling SchedulingPolicy `json:"scheduling,omitempty"`

	// AllowedProviderConfigs, when set, are the only ProviderConfigs of the Memcached
	// provider a claim may place a Memcached with (its providerConfigRef or
	// defaults.providerConfigRef), and, for the provider, the only ones an Instance may
	// name. A kind left empty means ClusterProviderConfig. Empty allows any.
	// +optional
	AllowedProviderConfigs []cachev1alpha1.ProviderConfigReference `json:"allowedProviderConfigs,omitempty"`
}

// NetworkPolicyPolicy bounds the namespaces a claim may admit.
type NetworkPolicyPolicy struct {
	// AllowedNamespaceLabels are the namespace label keys a claim's
	// spec.networkPolicy.allowedNamespaces may select on. Unset means
	// kubernetes.io/metadata.name only (a namespace's name, which the API server sets and
	// nobody can forge); an empty list lets no claim admit other namespaces.
	// +optional
	AllowedNamespaceLabels []string `json:"allowedNamespaceLabels,omitempty"`
}

// SchedulingPolicy bounds the nodes a claim may place its replicas on. A toleration or a node
// selector is how a pod reaches nodes kept for others (the control plane, a dedicated pool),
// so by default a claim may use neither a toleration without a key, which tolerates every
// taint, nor a node-role.kubernetes.io/ key, which names control-plane and dedicated nodes.
type SchedulingPolicy struct {
	// AllowedTolerationKeys, when set, are the only taint keys a claim's
	// spec.scheduling.tolerations may name, exactly; a toleration without a key is never
	// allowed. Unset allows any key but the node-role.kubernetes.io/ ones; an empty list lets
	// no claim tolerate any taint.
	// +optional
	AllowedTolerationKeys []string `json:"allowedTolerationKeys,omitempty"`

	// AllowedNodeSelectorKeys, when set, are the only label keys a claim's
	// spec.scheduling.nodeSelector may name, exactly. Unset allows any key but the
	// node-role.kubernetes.io/ ones; an empty list lets no claim select nodes.
	// +optional
	AllowedNodeSelectorKeys []string `json:"allowedNodeSelectorKeys,omitempty"`
}
