package instance

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kubeconfig"
	"github.com/example/function-memcached/internal/resolve"
)

// anyNamespace in a placement's allowedNamespaces allows every namespace but the control
// plane's own.
const anyNamespace = "*"

// Tenancy decides whether an Instance may use its ProviderConfig to place objects where it
// asks. The platform's credentials (a ClusterProviderConfig's) serve only the namespaces the
// config selects, and only in the target namespace named like the Instance's own unless the
// config's placement allows others; the platform's policy may further restrict which configs
// an Instance may name at all. A namespaced ProviderConfig serves its own namespace with that
// namespace's credentials, which decide what they reach.
type Tenancy struct {
	// Metadata reads namespaces' labels, from a cache.
	Metadata client.Reader
	// ControlPlaneNamespaces are the control plane's own namespaces (kube-* and the
	// provider's): with InjectedIdentity, where a ClusterProviderConfig acts as the provider
	// in the control plane, they are allowed only when a placement lists them by name.
	ControlPlaneNamespaces []string
}

// Admit returns why cr may not place its objects in target through cfg (which ref names)
// under policy s: field errors naming the Instance's field, or an error when the Instance's
// namespace cannot be read to match the config's namespaceSelector. It reads nothing of the
// config's credentials, and its errors name none of them: the Connector asks it before
// anything else is done for the Instance.
func (t Tenancy) Admit(ctx context.Context, cr *v1alpha1.Instance, ref *xpv2.ProviderConfigReference, cfg kubeconfig.Config, target string, s resolve.Settings) (field.ErrorList, error) {
	refPath := field.NewPath("spec", "providerConfigRef")
	errs := s.ProviderConfigAllowed(refPath, cachev1alpha1.ProviderConfigReference{Kind: ref.Kind, Name: ref.Name})
	if ref.Kind != v1alpha1.ClusterProviderConfigKind {
		return errs, nil
	}
	if sel := cfg.NamespaceSelector; sel != nil {
		ok, err := t.selects(ctx, sel, cr.GetNamespace())
		if err != nil {
			return nil, errors.Wrapf(err, "cannot match ClusterProviderConfig %q's namespaceSelector", ref.Name)
		}
		if !ok {
			// Not allowed, and no more: the refusal is the tenant's to read, and names
			// neither the config's rules nor its credentials.
			errs = append(errs, field.Invalid(refPath, ref.Kind+"/"+ref.Name, "is not allowed from namespace "+cr.GetNamespace()))
		}
	}
	if reason := t.placement(cr.GetNamespace(), target, cfg); reason != "" {
		errs = append(errs, field.Invalid(field.NewPath("spec", "forProvider", "namespace"), target,
			"ClusterProviderConfig "+ref.Name+" "+reason))
	}
	return errs, nil
}

// placement says why cfg does not allow an Instance of namespace own to place objects in
// target; "" when it does.
func (t Tenancy) placement(own, target string, cfg kubeconfig.Config) string {
	listed := slices.Contains(cfg.Placement.AllowedNamespaces, target)
	if cfg.Source == xpv2.CredentialsSourceInjectedIdentity && t.controlPlane(target) {
		if listed {
			return ""
		}
		return "acts as the provider in the control plane, whose own namespace " + target + " it allows only when placement.allowedNamespaces lists it by name"
	}
	if target == own || listed || slices.Contains(cfg.Placement.AllowedNamespaces, anyNamespace) {
		return ""
	}
	allowed := own + " (the Instance's own)"
	if len(cfg.Placement.AllowedNamespaces) > 0 {
		allowed += " and " + strings.Join(cfg.Placement.AllowedNamespaces, ", ")
	}
	return "allows only namespace " + allowed + " (placement.allowedNamespaces)"
}

// controlPlane reports whether ns is one of the control plane's own namespaces.
func (t Tenancy) controlPlane(ns string) bool {
	return strings.HasPrefix(ns, "kube-") || slices.Contains(t.ControlPlaneNamespaces, ns)
}

// selects reports whether sel selects namespace ns by its labels.
func (t Tenancy) selects(ctx context.Context, sel *metav1.LabelSelector, ns string) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, errors.Wrap(err, "invalid namespaceSelector")
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := t.Metadata.Get(ctx, types.NamespacedName{Name: ns}, m); err != nil {
		return false, errors.Wrapf(err, "cannot read namespace %s (the provider needs get, list and watch on namespaces)", ns)
	}
	return s.Matches(labels.Set(m.GetLabels())), nil
}
