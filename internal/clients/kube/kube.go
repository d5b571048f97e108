// Package kube reaches the clusters Instances run in. It turns the ProviderConfig or
// ClusterProviderConfig an Instance names into a client for that cluster: a kubeconfig from
// a Secret, or the provider's own identity. It knows nothing about Memcached; the Instance
// controller decides what to do with the client.
//
// Kubeconfigs come from Secrets that people other than the provider's operators may write
// (a namespace's ProviderConfig reads a Secret of that namespace), so a kubeconfig may only
// carry inline credentials: one that would run a command (exec, auth-provider) or read a
// file (tokenFile, client-certificate, certificate-authority) in the provider's pod is
// refused, since it could borrow the provider's own service account.
package kube

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// UserAgent identifies the provider in target clusters' audit logs.
const UserAgent = "provider-memcached"

// Credentials are what either kind of ProviderConfig resolves to.
type Credentials struct {
	// Source is Secret or InjectedIdentity.
	Source xpv2.CredentialsSource
	// SecretRef locates the kubeconfig when Source is Secret.
	SecretRef *xpv2.SecretKeySelector
}

// CredentialsFor reads the (Cluster)ProviderConfig that ref names. A namespaced
// ProviderConfig is looked up in namespace, the Instance's, and its Secret lives there too:
// an Instance can never use another namespace's ProviderConfig or Secret.
func CredentialsFor(ctx context.Context, c client.Reader, namespace string, ref *xpv2.ProviderConfigReference) (Credentials, error) {
	if ref == nil {
		return Credentials{}, errors.New("spec.providerConfigRef is not set")
	}
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, pc); err != nil {
			return Credentials{}, errors.Wrapf(err, "cannot get ProviderConfig %s/%s", namespace, ref.Name)
		}
		cr := Credentials{Source: pc.Spec.Credentials.Source}
		if s := pc.Spec.Credentials.SecretRef; s != nil {
			cr.SecretRef = s.ToSecretKeySelector(namespace)
		}
		if cr.Source == xpv2.CredentialsSourceInjectedIdentity {
			// The CRD forbids it; a ProviderConfig written around the schema is refused too.
			return Credentials{}, errors.Errorf("ProviderConfig %s/%s: source InjectedIdentity is only allowed in a ClusterProviderConfig", namespace, ref.Name)
		}
		return cr, nil
	case v1alpha1.ClusterProviderConfigKind:
		pc := &v1alpha1.ClusterProviderConfig{}
		if err := c.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
			return Credentials{}, errors.Wrapf(err, "cannot get ClusterProviderConfig %q", ref.Name)
		}
		return Credentials{Source: pc.Spec.Credentials.Source, SecretRef: pc.Spec.Credentials.SecretRef}, nil
	default:
		return Credentials{}, errors.Errorf("spec.providerConfigRef.kind %q is not supported: use %s or %s", ref.Kind, v1alpha1.ProviderConfigKind, v1alpha1.ClusterProviderConfigKind)
	}
}

// RESTConfig returns the configuration of the cluster cr points at. identity is the
// provider's own configuration, used for InjectedIdentity.
func RESTConfig(ctx context.Context, c client.Client, identity *rest.Config, cr Credentials) (*rest.Config, error) {
	switch cr.Source {
	case xpv2.CredentialsSourceInjectedIdentity:
		if identity == nil {
			return nil, errors.New("source InjectedIdentity: the provider has no identity of its own to inject")
		}
		rc := rest.CopyConfig(identity)
		rc.UserAgent = UserAgent
		return rc, nil
	case xpv2.CredentialsSourceSecret:
		ref := cr.SecretRef
		if ref == nil || ref.Name == "" || ref.Key == "" {
			return nil, errors.New("source Secret: credentials.secretRef must name a Secret and a key")
		}
		data, err := resource.CommonCredentialExtractor(ctx, cr.Source, c, xpv2.CommonCredentialSelectors{SecretRef: ref})
		if err != nil {
			return nil, errors.Wrapf(err, "credentials Secret %s/%s", ref.Namespace, ref.Name)
		}
		if len(data) == 0 {
			return nil, errors.Errorf("credentials Secret %s/%s has no key %q", ref.Namespace, ref.Name, ref.Key)
		}
		rc, err := FromKubeconfig(data)
		if err != nil {
			return nil, errors.Wrapf(err, "invalid kubeconfig in Secret %s/%s key %q", ref.Namespace, ref.Name, ref.Key)
		}
		return rc, nil
	default:
		return nil, errors.Errorf("credentials source %q is not supported: use Secret or InjectedIdentity", cr.Source)
	}
}

// FromKubeconfig parses a kubeconfig into a rest.Config for its current context, refusing
// credentials that run commands or read files in the provider's pod.
func FromKubeconfig(data []byte) (*rest.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse kubeconfig")
	}
	ctxName := cfg.CurrentContext
	kctx, ok := cfg.Contexts[ctxName]
	if ctxName == "" || !ok {
		return nil, errors.Errorf("kubeconfig has no current context %q", ctxName)
	}
	cl, ok := cfg.Clusters[kctx.Cluster]
	switch {
	case !ok:
		return nil, errors.Errorf("context %q names cluster %q, which the kubeconfig does not define", ctxName, kctx.Cluster)
	case cl.Server == "":
		return nil, errors.Errorf("cluster %q has no server", kctx.Cluster)
	case cl.CertificateAuthority != "":
		return nil, errors.Errorf("cluster %q reads certificate-authority from a file: embed certificate-authority-data instead", kctx.Cluster)
	}
	if u, ok := cfg.AuthInfos[kctx.AuthInfo]; ok {
		switch {
		case u.Exec != nil:
			return nil, errors.Errorf("user %q runs an exec credential plugin, which the provider does not allow: use a token or client certificate", kctx.AuthInfo)
		case u.AuthProvider != nil:
			return nil, errors.Errorf("user %q uses auth-provider %q, which the provider does not allow: use a token or client certificate", kctx.AuthInfo, u.AuthProvider.Name)
		case u.TokenFile != "" || u.ClientCertificate != "" || u.ClientKey != "":
			return nil, errors.Errorf("user %q reads credentials from a file: embed token, client-certificate-data and client-key-data instead", kctx.AuthInfo)
		}
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, errors.Wrap(err, "cannot use kubeconfig")
	}
	rc.UserAgent = UserAgent
	return rc, nil
}

// Scheme knows the kinds the provider manages in target clusters, and nothing else.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// These only fail on conflicting registrations, which a fresh scheme cannot have.
	_ = appsv1.AddToScheme(s)
	_ = corev1.AddToScheme(s)
	_ = policyv1.AddToScheme(s)
	return s
}

// RESTMapper maps the managed kinds without asking the target cluster: every one is a
// stable, namespaced built-in, and skipping discovery saves round trips on every connect.
func RESTMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	m.Add(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), meta.RESTScopeNamespace)
	return m
}

// New returns a client of the cluster rc points at, for the managed kinds.
func New(rc *rest.Config) (client.Client, error) {
	c, err := client.New(rc, client.Options{Scheme: Scheme(), Mapper: RESTMapper()})
	return c, errors.Wrapf(err, "cannot create a client for %s", rc.Host)
}
