package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
)

// TypeAvailable is the Instance's own condition beside Crossplane's Ready and Synced. Ready
// can only say Available, Unavailable or Creating; Available carries the reason users know
// from the claim (Creating, Resizing, Progressing, Stalled, Degraded, InvalidSpec) and the
// replica counts, so that a composition can hand the same condition on to its claim. Every
// reason, with the event a transition to it records, is in internal/readiness's Reasons.
const TypeAvailable xpv2.ConditionType = "Available"

// Reasons of the Available condition that only an Instance has, beside the claim's
// (Available, Creating, Resizing, Progressing, Stalled, Degraded, InvalidSpec). A
// composition hands them on to its claim like the others.
const (
	// ReasonUnreachable: the provider cannot observe the target cluster (credentials
	// missing, revoked or refused, the cluster unreachable); the message says why. It turns
	// back as soon as the provider can observe again.
	ReasonUnreachable = "Unreachable"
	// ReasonConflict: an object under the Instance's names exists in the target namespace
	// and is not the Instance's; the message names it. Nothing was changed.
	ReasonConflict = "Conflict"
)

// InstanceParameters are the desired state of a Memcached in the target cluster: where it
// runs, and the same fields a claim has. Defaults and limits are the platform's policy: the
// function Input of the Composition labelled memcached.example.com/instance-policy=true
// (see package resolve); without exactly one such Composition Instances are refused, unless
// the provider runs with --allow-builtin-policy. A spec that breaks it is reported on the
// Instance and changes nothing in the target cluster.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name) && (!has(self.name) || self.name == oldSelf.name)",message="name is immutable: changing it would orphan the running Memcached"
// +kubebuilder:validation:XValidation:rule="has(self.__namespace__) == has(oldSelf.__namespace__) && (!has(self.__namespace__) || self.__namespace__ == oldSelf.__namespace__)",message="namespace is immutable: changing it would orphan the running Memcached"
type InstanceParameters struct {
	// Namespace of the target cluster the Deployment, Service and PodDisruptionBudget are
	// created in. Empty means the namespace named like the Instance's own, the only one a
	// ClusterProviderConfig allows unless its placement.allowedNamespaces says otherwise. It
	// must exist there; the provider does not create namespaces, which are usually owned by
	// whoever owns the target cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name is the base name of the objects in the target cluster. Empty means the
	// Instance's own name. Like a claim's name, it is kept when it is a valid DNS label and
	// mapped to one (with a hash suffix) otherwise.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// MemcachedSpec holds the claim's fields (size, image, memoryLimitMB, ...), embedded so
	// that the Instance and the claim cannot drift apart.
	cachev1alpha1.MemcachedSpec `json:",inline"`
}

// InstanceObservation is the observed state of the Memcached in the target cluster: the
// same fields a claim's status has, and what the live Deployment runs.
type InstanceObservation struct {
	// MemcachedStatus holds replicas, availableReplicas and endpoint. The endpoint is the
	// headless Service's DNS name in the target cluster, so it resolves from there.
	cachev1alpha1.MemcachedStatus `json:",inline"`

	// Size is the live Deployment's spec.replicas: what the Memcached is sized to in the
	// target cluster now. An Instance that only observes (managementPolicies: [Observe]) is
	// judged against it rather than against forProvider.size.
	// +optional
	Size *int32 `json:"size,omitempty"`

	// Image is the live memcached container's image.
	// +optional
	Image string `json:"image,omitempty"`
}

// AdoptionPolicy says whether an Instance takes over objects it did not create.
type AdoptionPolicy string

// Adoption policies.
const (
	// AdoptionPolicyNever reports an object under the Instance's names that is not its own
	// as a conflict and leaves it alone.
	AdoptionPolicyNever AdoptionPolicy = "Never"
	// AdoptionPolicyAdopt takes such an object over, when the Instance's config allows
	// adoption and no live Instance owns it: labels it as the Instance's, applies over it,
	// and deletes it with the Instance.
	AdoptionPolicyAdopt AdoptionPolicy = "Adopt"
)

// InstanceSpec is the desired state of an Instance.
//
// +kubebuilder:validation:XValidation:rule="!has(self.providerConfigRef) || self.providerConfigRef.kind in ['ProviderConfig', 'ClusterProviderConfig']",message="providerConfigRef.kind must be ProviderConfig or ClusterProviderConfig"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.providerConfigRef) || (has(self.providerConfigRef) && self.providerConfigRef == oldSelf.providerConfigRef)",message="providerConfigRef is immutable: create a new Instance to move a Memcached to another cluster, and delete this one"
type InstanceSpec struct {
	// ManagedResourceSpec holds managementPolicies, writeConnectionSecretToRef and
	// providerConfigRef (by default the ClusterProviderConfig named default). The
	// providerConfigRef is immutable: an Instance that could be pointed at another cluster
	// would leave its Memcached running, unmanaged, in the first one. A composition moves a
	// Memcached by composing a new Instance, and Crossplane deletes the old one.
	xpv2.ManagedResourceSpec `json:",inline"`

	// ForProvider is the Memcached to run in the target cluster.
	ForProvider InstanceParameters `json:"forProvider"`

	// AdoptionPolicy says what happens when a Deployment, Service or PodDisruptionBudget
	// under the Instance's names already exists in the target namespace and is not the
	// Instance's own (it lacks the label memcached.example.com/instance-uid with this
	// Instance's UID). Never, the default, reports a conflict on the Instance (Synced=False,
	// naming the object) and leaves the object alone. Adopt takes it over when the
	// Instance's (Cluster)ProviderConfig allows adoption (its spec.adoption: Allowed) and
	// the object belongs to no live Instance: the provider labels it as this Instance's,
	// applies over it and deletes it with the Instance. An object labelled with another
	// live Instance's UID is never adopted: it stays a conflict.
	// +kubebuilder:validation:Enum=Never;Adopt
	// +optional
	AdoptionPolicy AdoptionPolicy `json:"adoptionPolicy,omitempty"`
}

// InstanceStatus is the observed state of an Instance.
type InstanceStatus struct {
	// ManagedResourceStatus holds the conditions (Ready, Synced, Available).
	xpv2.ManagedResourceStatus `json:",inline"`

	// AtProvider is what runs in the target cluster.
	// +optional
	AtProvider InstanceObservation `json:"atProvider,omitempty"`
}

// An Instance is a Memcached running in another cluster: a Deployment, a headless Service
// and, for highly available sizes above one, a PodDisruptionBudget, exactly as the
// composition function renders them for a claim. Its connection secret holds endpoint, host
// and port.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed}
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="AVAILABLE",type="string",JSONPath=".status.conditions[?(@.type=='Available')].reason"
// +kubebuilder:printcolumn:name="SIZE",type="integer",JSONPath=".spec.forProvider.size"
// +kubebuilder:printcolumn:name="NAMESPACE",type="string",JSONPath=".spec.forProvider.namespace",priority=1
// +kubebuilder:printcolumn:name="ENDPOINT",type="string",JSONPath=".status.atProvider.endpoint",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type Instance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   InstanceSpec   `json:"spec"`
	Status InstanceStatus `json:"status,omitempty"`
}

// InstanceList is a list of Instances.
//
// +kubebuilder:object:root=true
type InstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Instance `json:"items"`
}
