// Package kubeconfig reaches the clusters Instances run in. It turns the ProviderConfig or
// ClusterProviderConfig an Instance names into a client for that cluster: a kubeconfig from
// a Secret, or the provider's own identity. It knows nothing about Memcached; the Instance
// controller decides what to do with the client.
//
// Kubeconfigs come from Secrets that people other than the provider's operators may write
// (a namespace's ProviderConfig reads a Secret of that namespace), so a kubeconfig may only
// carry inline credentials: one that would run a command (exec, auth-provider) or read a
// file (tokenFile, client-certificate, certificate-authority) in the provider's pod is
// refused, since it could borrow the provider's own service account. A namespaced
// ProviderConfig's kubeconfig must moreover reach its server over verified TLS: plain http,
// insecure-skip-tls-verify and proxy-url are refused there, since they would let whoever
// writes the Secret point the provider's requests somewhere else unnoticed. Whatever the
// kubeconfig, no client of a target cluster follows a redirect, and a failed answer reaches
// the provider's errors, and so Instances' conditions and events, only as a Kubernetes Status,
// and a successful one is read up to a bound (Untrusted): the server cannot send the provider
// on to a plain-http service from the provider's own network position, nor have it repeat what
// it said, nor exhaust its memory. A namespaced ProviderConfig's transport errors say only
// that the server cannot be reached (Conceal): what listens where in the provider's network is
// none of its tenant's business.
package kubeconfig

import (
	"context"
	"net/url"
	"strings"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// Namespaced is true for a namespaced ProviderConfig's credentials: anyone who may
	// write Secrets in that namespace controls the kubeconfig, which must therefore reach
	// its server over verified TLS (see FromKubeconfig).
	Namespaced bool
}

// Config is what a ProviderConfig or ClusterProviderConfig says: how to reach the target
// cluster and, for a ClusterProviderConfig, which namespaces' Instances may use it to place
// objects where. A namespaced ProviderConfig has neither rule: it serves its own namespace
// only, with that namespace's own credentials.
type Config struct {
	Credentials
	// NamespaceSelector selects the namespaces whose Instances may use a
	// ClusterProviderConfig; nil selects every namespace.
	NamespaceSelector *metav1.LabelSelector
	// Placement says where in the target cluster they may place objects.
	Placement v1alpha1.Placement
	// Adoption says whether Instances using the config may take over objects no live
	// Instance owns.
	Adoption v1alpha1.Adoption
}

// ConfigFor reads the (Cluster)ProviderConfig that ref names. A namespaced ProviderConfig is
// looked up in namespace, the Instance's, and its Secret lives there too: an Instance can
// never use another namespace's ProviderConfig or Secret.
func ConfigFor(ctx context.Context, c client.Reader, namespace string, ref *xpv2.ProviderConfigReference) (Config, error) {
	if ref == nil {
		return Config{}, errors.New("spec.providerConfigRef is not set")
	}
	switch ref.Kind {
	case v1alpha1.ProviderConfigKind:
		pc := &v1alpha1.ProviderConfig{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, pc); err != nil {
			return Config{}, errors.Wrapf(err, "cannot get ProviderConfig %s/%s", namespace, ref.Name)
		}
		cr := Credentials{Source: pc.Spec.Credentials.Source, Namespaced: true}
		if s := pc.Spec.Credentials.SecretRef; s != nil {
			cr.SecretRef = s.ToSecretKeySelector(namespace)
		}
		if cr.Source == xpv2.CredentialsSourceInjectedIdentity {
			// The CRD forbids it; a ProviderConfig written around the schema is refused too.
			return Config{}, errors.Errorf("ProviderConfig %s/%s: source InjectedIdentity is only allowed in a ClusterProviderConfig", namespace, ref.Name)
		}
		return Config{Credentials: cr, Adoption: pc.Spec.Adoption}, nil
	case v1alpha1.ClusterProviderConfigKind:
		pc := &v1alpha1.ClusterProviderConfig{}
		if err := c.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
			return Config{}, errors.Wrapf(err, "cannot get ClusterProviderConfig %q", ref.Name)
		}
		return Config{
			Credentials:       Credentials{Source: pc.Spec.Credentials.Source, SecretRef: pc.Spec.Credentials.SecretRef},
			NamespaceSelector: pc.Spec.NamespaceSelector,
			Placement:         pc.Spec.Placement,
			Adoption:          pc.Spec.Adoption,
		}, nil
	default:
		return Config{}, errors.Errorf("spec.providerConfigRef.kind %q is not supported: use %s or %s", ref.Kind, v1alpha1.ProviderConfigKind, v1alpha1.ClusterProviderConfigKind)
	}
}

// Version identifies these credentials as they are now, without reading the Secret's data:
// "InjectedIdentity", or the Secret's namespace, name, key and resourceVersion, read from
// metadata (a cache of Secrets' metadata in the provider). A client built for one version
// serves until the version changes, so a rotated or deleted Secret takes effect at once and
// an unchanged one is never read again.
func (c Credentials) Version(ctx context.Context, metadata client.Reader) (string, error) {
	if c.Source != xpv2.CredentialsSourceSecret || c.SecretRef == nil {
		return string(c.Source), nil
	}
	ref := c.SecretRef
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := metadata.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, m); err != nil {
		return "", errors.Wrapf(err, "cannot get credentials Secret %s/%s", ref.Namespace, ref.Name)
	}
	return "Secret " + ref.Namespace + "/" + ref.Name + " key " + ref.Key + " version " + m.GetResourceVersion(), nil
}

// RESTConfig returns the configuration of the cluster cr points at. identity is the
// provider's own configuration, used for InjectedIdentity. It is not guarded yet (see
// FromKubeconfig).
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
		rc, err := FromKubeconfig(data, cr.Namespaced)
		if err != nil {
			return nil, errors.Wrapf(err, "invalid kubeconfig in Secret %s/%s key %q", ref.Namespace, ref.Name, ref.Key)
		}
		return rc, nil
	default:
		return nil, errors.Errorf("credentials source %q is not supported: use Secret or InjectedIdentity", cr.Source)
	}
}

// FromKubeconfig parses a kubeconfig into a rest.Config for its current context, refusing
// credentials that run commands or read files in the provider's pod. The config is not
// guarded yet: clients made with New are, and package cluster puts Untrusted above a bound of
// its own, which must read a target's answers before Untrusted holds them whole. With namespaced (a
// namespaced ProviderConfig's kubeconfig) it also refuses anything but https verified with
// the kubeconfig's own CA data: no plain http, no insecure-skip-tls-verify, no proxy-url.
func FromKubeconfig(data []byte, namespaced bool) (*rest.Config, error) {
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
	if namespaced {
		if err := verifiedTLS(kctx.Cluster, cl.Server, cl.InsecureSkipTLSVerify, cl.ProxyURL, len(cl.CertificateAuthorityData) > 0); err != nil {
			return nil, err
		}
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
	if namespaced {
		// Before Guard, so that it wraps the transport closest: the errors of Untrusted's
		// bounds pass as they are.
		rc.Wrap(Conceal)
	}
	return rc, nil
}

// verifiedTLS refuses a namespaced ProviderConfig's cluster entry unless the provider would
// reach its server directly over TLS verified against the kubeconfig's own CA.
func verifiedTLS(cluster, server string, insecure bool, proxy string, caData bool) error {
	u, err := url.Parse(server)
	switch {
	case err != nil || u.Scheme != "https":
		return errors.Errorf("cluster %q: server %q is not https: a namespaced ProviderConfig must reach its cluster over https", cluster, server)
	case insecure:
		return errors.Errorf("cluster %q sets insecure-skip-tls-verify, which a namespaced ProviderConfig may not: embed the server's CA in certificate-authority-data", cluster)
	case proxy != "":
		return errors.Errorf("cluster %q sets proxy-url, which a namespaced ProviderConfig may not: the provider reaches the server directly", cluster)
	case !caData:
		return errors.Errorf("cluster %q has no certificate-authority-data: a namespaced ProviderConfig must embed the server's CA", cluster)
	}
	return nil
}

// MaxErrorLength bounds the message of an error from a target cluster that reaches an
// Instance's conditions and events: an API server or a proxy in front of it may answer with
// a whole HTML page, which would bloat every status update and event.
const MaxErrorLength = 512

// Trim returns err with its message on one line and cut to MaxErrorLength bytes (nil for
// nil), saying how much was cut. The provider trims every error from a target cluster
// before it reaches status or events.
func Trim(err error) error {
	if err == nil {
		return nil
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) <= MaxErrorLength {
		if msg == err.Error() {
			return err
		}
		return errors.New(msg)
	}
	cut := MaxErrorLength
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return errors.Errorf("%s… (%d more bytes)", msg[:cut], len(msg)-cut)
}

// Scheme knows the kinds the provider manages in target clusters, and nothing else.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// These only fail on conflicting registrations, which a fresh scheme cannot have.
	_ = appsv1.AddToScheme(s)
	_ = corev1.AddToScheme(s)
	_ = policyv1.AddToScheme(s)
	_ = networkingv1.AddToScheme(s)
	return s
}

// RESTMapper maps the managed kinds without asking the target cluster: every one is a
// stable, namespaced built-in, and skipping discovery saves round trips on every connect.
func RESTMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	m.Add(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), meta.RESTScopeNamespace)
	m.Add(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	// Pods are only listed, to explain a Memcached that is not available.
	m.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	return m
}

// New returns a client of the cluster rc points at, for the managed kinds, that follows no
// redirect and repeats no answer but a Kubernetes Status (see Untrusted).
func New(rc *rest.Config) (client.Client, error) {
	c, err := client.New(Guard(rest.CopyConfig(rc)), client.Options{Scheme: Scheme(), Mapper: RESTMapper()})
	return c, errors.Wrapf(err, "cannot create a client for %s", rc.Host)
}
