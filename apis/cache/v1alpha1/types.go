package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// XMemcachedSpec is the spec of the claim and its composite: the Memcached itself and where
// it runs. Placement is kept apart from MemcachedSpec because the managed resource Instance
// embeds MemcachedSpec and is itself the placement.
type XMemcachedSpec struct {
	MemcachedSpec `json:",inline"`

	// ProviderConfigRef runs this Memcached in another cluster, the one the named
	// ProviderConfig (or ClusterProviderConfig) of the Memcached provider reaches, through a
	// composed Instance. Unset means the platform's default (the function Input's
	// defaults.providerConfigRef), or, without one, this cluster.
	// +optional
	ProviderConfigRef *ProviderConfigReference `json:"providerConfigRef,omitempty"`
}

// ProviderConfigReference names a ProviderConfig of the Memcached provider
// (memcached.example.com).
type ProviderConfigReference struct {
	// Name of the ProviderConfig or ClusterProviderConfig.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Kind is ClusterProviderConfig (the platform's, for every namespace) or ProviderConfig
	// (one in the claim's namespace).
	// +kubebuilder:validation:Enum=ClusterProviderConfig;ProviderConfig
	// +optional
	Kind string `json:"kind,omitempty"`
}

// MemcachedSpec is what an application team asks for. Every field is optional; package
// resolve fills the gaps from the platform's Input and its own defaults, so a claim with an
// empty spec is a valid, production-shaped Memcached of one replica. The schema carries no
// default the Input could set (the API server would fill it in before the function runs, and
// the platform's default could never apply); size's default of 1 stays in the schema because
// the Input has none for it.
type MemcachedSpec struct {
	// Size is the number of memcached replicas. Clients shard keys across all of them, so a
	// larger size means a larger cache, not a faster one. The platform's policy caps it
	// (3 unless the platform team says otherwise).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	Size *int32 `json:"size,omitempty"`

	// Image is the memcached container image. Empty means the platform's pinned default.
	// The platform's policy may restrict the registries it may come from.
	// +optional
	Image string `json:"image,omitempty"`

	// MemoryLimitMB is memcached's cache size in megabytes (memcached -m). The container's
	// memory request and limit are derived from it with headroom for connections. Unset
	// means the platform's default (the Input's defaults.memoryLimitMB, else 64).
	// +kubebuilder:validation:Minimum=16
	// +optional
	MemoryLimitMB *int32 `json:"memoryLimitMB,omitempty"`

	// MaxConnections is the number of simultaneous client connections each replica accepts
	// (memcached -c). Unset means 1024. memcached takes its own open files out of it, so it
	// must be at least 6 per thread plus 24, and at least 48.
	// +kubebuilder:validation:Minimum=48
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MaxConnections *int32 `json:"maxConnections,omitempty"`

	// Threads is the number of worker threads of each replica (memcached -t). Unset means 4.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	Threads *int32 `json:"threads,omitempty"`

	// Resources sets the CPU of each memcached container. Memory is not settable here: it
	// follows memoryLimitMB so that the cache always fits its container.
	// +optional
	Resources *CPUResources `json:"resources,omitempty"`

	// HighAvailability spreads replicas across nodes and zones and protects them with a
	// PodDisruptionBudget when there is more than one.
	// +optional
	HighAvailability *HighAvailability `json:"highAvailability,omitempty"`

	// Metrics adds a Prometheus memcached exporter beside each replica.
	// +optional
	Metrics *Metrics `json:"metrics,omitempty"`

	// MaxItemSizeMB is the largest value memcached stores, in megabytes (memcached -I), for
	// applications whose values exceed memcached's 1 MB default. At most 128, and at most
	// half of memoryLimitMB (memcached refuses more). Unset means memcached's 1 MB.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +optional
	MaxItemSizeMB *int32 `json:"maxItemSizeMB,omitempty"`

	// Auth makes clients authenticate before any command, with a username and password the
	// function generates once and keeps (in the connection Secret). Unset means the
	// platform's default (the Input's defaults.auth.enabled).
	// +optional
	Auth *Auth `json:"auth,omitempty"`

	// TLS makes memcached serve TLS only, with the certificate of a Secret in the claim's
	// namespace.
	// +optional
	TLS *TLS `json:"tls,omitempty"`

	// NetworkPolicy admits clients from the claim's own namespace only, and from the
	// namespaces it names. Unset means the platform's default (the Input's
	// defaults.networkPolicy.enabled, true unless the platform says otherwise).
	// +optional
	NetworkPolicy *NetworkPolicy `json:"networkPolicy,omitempty"`

	// Scheduling places the replicas on chosen nodes, beside the spreading across nodes and
	// zones that highAvailability adds.
	// +optional
	Scheduling *Scheduling `json:"scheduling,omitempty"`

	// ExternalStorage keeps item values on a disk of each replica's own (memcached's
	// extstore), with keys and item headers in memory: a cache larger than memoryLimitMB. The
	// disk is disposable, like the cache: a replica that restarts starts empty.
	// +optional
	ExternalStorage *ExternalStorage `json:"externalStorage,omitempty"`
}

// ExternalStorage is the disk each replica keeps item values on (memcached's extstore).
type ExternalStorage struct {
	// SizeMB is the size of each replica's volume in megabytes, bounded by the platform's
	// policy (policy.maxExternalStorageMB, 1024 unless the platform says otherwise).
	// memcached's extstore file takes at most 90% of it, in whole 64 MB pages: the rest is
	// headroom, since a volume past its limit gets the pod evicted. At least 512.
	// +kubebuilder:validation:Minimum=512
	SizeMB int32 `json:"sizeMB"`

	// StorageClassName makes each replica's volume a generic ephemeral volume (a
	// PersistentVolumeClaim created and deleted with the pod) of this StorageClass, one the
	// platform allows (policy.allowedStorageClasses). Unset means an emptyDir on the node's
	// own disk, limited to sizeMB.
	// +kubebuilder:validation:MinLength=1
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
}

// Auth configures how clients prove who they are to memcached. Client libraries speak
// different ways (docs/clients.md), so the mode is a choice: the platform's default, which a
// claim may override within the platform's policy.
type Auth struct {
	// Enabled turns authentication on. Turning it on for a running Memcached locks out
	// every client without the credentials, so unset means the platform's default (the
	// Input's defaults.auth.enabled). The platform's policy may refuse false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Mode is how clients authenticate: Password (memcached's text-protocol authentication,
	// a username and password sent once per connection), ClientCertificate (mutual TLS: a
	// client certificate the Memcached's own CA signs, with a server certificate the function
	// issues unless tls.secretName names one) or SASL (SASL PLAIN over the binary protocol,
	// which turns memcached's text protocol off). Unset means the platform's default (the
	// Input's defaults.auth.mode, else Password). Changing it replaces the credentials, as a
	// new rotation does.
	// +kubebuilder:validation:Enum=Password;ClientCertificate;SASL
	// +optional
	Mode string `json:"mode,omitempty"`

	// Rotation, when set to a new value (a date, a ticket number: letters, digits, '-', '_'
	// and '.', at most 63 characters), replaces the credentials with new ones and restarts
	// the replicas with them; clients must read the connection Secret again. The credentials
	// Secret records the rotation it holds, so the change happens once, whatever the timing
	// of reconciles.
	// +optional
	Rotation string `json:"rotation,omitempty"`
}

// The authentication modes of Auth.Mode.
const (
	AuthModePassword          = "Password"
	AuthModeClientCertificate = "ClientCertificate"
	AuthModeSASL              = "SASL"
)

// AuthModes are every Auth.Mode, in the order the docs list them.
var AuthModes = []string{AuthModePassword, AuthModeClientCertificate, AuthModeSASL}

// GetMode is a's mode, empty for a nil Auth.
func (a *Auth) GetMode() string {
	if a == nil {
		return ""
	}
	return a.Mode
}

// GetRotation is a's rotation, empty for a nil Auth.
func (a *Auth) GetRotation() string {
	if a == nil {
		return ""
	}
	return a.Rotation
}

// TLS configures memcached to serve TLS.
type TLS struct {
	// SecretName names a Secret of type kubernetes.io/tls in the claim's namespace (what
	// cert-manager writes) holding tls.crt (the certificate chain) and tls.key, and
	// optionally ca.crt, which the connection Secret passes on to clients. memcached then
	// serves TLS only; a renewed certificate rolls the replicas.
	// +kubebuilder:validation:MinLength=1
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// NetworkPolicy configures the NetworkPolicy that admits clients. It needs a network plugin
// that enforces NetworkPolicies; without one, the policy exists and admits everyone.
type NetworkPolicy struct {
	// Enabled composes the NetworkPolicy. Unset means the platform's default (the Input's
	// defaults.networkPolicy.enabled); the platform's policy may refuse false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// AllowedNamespaces selects namespaces, by their labels, whose pods may connect beside
	// the claim's own namespace's. It must name what it admits (matchLabels, or
	// matchExpressions with operator In), with label keys the platform's policy allows
	// (kubernetes.io/metadata.name, the namespace's name, unless the platform says
	// otherwise).
	// +optional
	AllowedNamespaces *metav1.LabelSelector `json:"allowedNamespaces,omitempty"`
}

// Scheduling constrains the nodes replicas run on.
type Scheduling struct {
	// NodeSelector limits replicas to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let replicas run on nodes with matching taints.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PriorityClassName is the PriorityClass of the replicas' pods. The platform's policy
	// may restrict it.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// CPUResources are the CPU requests and limits of the memcached container, in Kubernetes
// quantity notation ("100m", "1").
type CPUResources struct {
	// Requests are the guaranteed CPU of each replica.
	// +optional
	Requests *CPU `json:"requests,omitempty"`

	// Limits cap the CPU of each replica. Unset means no limit, which avoids CPU
	// throttling of a latency-sensitive cache.
	// +optional
	Limits *CPU `json:"limits,omitempty"`
}

// CPU is one CPU quantity. It is an object rather than a bare string so that the shape
// reads like a Kubernetes container's resources.
type CPU struct {
	// CPU is a Kubernetes quantity, for example "100m" or "1".
	// +optional
	CPU string `json:"cpu,omitempty"`
}

// HighAvailability configures how replicas survive node failures and voluntary
// disruptions such as node drains.
type HighAvailability struct {
	// Enabled turns on soft pod anti-affinity, topology spread across zones, and a
	// PodDisruptionBudget allowing one replica down at a time when size > 1. Unset means
	// true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// Metrics configures the Prometheus exporter sidecar.
type Metrics struct {
	// Enabled adds a memcached exporter sidecar serving metrics on port 9150. Unset means
	// false.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// MemcachedStatus is what the function reports back. Crossplane adds conditions (Ready,
// Synced, and the function's Available) beside these fields.
type MemcachedStatus struct {
	// Replicas is the number of memcached pods that exist.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// AvailableReplicas is the number of memcached pods ready to serve.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// Endpoint is the address clients use: the headless Service's DNS name and port, which
	// resolves to every replica so that clients can shard keys across them.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// Selector is the label selector of the memcached pods, in its string form. The scale
	// subresource serves it, so that a HorizontalPodAutoscaler finds the pods to measure.
	// +optional
	Selector string `json:"selector,omitempty"`
}

// XMemcachedStatus is what the function reports on an XR, which Crossplane copies to its
// claim: the Memcached's status and the function's last verdict, beside the conditions
// (Ready, Synced, and the function's Available).
type XMemcachedStatus struct {
	MemcachedStatus `json:",inline"`

	// AvailableReason is the reason of the Available condition as the function last decided
	// it (Creating, Resizing, Progressing, ...). The function reads it back to tell a resize
	// or a rollout still under way from a lost replica. It reads this field, not the
	// condition: Crossplane can write an XR's earlier conditions back for a moment
	// (crossplane/crossplane#7062), while it writes the function's status fields as returned.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AvailableReason string `json:"availableReason,omitempty"`
}

// XMemcached is the composite resource. The Go type exists so that controller-gen can
// derive the XRD's schema (and scale subresource) from it, and so that the function decodes
// an XR's spec into it. Its scale subresource lets `kubectl scale memcached/<name>` and
// autoscalers resize a Memcached like a Deployment: spec.size is its replicas.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.replicas,selectorpath=.status.selector
type XMemcached struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   XMemcachedSpec   `json:"spec,omitempty"`
	Status XMemcachedStatus `json:"status,omitempty"`
}
