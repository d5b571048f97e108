package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// ProviderCredentials say how a namespaced ProviderConfig reaches its target cluster: with a
// kubeconfig in a Secret of the ProviderConfig's own namespace. The provider's own identity
// (InjectedIdentity) is reserved for ClusterProviderConfigs, because anyone who may create a
// ProviderConfig in a namespace would otherwise act in the control-plane cluster with the
// provider's permissions.
//
// +kubebuilder:validation:XValidation:rule="self.source != 'Secret' || has(self.secretRef)",message="secretRef is required when source is Secret"
type ProviderCredentials struct {
	// Source of the credentials.
	// +kubebuilder:validation:Enum=Secret
	Source xpv2.CredentialsSource `json:"source"`

	// SecretRef names the key of a Secret, in the ProviderConfig's namespace, that holds a
	// kubeconfig for the target cluster.
	// +optional
	SecretRef *xpv2.LocalSecretKeySelector `json:"secretRef,omitempty"`
}

// ClusterProviderCredentials say how a ClusterProviderConfig reaches its target cluster:
// with a kubeconfig in a Secret of any namespace, or, with InjectedIdentity, as the provider
// itself in the cluster it runs in.
//
// +kubebuilder:validation:XValidation:rule="self.source != 'Secret' || has(self.secretRef)",message="secretRef is required when source is Secret"
type ClusterProviderCredentials struct {
	// Source of the credentials.
	// +kubebuilder:validation:Enum=Secret;InjectedIdentity
	Source xpv2.CredentialsSource `json:"source"`

	// SecretRef names the namespace, name and key of a Secret that holds a kubeconfig for
	// the target cluster.
	// +optional
	SecretRef *xpv2.SecretKeySelector `json:"secretRef,omitempty"`
}

// Adoption says whether Instances using a config may take over objects under their names
// that are not theirs.
type Adoption string

// Adoption rules.
const (
	// AdoptionForbidden, the default: an Instance never takes over an object that is not
	// its own, whatever its spec.adoptionPolicy; such an object is a conflict.
	AdoptionForbidden Adoption = "Forbidden"
	// AdoptionAllowed lets an Instance whose spec.adoptionPolicy is Adopt take over an
	// object under its names that belongs to no live Instance: one without the label
	// memcached.example.com/instance-uid, or labelled by an Instance that no longer exists.
	AdoptionAllowed Adoption = "Allowed"
)

// ProviderConfigSpec is the desired state of a ProviderConfig.
type ProviderConfigSpec struct {
	// Credentials to reach the target cluster with.
	Credentials ProviderCredentials `json:"credentials"`

	// Adoption says whether Instances using this config may take over (with
	// spec.adoptionPolicy: Adopt) objects under their names in the cluster these
	// credentials reach that belong to no live Instance: unlabelled ones, or ones an Instance
	// that no longer exists made. Forbidden, the default, reports them as conflicts. An
	// object labelled with a live Instance's UID is never adopted.
	// +kubebuilder:validation:Enum=Forbidden;Allowed
	// +kubebuilder:default=Forbidden
	// +optional
	Adoption Adoption `json:"adoption,omitempty"`
}

// ClusterProviderConfigSpec is the desired state of a ClusterProviderConfig: how to reach the
// target cluster, and which Instances may use it to place what where. A ClusterProviderConfig
// acts with the platform's credentials for every namespace that may use it, so an Instance
// may only reach the target namespace named like its own unless the platform allows more.
type ClusterProviderConfigSpec struct {
	// Credentials to reach the target cluster with.
	Credentials ClusterProviderCredentials `json:"credentials"`

	// NamespaceSelector selects, by their labels, the namespaces whose Instances may use this
	// config. Unset allows every namespace. An Instance in a namespace it does not select is
	// refused (Synced=False) and nothing is created for it.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Placement says where in the target cluster Instances using this config may place their
	// objects.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Adoption says whether Instances using this config may take over (with
	// spec.adoptionPolicy: Adopt) objects under their names that belong to no live
	// Instance: unlabelled ones (an application, a Memcached run by hand), or ones an
	// Instance that no longer exists made. It is the platform's decision, since those objects
	// may be anyone's that the config's credentials reach: Forbidden, the default, reports
	// them as conflicts. An object labelled with a live Instance's UID is never adopted.
	// +kubebuilder:validation:Enum=Forbidden;Allowed
	// +kubebuilder:default=Forbidden
	// +optional
	Adoption Adoption `json:"adoption,omitempty"`
}

// Placement says which namespaces of the target cluster Instances may place objects in.
type Placement struct {
	// AllowedNamespaces are target namespaces an Instance may name in forProvider.namespace
	// besides the namespace named like its own, which is always allowed. "*" allows every
	// namespace but, with InjectedIdentity, the control plane's own: kube-* and the
	// provider's namespace are allowed only when listed by name.
	// +listType=set
	// +optional
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
}

// ProviderConfigStatus is the observed state of a (Cluster)ProviderConfig: its conditions
// and how many Instances use it, which keeps it from being deleted while any does.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}

// A ProviderConfig says how Instances in its namespace reach their target cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider}
// +kubebuilder:printcolumn:name="SOURCE",type="string",JSONPath=".spec.credentials.source"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="SECRET-NAME",type="string",JSONPath=".spec.credentials.secretRef.name",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderConfigSpec   `json:"spec"`
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// ProviderConfigList is a list of ProviderConfigs.
//
// +kubebuilder:object:root=true
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfig `json:"items"`
}

// A ClusterProviderConfig says how Instances in any namespace reach their target cluster.
// Instances use the one named "default" unless they name another.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider}
// +kubebuilder:printcolumn:name="SOURCE",type="string",JSONPath=".spec.credentials.source"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="SECRET-NAME",type="string",JSONPath=".spec.credentials.secretRef.name",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type ClusterProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterProviderConfigSpec `json:"spec"`
	Status ProviderConfigStatus      `json:"status,omitempty"`
}

// ClusterProviderConfigList is a list of ClusterProviderConfigs.
//
// +kubebuilder:object:root=true
type ClusterProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProviderConfig `json:"items"`
}

// A ProviderConfigUsage records that an Instance uses a ProviderConfig or a
// ClusterProviderConfig (providerConfigRef.kind says which). It lives in the Instance's
// namespace and is owned by the Instance, so it goes when the Instance goes; while any
// exists, the config it names cannot be deleted.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider}
// +kubebuilder:printcolumn:name="CONFIG-KIND",type="string",JSONPath=".providerConfigRef.kind"
// +kubebuilder:printcolumn:name="CONFIG-NAME",type="string",JSONPath=".providerConfigRef.name"
// +kubebuilder:printcolumn:name="RESOURCE-KIND",type="string",JSONPath=".resourceRef.kind"
// +kubebuilder:printcolumn:name="RESOURCE-NAME",type="string",JSONPath=".resourceRef.name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type ProviderConfigUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	xpv2.TypedProviderConfigUsage `json:",inline"`
}

// ProviderConfigUsageList is a list of ProviderConfigUsages.
//
// +kubebuilder:object:root=true
type ProviderConfigUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfigUsage `json:"items"`
}

// A ClusterProviderConfigUsage is the cluster-scoped usage kind of the Crossplane v2
// provider API. Instances do not create it: they are namespaced, crossplane-runtime's usage
// tracker puts a usage in its managed resource's namespace, and a cluster-scoped usage could
// not be owned, and so garbage-collected, by a namespaced Instance. An Instance's use of a
// ClusterProviderConfig is a ProviderConfigUsage whose providerConfigRef.kind is
// ClusterProviderConfig, which the ClusterProviderConfig controller counts across
// namespaces. The kind is served for cluster-scoped users of ClusterProviderConfigs.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider}
// +kubebuilder:printcolumn:name="CONFIG-NAME",type="string",JSONPath=".providerConfigRef.name"
// +kubebuilder:printcolumn:name="RESOURCE-KIND",type="string",JSONPath=".resourceRef.kind"
// +kubebuilder:printcolumn:name="RESOURCE-NAME",type="string",JSONPath=".resourceRef.name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type ClusterProviderConfigUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	xpv2.TypedProviderConfigUsage `json:",inline"`
}

// ClusterProviderConfigUsageList is a list of ClusterProviderConfigUsages.
//
// +kubebuilder:object:root=true
type ClusterProviderConfigUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProviderConfigUsage `json:"items"`
}
