// Package provider installs the Memcached provider the way its users do and runs it: its
// xpkg pushed to the suite's registry, a pkg.crossplane.io Provider naming it by digest,
// Crossplane's package manager installing its CRDs (the Instance as a managed resource
// definition), Crossplane's RBAC manager granting its ServiceAccount the provider's roles, and
// the binary of the package's own runtime image running as that ServiceAccount, and, with it
// running, the platform's ManagedResourceActivationPolicy activating the Instance (the
// package declares safe-start, and this lane's Crossplane activates nothing by itself).
//
// Crossplane runs with the External package runtime, so this package plays the part of the
// runtime that Crossplane's Deployment runtime would play in a cluster: it creates the
// provider's ServiceAccount and a Deployment owned by the ProviderRevision that names it
// (scaled to zero: the RBAC manager binds the provider's roles to the ServiceAccounts of the
// revision's Deployments), runs the binary as a local process with a token of that
// ServiceAccount, and reports the revision's runtime healthy.
package provider

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/controlplane"
	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/pki"
	"github.com/example/function-memcached/test/e2e/internal/proc"
	"github.com/example/function-memcached/test/e2e/internal/registry"
)

// Name is the Provider's name, its ServiceAccount's, and its process's (and log's).
const Name = "provider-memcached"

// Kinds of Crossplane's package API the runtime reads and writes.
var (
	ProviderGVK         = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "Provider"}
	ProviderRevisionGVK = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "ProviderRevision"}
	crdGVK              = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// CRDs are the provider's kinds, which Crossplane installs from the package.
var CRDs = []string{
	InstanceCRD,
	"providerconfigs.memcached.example.com",
	"clusterproviderconfigs.memcached.example.com",
	"providerconfigusages.memcached.example.com",
	"clusterproviderconfigusages.memcached.example.com",
}

// InstanceCRD is the Instance's CRD, and its ManagedResourceDefinition's name: the provider
// declares safe-start, so Crossplane creates it only once a ManagedResourceActivationPolicy
// activates that definition. The other CRDs are installed with the package.
const InstanceCRD = "instances.memcached.example.com"

// ConfigCRDs are the provider's CRDs that the package installs whatever is activated.
func ConfigCRDs() []string {
	return slices.DeleteFunc(slices.Clone(CRDs), func(n string) bool { return n == InstanceCRD })
}

// Controller names the provider's controllers report in controller-runtime's metrics once
// started.
const (
	InstanceController       = "managed/instance.memcached.example.com"
	ProviderConfigController = "providerconfig/providerconfig.memcached.example.com"
)

// runtimeFieldManager owns what the suite writes as the provider's runtime.
const runtimeFieldManager = "e2e-provider-runtime"

const installTimeout = 3 * time.Minute

// Options configure the provider's installation.
type Options struct {
	// XPKG is the provider's package (`make provider-xpkg`, this machine's architecture).
	XPKG string
	// Registry receives the package.
	Registry *registry.Registry
	// CoreBinary is Crossplane core's binary, whose `rbac start` is the RBAC manager.
	CoreBinary string
	// ControlPlane is the control plane: its admin kubeconfig runs the RBAC manager, and its
	// API server's URL and CA make the provider's kubeconfig.
	ControlPlane *controlplane.ControlPlane
	// ControlPlaneRole is a file holding the ClusterRole the provider needs beside what the
	// RBAC manager grants (package-provider/rbac/control-plane-clusterrole.yaml), which the
	// suite binds to the provider's ServiceAccount as a platform team would.
	ControlPlaneRole string
	// ActivationPolicy is a file holding the ManagedResourceActivationPolicy a platform
	// applies to activate the Instance (package-provider/examples/activation-policy.yaml). The
	// suite applies it once the provider runs, and checks that the Instance controller waited
	// for the Instance's CRD.
	ActivationPolicy string
	// Args are the provider's flags beside the package's entrypoint and the metrics address.
	Args            []string
	WorkDir, LogDir string
	PIDs            *proc.PIDFile
}

// A Provider is the installed, running provider.
type Provider struct {
	*proc.Process
	opts Options
	c    *kube.Client
	// Package is the package reference, by digest.
	Package string
	// Revision is the ProviderRevision's name.
	Revision string
	// Binary is the file the package's runtime image runs, extracted from it.
	Binary string
	// Kubeconfig is the provider's kubeconfig: the control plane, as its ServiceAccount.
	Kubeconfig string
	// MetricsURL is its Prometheus endpoint.
	MetricsURL string
	entry      []string
}

// Install installs the provider from its package and starts it, returning once its metrics
// endpoint answers.
func Install(ctx context.Context, c *kube.Client, o Options) (*Provider, error) {
	p := &Provider{opts: o, c: c}
	steps := []func(context.Context) error{p.push, p.apply, p.runtime, p.grant, p.installed, p.credentials, p.extract}
	for _, s := range steps {
		if err := s(ctx); err != nil {
			return nil, err
		}
	}
	go p.serve(ctx)
	if err := p.Start(ctx, o.Args...); err != nil {
		return nil, err
	}
	return p, p.activate(ctx)
}

// activate applies the platform's ManagedResourceActivationPolicy to a running provider: until
// then the Instance's CRD does not exist, so the provider must run its provider-config
// controllers and not its Instance controller (its CRD gate); once the CRD is served, the
// Instance controller must start, without a restart.
func (p *Provider) activate(ctx context.Context) error {
	if _, err := p.c.Get(ctx, crdGVK, "", InstanceCRD); kerrors.IsNotFound(err) {
		err := kube.Wait(ctx, time.Minute, "the provider's provider-config controllers started", func(ctx context.Context) error {
			started, err := p.Controllers(ctx)
			switch {
			case err != nil:
				return err
			case started[InstanceController]:
				return errors.Errorf("the Instance controller started before CRD %s existed: the provider's CRD gate did not hold it", InstanceCRD)
			case !started[ProviderConfigController]:
				return errors.Errorf("controller %s not started", ProviderConfigController)
			}
			return nil
		})
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if _, err := p.c.ApplyFile(ctx, p.opts.ActivationPolicy); err != nil {
		return err
	}
	if err := crossplane.WaitEstablished(ctx, p.c, InstanceCRD); err != nil {
		return err
	}
	return kube.Wait(ctx, time.Minute, "the provider's Instance controller started once its CRD was served", func(ctx context.Context) error {
		started, err := p.Controllers(ctx)
		if err == nil && !started[InstanceController] {
			err = errors.Errorf("controller %s not started", InstanceController)
		}
		return err
	})
}

// Controllers reads which of its controllers the running provider has started, from
// controller-runtime's metrics.
func (p *Provider) Controllers(ctx context.Context) (map[string]bool, error) {
	s, err := crossplane.Scrape(ctx, p.MetricsURL, "controller_runtime_reconcile_total")
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the provider's metrics")
	}
	started := map[string]bool{}
	for series := range s {
		for _, c := range []string{InstanceController, ProviderConfigController} {
			if strings.Contains(series, `controller="`+c+`"`) {
				started[c] = true
			}
		}
	}
	return started, nil
}

func (p *Provider) push(ctx context.Context) (err error) {
	if _, err := os.Stat(p.opts.XPKG); err != nil {
		return errors.Wrap(err, "cannot find the provider's package: run make provider-xpkg")
	}
	// A package without its CRDs installs "healthy" and grants nothing: say so now, not
	// after the install's timeout.
	crds, err := packagedCRDs(p.opts.XPKG)
	if err != nil {
		return err
	}
	if want := slices.Sorted(slices.Values(CRDs)); !slices.Equal(crds, want) {
		return errors.Errorf("the provider's package %s holds the CRDs %v, not %v: rebuild it with make provider-xpkg", p.opts.XPKG, crds, want)
	}
	p.Package, err = p.opts.Registry.Push(ctx, p.opts.XPKG, "example/"+Name, "e2e")
	return err
}

// packagedCRDs reads the names of the CRDs in an xpkg file's package.yaml, sorted.
func packagedCRDs(xpkgFile string) ([]string, error) {
	b, err := registry.PackageYAML(xpkgFile)
	if err != nil {
		return nil, err
	}
	objs, err := kube.DecodeObjects(b)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot parse the package.yaml of %s", xpkgFile)
	}
	var crds []string
	for _, o := range objs {
		if o.GroupVersionKind() == crdGVK {
			crds = append(crds, o.GetName())
		}
	}
	slices.Sort(crds)
	return crds, nil
}

func (p *Provider) apply(ctx context.Context) error {
	_, err := p.c.Apply(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ProviderGVK.GroupVersion().String(),
		"kind":       ProviderGVK.Kind,
		"metadata":   map[string]any{"name": Name},
		"spec":       map[string]any{"package": p.Package},
	}})
	return err
}

// runtime gives the provider's revision what a Deployment runtime would: a ServiceAccount and
// a Deployment, owned by the revision, whose pods would run as it.
func (p *Provider) runtime(ctx context.Context) error {
	var rev *unstructured.Unstructured
	err := kube.Wait(ctx, installTimeout, "a ProviderRevision of "+Name, func(ctx context.Context) error {
		r, err := p.c.Resource(ProviderRevisionGVK, "")
		if err != nil {
			return err
		}
		l, err := r.List(ctx, metav1.ListOptions{LabelSelector: "pkg.crossplane.io/package=" + Name})
		if err != nil {
			return err
		}
		for i := range l.Items {
			if s, _, _ := unstructured.NestedString(l.Items[i].Object, "spec", "desiredState"); s == "Active" {
				rev = &l.Items[i]
				return nil
			}
		}
		return errors.New("no active revision yet")
	})
	if err != nil {
		return err
	}
	p.Revision = rev.GetName()
	sa, err := kube.ToUnstructured(&corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Namespace: crossplane.Namespace, Name: Name},
	})
	if err != nil {
		return err
	}
	if _, err := p.c.Apply(ctx, sa); err != nil {
		return err
	}
	labels := map[string]string{"pkg.crossplane.io/revision": p.Revision}
	d, err := kube.ToUnstructured(&appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: crossplane.Namespace, Name: p.Revision, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: ProviderRevisionGVK.GroupVersion().String(), Kind: ProviderRevisionGVK.Kind, Name: p.Revision, UID: rev.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Spec: appsv1.DeploymentSpec{
			// The suite runs the binary itself; the Deployment says which ServiceAccount
			// the provider runs as, which is what the RBAC manager reads.
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: Name,
					Containers:         []corev1.Container{{Name: "package-runtime", Image: p.Package}},
				},
			},
		},
	})
	if err != nil {
		return err
	}
	_, err = p.c.Apply(ctx, d)
	return err
}

// grant runs Crossplane's RBAC manager until it has bound the provider's system ClusterRole
// to the provider's ServiceAccount, then binds the control-plane ClusterRole the platform
// grants beside it.
func (p *Provider) grant(ctx context.Context) error {
	role := "crossplane:provider:" + p.Revision + ":system"
	err := crossplane.RunRBACManager(ctx, crossplane.RBACOptions{
		Binary: p.opts.CoreBinary, Kubeconfig: p.opts.ControlPlane.KubeconfigPath(), LogDir: p.opts.LogDir, PIDs: p.opts.PIDs,
	}, installTimeout, func(ctx context.Context) error {
		if err := p.runtimeHealthy(ctx); err != nil {
			return err
		}
		if _, err := p.c.Typed.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); err != nil {
			// The RBAC manager renders no role before Crossplane lists the revision's CRDs
			// in its status: say how far the revision got, for a failure's last line.
			rev, gerr := p.c.Get(ctx, ProviderRevisionGVK, "", p.Revision)
			if gerr != nil {
				return gerr
			}
			return errors.Wrap(err, crossplane.RevisionState(rev))
		}
		b, err := p.c.Typed.RbacV1().ClusterRoleBindings().Get(ctx, role, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == crossplane.Namespace && s.Name == Name {
				return nil
			}
		}
		return errors.Errorf("ClusterRoleBinding %s does not bind ServiceAccount %s/%s yet", role, crossplane.Namespace, Name)
	})
	if err != nil {
		return err
	}
	objs, err := p.c.ApplyFile(ctx, p.opts.ControlPlaneRole)
	if err != nil || len(objs) != 1 {
		return errors.Errorf("cannot apply the one ClusterRole of %s: %v", p.opts.ControlPlaneRole, err)
	}
	b, err := kube.ToUnstructured(&rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: objs[0].GetName()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: objs[0].GetName()},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: crossplane.Namespace, Name: Name}},
	})
	if err != nil {
		return err
	}
	_, err = p.c.Apply(ctx, b)
	return err
}

// runtimeHealthy does for the revision what a runtime controller does once the provider's
// Deployment is available: a TLS server Secret for the provider's webhooks (it serves none,
// yet Crossplane installs a provider's kinds only once the Secret is named), named in the
// revision's status, and RuntimeHealthy.
func (p *Provider) runtimeHealthy(ctx context.Context) error {
	r, err := p.c.Resource(ProviderRevisionGVK, "")
	if err != nil {
		return err
	}
	rev, err := r.Get(ctx, p.Revision, metav1.GetOptions{})
	if err != nil {
		return err
	}
	secret, _, _ := unstructured.NestedString(rev.Object, "spec", "tlsServerSecretName")
	if secret == "" {
		secret = Name + "-tls-server"
	}
	if err := p.tlsSecret(ctx, secret); err != nil {
		return err
	}
	observed, _, _ := unstructured.NestedString(rev.Object, "status", "tlsServerSecretName")
	if s, _, _, _ := kube.Condition(rev, "RuntimeHealthy"); s == "True" && observed == secret {
		return nil
	}
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ProviderRevisionGVK.GroupVersion().String(),
		"kind":       ProviderRevisionGVK.Kind,
		"metadata":   map[string]any{"name": p.Revision},
		"status": map[string]any{
			"tlsServerSecretName": secret,
			"conditions": []any{map[string]any{
				"type": "RuntimeHealthy", "status": "True", "reason": "HealthyPackageRevision",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}},
		},
	}}
	_, err = r.ApplyStatus(ctx, p.Revision, status, metav1.ApplyOptions{FieldManager: runtimeFieldManager, Force: true})
	return errors.Wrapf(err, "cannot set the status of ProviderRevision %s", p.Revision)
}

// tlsSecret creates the provider's TLS server Secret when it does not exist.
func (p *Provider) tlsSecret(ctx context.Context, name string) error {
	_, err := p.c.Typed.CoreV1().Secrets(crossplane.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil || !kerrors.IsNotFound(err) {
		return errors.Wrapf(err, "cannot get Secret %s", name)
	}
	ca, err := pki.NewCA(Name + "-ca")
	if err != nil {
		return err
	}
	srv, err := ca.Issue(pki.Request{CommonName: Name, DNSNames: []string{Name + "." + crossplane.Namespace + ".svc"}})
	if err != nil {
		return err
	}
	_, err = p.c.Typed.CoreV1().Secrets(crossplane.Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: crossplane.Namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": srv.CertPEM, "tls.key": srv.KeyPEM},
	}, metav1.CreateOptions{FieldManager: runtimeFieldManager})
	return errors.Wrapf(err, "cannot create Secret %s", name)
}

// serve keeps the revision's runtime reported healthy until ctx ends, as a runtime controller
// would: Crossplane may reset the revision's status.
func (p *Provider) serve(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) { _ = p.runtimeHealthy(ctx) }, time.Second)
}

// installed waits until Crossplane reports the Provider installed and healthy and the CRDs it
// installs whatever is activated are established.
func (p *Provider) installed(ctx context.Context) error {
	if _, err := crossplane.WaitConditions(ctx, p.c, installTimeout, ProviderGVK, "", Name, map[string]string{"Installed": "True", "Healthy": "True"}); err != nil {
		return err
	}
	return crossplane.WaitEstablished(ctx, p.c, ConfigCRDs()...)
}

// credentials writes the provider's kubeconfig: the control plane's API server, trusted by its
// CA, as the provider's ServiceAccount with a token issued for it.
func (p *Provider) credentials(ctx context.Context) error {
	tr, err := p.c.Typed.CoreV1().ServiceAccounts(crossplane.Namespace).CreateToken(ctx, Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return errors.Wrapf(err, "cannot issue a token for ServiceAccount %s/%s", crossplane.Namespace, Name)
	}
	b, err := Kubeconfig(p.opts.ControlPlane.APIServer.URL, p.opts.ControlPlane.CA.CertPEM, tr.Status.Token)
	if err != nil {
		return err
	}
	p.Kubeconfig = filepath.Join(p.opts.WorkDir, Name+".kubeconfig")
	return errors.Wrap(os.WriteFile(p.Kubeconfig, b, 0o600), "cannot write the provider's kubeconfig")
}

// Kubeconfig is a kubeconfig for server, trusted by ca, with a bearer token.
func Kubeconfig(server string, ca []byte, token string) ([]byte, error) {
	c := clientcmdapi.NewConfig()
	c.Clusters["target"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	c.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: token}
	c.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "token"}
	c.CurrentContext = "target"
	b, err := clientcmd.Write(*c)
	return b, errors.Wrap(err, "cannot write a kubeconfig")
}

func (p *Provider) extract(_ context.Context) (err error) {
	p.Binary = filepath.Join(p.opts.WorkDir, Name)
	p.entry, err = registry.ExtractEntrypoint(p.opts.XPKG, p.Binary)
	return err
}

// Start starts the provider's binary with the package's entrypoint arguments and args,
// stopping a running one first, and returns once its metrics endpoint answers.
func (p *Provider) Start(ctx context.Context, args ...string) error {
	if p.Process != nil {
		if err := p.Process.Stop(); err != nil {
			return err
		}
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	all := append(append(append([]string{}, p.entry...), "--metrics-bind-address="+addr), args...)
	p.Process, err = proc.Start(proc.Spec{
		Name: Name, Path: p.Binary, Args: all,
		Env: []string{"KUBECONFIG=" + p.Kubeconfig, "POD_NAMESPACE=" + crossplane.Namespace},
	}, p.opts.LogDir, p.opts.PIDs)
	if err != nil {
		return err
	}
	p.MetricsURL = "http://" + addr + "/metrics"
	return p.WaitHealthy(ctx, time.Minute, nil, p.MetricsURL)
}

// Stop stops the provider's process.
func (p *Provider) Stop() error {
	if p == nil || p.Process == nil {
		return nil
	}
	return p.Process.Stop()
}

// CRDOwners returns, for each of the provider's CRDs, the kinds of the objects that own it:
// ProviderRevision when Crossplane installed it from the package.
func (p *Provider) CRDOwners(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for _, n := range CRDs {
		u, err := p.c.Get(ctx, crdGVK, "", n)
		if err != nil {
			return nil, err
		}
		for _, o := range u.GetOwnerReferences() {
			out[n] = append(out[n], o.Kind)
		}
	}
	return out, nil
}
