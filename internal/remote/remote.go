// Package remote translates between a Memcached and the Instance that runs it remotely, in
// the cluster a ProviderConfig of the Memcached provider reaches. Both sides use it: the
// composition function composes an Instance for a claim and reads back whether it is ready,
// and the provider resolves an Instance and reports its state. Keeping both directions here
// keeps them symmetric. Every function is pure, no client and no I/O; only the conditions
// carry the current time as their transition time.
package remote

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// Instance returns an Instance that runs m, already resolved (and so validated against
// the caller's policy), in the cluster that ref's (Cluster)ProviderConfig reaches. Every
// field is written out, none left to the provider's defaults, so the provider renders
// exactly what the caller resolved.
//
// The Instance has no name: Crossplane names composed resources itself. The caller may set
// one, and spec.writeConnectionSecretToRef for a connection Secret (endpoint, host, port,
// and the credentials and TLS details the provider publishes). Authentication (on or off,
// its mode and its rotation), TLS (the Secret's name) and the NetworkPolicy (on or off, and the
// namespaces it admits) are written out explicitly, whatever the provider's own defaults.
// What cannot be carried stays behind: the credentials, which the provider generates in the
// target cluster and keeps in the auth Secret there; the TLS pair, which it reads from the
// Secret forProvider.tls.secretName names in the target namespace there; m.ExporterImage,
// m.AuthProxyImage and the monitoring namespace, which come from the platform's policy the
// provider resolves with; and the ServiceMonitor, which resolve.Remote dropped.
//
// The provider resolves the Instance again with the platform's policy for Instances: the
// Input of the Composition labelled memcached.example.com/instance-policy=true, or the
// built-in policy without one. Label the Composition whose Input the caller resolved with,
// or an m that policy allows beyond the built-in limits (3 replicas, 1024 MB) is reported as
// an invalid spec on the Instance.
func Instance(m render.Memcached, ref xpv2.ProviderConfigReference) *v1alpha1.Instance {
	spec := cachev1alpha1.MemcachedSpec{
		Size:             ptr.To(m.Size),
		Image:            m.Image,
		MemoryLimitMB:    ptr.To(m.MemoryLimitMB),
		MaxConnections:   ptr.To(m.MaxConnections),
		Threads:          ptr.To(m.Threads),
		HighAvailability: &cachev1alpha1.HighAvailability{Enabled: ptr.To(m.HighAvailability)},
		Metrics:          &cachev1alpha1.Metrics{Enabled: ptr.To(m.Metrics)},
		Auth:             &cachev1alpha1.Auth{Enabled: ptr.To(m.Auth != nil)},
		NetworkPolicy:    &cachev1alpha1.NetworkPolicy{Enabled: ptr.To(m.NetworkPolicy != nil)},
	}
	if m.Auth != nil {
		spec.Auth.Mode, spec.Auth.Rotation = m.Auth.Mode, m.Auth.Rotation
	}
	if m.TLS != nil {
		spec.TLS = &cachev1alpha1.TLS{SecretName: m.TLS.SecretName}
	}
	if np := m.NetworkPolicy; np != nil && np.AllowedNamespaces != nil {
		spec.NetworkPolicy.AllowedNamespaces = np.AllowedNamespaces.DeepCopy()
	}
	if m.MaxItemSizeMB > 0 {
		spec.MaxItemSizeMB = ptr.To(m.MaxItemSizeMB)
	}
	if e := m.ExternalStorage; e != nil {
		spec.ExternalStorage = &cachev1alpha1.ExternalStorage{SizeMB: e.SizeMB, StorageClassName: e.StorageClassName}
	}
	if sc := m.Scheduling; sc != nil {
		spec.Scheduling = &cachev1alpha1.Scheduling{NodeSelector: sc.NodeSelector, PriorityClassName: sc.PriorityClassName}
		for _, t := range sc.Tolerations {
			spec.Scheduling.Tolerations = append(spec.Scheduling.Tolerations, *t.DeepCopy())
		}
	}
	if m.CPURequest != nil || m.CPULimit != nil {
		spec.Resources = &cachev1alpha1.CPUResources{}
		if m.CPURequest != nil {
			spec.Resources.Requests = &cachev1alpha1.CPU{CPU: m.CPURequest.String()}
		}
		if m.CPULimit != nil {
			spec.Resources.Limits = &cachev1alpha1.CPU{CPU: m.CPULimit.String()}
		}
	}
	i := &v1alpha1.Instance{}
	i.SetGroupVersionKind(v1alpha1.InstanceGroupVersionKind)
	i.Spec.ProviderConfigReference = &ref
	i.Spec.ForProvider = v1alpha1.InstanceParameters{Namespace: m.Namespace, Name: m.Name, MemcachedSpec: spec}
	return i
}

// Target returns the base name and the namespace of an Instance's objects in its target
// cluster: forProvider.name (or the Instance's own name) mapped like a claim's name by
// render.Name, and forProvider.namespace (or the Instance's own namespace).
func Target(i *v1alpha1.Instance) (name, namespace string) {
	n := i.Spec.ForProvider.Name
	if n == "" {
		n = i.GetName()
	}
	ns := i.Spec.ForProvider.Namespace
	if ns == "" {
		ns = i.GetNamespace()
	}
	return render.Name(n), ns
}

// Memcached resolves an Instance's forProvider exactly as a claim's spec is resolved, with s
// as the policy, and returns what to render. Errors name the Instance's fields
// (spec.forProvider.size, not spec.size), each with its value and limit. With auth on, Auth
// holds the rotation only, and with TLS on, TLS the Secret's name only: the credentials and
// the pair are state in the target cluster, which the provider reads there.
func Memcached(i *v1alpha1.Instance, s resolve.Settings) (render.Memcached, field.ErrorList) {
	root := field.NewPath("spec", "forProvider")
	name, namespace := Target(i)
	if namespace == "" {
		return render.Memcached{}, field.ErrorList{field.Required(root.Child("namespace"),
			"the namespace of the target cluster to run Memcached in")}
	}
	m, errs := resolve.Memcached(root, i.Spec.ForProvider.MemcachedSpec, name, namespace, s)
	if len(errs) > 0 {
		return render.Memcached{}, errs
	}
	return resolve.Remote(m), nil
}

// Conditions express an Available verdict as the Instance's conditions: Crossplane's Ready
// (Available, Creating or Unavailable, whose message leads with the verdict's own reason,
// like "Degraded: 2/3 replicas available") and the Instance's Available condition, which
// carries the verdict's reason and message unchanged.
func Conditions(c readiness.Condition, generation int64) (ready, available xpv2.Condition) {
	switch {
	case c.Available:
		ready = xpv2.Available()
	case c.Reason == readiness.ReasonCreating:
		ready = xpv2.Creating()
	default:
		ready = xpv2.Unavailable()
	}
	ready = ready.WithMessage(c.Reason + ": " + c.Message).WithObservedGeneration(generation)

	available = xpv2.Condition{
		Type:               v1alpha1.TypeAvailable,
		Status:             corev1.ConditionFalse,
		Reason:             xpv2.ConditionReason(c.Reason),
		Message:            c.Message,
		ObservedGeneration: generation,
		LastTransitionTime: ready.LastTransitionTime,
	}
	if c.Available {
		available.Status = corev1.ConditionTrue
	}
	return ready, available
}

// Ready reports whether an observed Instance is ready: its Ready condition is True, which
// the provider sets only when every replica of the current spec is available. A composition
// function marks the composed Instance ready with it.
func Ready(i *v1alpha1.Instance) bool {
	return i.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
}

// Available returns the Available verdict of an observed Instance, for a composition
// function to hand on to its claim: the Instance's Available condition as the provider set
// it. An Instance the provider has not observed yet is Creating; when the provider could not
// sync it (for example, it cannot reach the target cluster), the message says why.
//
// A function receives observed Instances as unstructured data; convert one with
// runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &v1alpha1.Instance{}).
func Available(i *v1alpha1.Instance) readiness.Condition {
	if c := i.GetCondition(v1alpha1.TypeAvailable); c.Reason != "" {
		return readiness.Condition{Available: c.Status == corev1.ConditionTrue, Reason: string(c.Reason), Message: c.Message}
	}
	msg := "creating: waiting for the provider to observe the Instance"
	if s := i.GetCondition(xpv2.TypeSynced); s.Status == corev1.ConditionFalse && s.Message != "" {
		msg = "creating: " + s.Message
	}
	return readiness.Condition{Reason: readiness.ReasonCreating, Message: msg}
}
