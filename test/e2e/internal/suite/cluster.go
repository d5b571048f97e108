package suite

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/addons"
	"github.com/example/function-memcached/test/e2e/internal/crossplane"
	"github.com/example/function-memcached/test/e2e/internal/helm"
	"github.com/example/function-memcached/test/e2e/internal/images"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/node"
	"github.com/example/function-memcached/test/e2e/internal/pki"
	"github.com/example/function-memcached/test/e2e/internal/provider"
)

// The production-shaped lane (Options.ClusterLane, E2E_LANE=cluster): a cluster as users run
// one. Real nodes, each a kubelet and containerd in a network namespace of its own, in two
// zones; kube-proxy and CoreDNS as pods in kube-system; Crossplane installed by its own Helm
// chart from an image of the pinned module, running as pods; the function and the provider
// installed by Crossplane's package manager and run by its Default runtime. The control plane
// and the registry listen on the cluster's bridge (node.ClusterHostAddress), where the nodes'
// pods reach them; nothing is simulated between a claim and its pods.

// ClusterNodes is how many real nodes the lane runs, one per zone.
const ClusterNodes = 2

// ClusterServiceCIDR is the lane's Service range; ClusterDNS the DNS Service's ClusterIP in it,
// as kubeadm numbers it.
const (
	ClusterServiceCIDR = "10.96.0.0/24"
	ClusterDNS         = "10.96.0.10"
)

// CrossplaneRelease is the Helm release and namespace Crossplane is installed as.
const CrossplaneRelease = "crossplane"

// registryCAConfigMap holds the registry's CA for Crossplane (the chart's
// registryCaBundleConfig), as a platform with a private registry configures it.
const registryCAConfigMap = "e2e-registry-ca"

// Kinds of Crossplane's package API.
var (
	FunctionGVK                = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: "Function"}
	deploymentRuntimeConfigGVK = schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1beta1", Kind: "DeploymentRuntimeConfig"}
)

// clusterSteps are the lane's steps, in order.
func (e *Env) clusterSteps(ctx context.Context) []stepFunc {
	return []stepFunc{
		{"set up the cluster's network", func() error { return e.clusterNetwork() }},
		{"start the control plane", func() error { return e.startControlPlane(ctx) }},
		{"serve the registry on the cluster's network", func() error { return e.clusterRegistry(ctx) }},
		{"build and push the cluster's images", func() error { return e.clusterImages(ctx) }},
		{fmt.Sprintf("start %d real nodes", ClusterNodes), func() error { return e.startClusterNodes(ctx) }},
		{"install kube-proxy and CoreDNS", func() error { return e.installAddons(ctx) }},
		{"install Crossplane with its Helm chart", func() error { return e.installCrossplane(ctx) }},
		{"install the function and the provider packages", func() error { return e.installPackages(ctx) }},
		{"apply the example XRDs and Compositions", func() error { return e.applyExamples(ctx) }},
	}
}

func (e *Env) clusterDir() string { return filepath.Join(e.OutputDir, "cluster") }

func (e *Env) clusterNetwork() (err error) {
	e.Cluster, err = node.ClusterNetwork(e.clusterDir(), e.LogDir, ClusterNodes, ClusterServiceCIDR)
	return err
}

// clusterRegistry serves the registry on loopback, where the suite pushes, and over TLS on the
// cluster's bridge, where the nodes' containerd and Crossplane pull; it pushes the function's
// package and names it by the address the cluster pulls from.
func (e *Env) clusterRegistry(ctx context.Context) error {
	if err := e.pushPackage(ctx); err != nil {
		return err
	}
	ca, err := pki.NewCA("e2e-registry-ca")
	if err != nil {
		return err
	}
	cert, err := ca.Issue(pki.Request{CommonName: "e2e-registry", IPs: []net.IP{net.ParseIP(node.ClusterHostAddress)}})
	if err != nil {
		return err
	}
	e.RegistryCA = ca.CertPEM
	if err := pki.WriteFiles(filepath.Join(e.WorkDir, "registry"), map[string][]byte{"ca.crt": ca.CertPEM}); err != nil {
		return err
	}
	if err := e.Registry.ServeTLS(node.ClusterHostAddress, cert.CertPEM, cert.KeyPEM); err != nil {
		return err
	}
	e.Package = e.ClusterRef(e.Package)
	return nil
}

// ClusterRef is ref, pushed to the registry's loopback address, as the cluster pulls it.
func (e *Env) ClusterRef(ref string) string {
	return strings.Replace(ref, e.Registry.Host+"/", e.Registry.TLSHost+"/", 1)
}

// clusterImages builds the node lane's images and the cluster's own (Crossplane, CoreDNS,
// kube-proxy) and pushes them.
func (e *Env) clusterImages(ctx context.Context) (err error) {
	if e.Images, err = images.BuildLane(ctx, e.Registry.Host, e.BinDir); err != nil {
		return err
	}
	if e.clusterMirrors, err = e.mirrorExampleImages(ctx); err != nil {
		return err
	}
	for _, ref := range []*string{&e.Images.Pause, &e.Images.Memcached, &e.Images.Exporter, &e.Images.Reach} {
		*ref = e.ClusterRef(*ref)
	}
	e.Images.Registry = e.Registry.TLSHost
	g, gctx := errgroup.WithContext(ctx)
	for _, i := range []struct {
		ref   *string
		repo  string
		build func() (v1.Image, error)
	}{
		{&e.ClusterImages.Crossplane, "e2e/crossplane:" + CrossplaneVersion, func() (v1.Image, error) {
			return images.Crossplane(filepath.Join(e.BinDir, "crossplane-core"), filepath.Join(e.BinDir, "crossplane-crds"), filepath.Join(e.BinDir, "crossplane-webhooks"))
		}},
		{&e.ClusterImages.CoreDNS, "e2e/coredns:1", func() (v1.Image, error) { return images.CoreDNS(filepath.Join(e.BinDir, "coredns")) }},
		{&e.ClusterImages.KubeProxy, "e2e/kube-proxy:1", func() (v1.Image, error) { return images.KubeProxy(filepath.Join(e.BinDir, "kube-proxy")) }},
		{&e.ClusterImages.App, "e2e/memcached-app:1", func() (v1.Image, error) {
			return images.Program(filepath.Join(e.BinDir, "memcached-app"), "/memcached-app")
		}},
		{&e.ClusterImages.MemcachedNext, "e2e/memcached:next", func() (v1.Image, error) { return images.Memcached(images.MemcachedBinary(e.BinDir)) }},
		{&e.ClusterImages.Python, "e2e/python-apps:1", func() (v1.Image, error) {
			scripts := map[string]string{}
			for _, app := range []string{"pymemcache", "pylibmc"} {
				scripts[PythonApp(app)] = filepath.Join(e.RepoRoot, "test", "e2e", "apps", app, "app.py")
			}
			return images.PythonApps(scripts)
		}},
		{&e.ClusterImages.Memjs, "e2e/memjs-app:1", func() (v1.Image, error) {
			return images.MemjsApp(filepath.Join(e.RepoRoot, "test", "e2e", "apps", "memjs", "app.js"), filepath.Join(e.BinDir, "memjs-app", "node_modules"))
		}},
	} {
		// Each image is built (most of it gzip) and pushed beside the others: the cores, not
		// the registry, bound how long this takes.
		g.Go(func() error {
			img, err := i.build()
			if err != nil {
				return err
			}
			ref, err := images.Push(gctx, e.Registry.Host+"/"+i.repo, img)
			if err != nil {
				return err
			}
			*i.ref = e.ClusterRef(ref)
			return nil
		})
	}
	return g.Wait()
}

// mirrorExampleImages serves the images example/composition.yaml names (memcached, the
// exporter, the auth proxy) from the suite's registry under their own names, and returns their
// registries, which the nodes pull from it as from a mirror: the example Composition runs on
// the real nodes, as it would in a cluster behind a pull-through mirror. What is served is the
// lane's own build of each (Debian's memcached, the pinned exporter, this repository's auth
// proxy), not the upstream image of that tag: where the example names a digest, the lane
// substitutes its build's (ImageSubstitutions, printed one a line), and Example applies them.
func (e *Env) mirrorExampleImages(ctx context.Context) ([]string, error) {
	objs, err := kube.ReadObjects(filepath.Join(e.RepoRoot, "example", "composition.yaml"))
	if err != nil || len(objs) != 1 {
		return nil, errors.Errorf("cannot read example/composition.yaml as one Composition: %v", err)
	}
	pipeline, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "pipeline")
	if len(pipeline) != 1 {
		return nil, errors.New("example/composition.yaml: want one pipeline step")
	}
	authProxy, err := images.AuthProxy(ctx, e.RepoRoot, e.Registry.Host)
	if err != nil {
		return nil, err
	}
	var registries []string
	for _, key := range []string{"image", "exporterImage", "authProxyImage"} {
		src := map[string]string{"image": e.Images.Memcached, "exporterImage": e.Images.Exporter, "authProxyImage": authProxy}[key]
		as, _, _ := unstructured.NestedString(pipeline[0].(map[string]any), "input", "defaults", key)
		if as == "" {
			return nil, errors.Errorf("example/composition.yaml names no defaults.%s", key)
		}
		r, ref, err := images.Mirror(ctx, e.Registry.Host, src, as)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(registries, r) {
			registries = append(registries, r)
		}
		if ref != as {
			e.ImageSubstitutions = append(e.ImageSubstitutions, ImageSubstitution{
				File: "example/composition.yaml", Field: "defaults." + key, From: as, To: ref,
			})
		}
	}
	slices.Sort(registries)
	if len(e.ImageSubstitutions) == 0 {
		fmt.Fprintln(os.Stdout, "e2e: image substitutions: none")
	} else {
		lines := make([]string, 0, len(e.ImageSubstitutions))
		for _, s := range e.ImageSubstitutions {
			lines = append(lines, s.String())
		}
		fmt.Fprintf(os.Stdout, "e2e: image substitutions (%d):\n  %s\n", len(lines), strings.Join(lines, "\n  "))
	}
	return registries, nil
}

// An ImageSubstitution is an image reference of an example file that a lane replaces with its
// own: the example names an image by its publisher's digest, and the lane serves its own
// build under that name, whose digest differs (a node verifies the bytes it pulls by digest).
type ImageSubstitution struct {
	// File is the example file (relative to the repository root), Field the Input field.
	File, Field string
	// From is the example's reference, To the lane's.
	From, To string
}

func (s ImageSubstitution) String() string {
	return fmt.Sprintf("%s: %s: %s -> %s", s.File, s.Field, s.From, s.To)
}

// PythonApp is where the Python applications' image holds the script of the application on
// the library app (test/e2e/apps/<app>/app.py): a pod runs it by naming it as its first
// argument.
func PythonApp(app string) string { return "/app/" + app + "/app.py" }

// CrossplaneVersion is the version of the pinned Crossplane core the lane's image holds.
const CrossplaneVersion = "v2.4.0"

// ClusterImages are the cluster's own images in the registry, as the nodes pull them: its
// add-ons', Crossplane's, and applications on real client libraries: App on gomemcache
// (test/e2e/cmd/memcached-app); Python on pymemcache and pylibmc, one script each
// (test/e2e/apps/pymemcache and pylibmc: a pod's first argument is PythonApp's path); Memjs on
// memjs (test/e2e/apps/memjs).
type ClusterImages struct {
	Crossplane, CoreDNS, KubeProxy, App, Python, Memjs string
	// MemcachedNext is the node lane's memcached image again under another tag: to a
	// Deployment, an image upgrade, which the rollout scenario rolls a claim to.
	MemcachedNext string
}

func (e *Env) startClusterNodes(ctx context.Context) error {
	ca := filepath.Join(e.WorkDir, "registry", "ca.crt")
	if err := e.Cluster.Start(ctx, node.Options{
		Kubelet:    filepath.Join(e.BinDir, "kubelet"),
		LogDir:     e.LogDir,
		PIDs:       e.PIDs,
		APIServer:  e.ControlPlane.APIServer.URL,
		CA:         e.ControlPlane.CA,
		Kube:       e.Kube,
		Registry:   e.Registry.TLSHost,
		RegistryCA: ca,
		Mirrors:    e.clusterMirrors,
		ClusterDNS: ClusterDNS,
		PauseImage: e.Images.Pause,
	}); err != nil {
		return err
	}
	for _, n := range e.Cluster.Nodes {
		fmt.Fprintf(os.Stdout, "e2e: real node %s (%s) Ready %.1fs after its kubelet started\n", n.Name(), n.Address(), n.Ready.Seconds())
	}
	return nil
}

func (e *Env) installAddons(ctx context.Context) error {
	if err := addons.KubeProxy(ctx, e.Kube, e.ClusterImages.KubeProxy, e.ControlPlane.APIServer.URL, node.ClusterPodCIDR, ClusterNodes); err != nil {
		return err
	}
	return addons.CoreDNS(ctx, e.Kube, e.ClusterImages.CoreDNS, ClusterDNS)
}

// crossplaneInstallTimeout bounds helm and Crossplane's pods becoming Available.
const crossplaneInstallTimeout = 4 * time.Minute

// installCrossplane installs Crossplane's chart from the pinned module with the lane's image
// (by digest), trusting the registry's CA, waits until Crossplane and its RBAC manager are
// Available (their init container has installed Crossplane's CRDs by then), and applies
// example/rbac.yaml, the ClusterRole aggregated to Crossplane's that the composed kinds need.
func (e *Env) installCrossplane(ctx context.Context) error {
	if err := e.Kube.EnsureNamespace(ctx, crossplane.Namespace, nil); err != nil {
		return err
	}
	cm, err := kube.ToUnstructured(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: registryCAConfigMap, Namespace: crossplane.Namespace},
		Data:       map[string]string{"ca.crt": string(e.RegistryCA)},
	})
	if err != nil {
		return err
	}
	if _, err := e.Kube.Apply(ctx, cm); err != nil {
		return err
	}
	args := []string{}
	if e.CrossplaneDebug {
		args = append(args, "--debug")
	}
	args = append(args, e.CrossplaneArgs...)
	out, err := helm.Install(ctx, helm.Release{
		Binary:     filepath.Join(e.BinDir, "helm"),
		Kubeconfig: e.ControlPlane.KubeconfigPath(),
		WorkDir:    filepath.Join(e.WorkDir, "helm"),
		Name:       CrossplaneRelease,
		Namespace:  crossplane.Namespace,
		Chart:      filepath.Join(e.BinDir, "crossplane-chart"),
		Timeout:    crossplaneInstallTimeout,
		Values: map[string]any{
			"image":                  map[string]any{"repository": e.ClusterImages.Crossplane, "ignoreTag": true},
			"args":                   args,
			"registryCaBundleConfig": map[string]any{"name": registryCAConfigMap, "key": "ca.crt"},
			"metrics":                map[string]any{"enabled": true},
			// Nothing activated: the provider declares safe-start, so it runs no pod until
			// the platform's ManagedResourceActivationPolicy activates the Instance
			// (TestClusterProviderActivation). The chart's default, ["*"], activates every
			// managed resource of every provider.
			"provider": map[string]any{"defaultActivations": []any{}},
		},
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.LogDir, "helm-crossplane.log"), []byte(out), 0o600); err != nil {
		return errors.Wrap(err, "cannot write helm's output")
	}
	for _, d := range []string{"crossplane", "crossplane-rbac-manager"} {
		if err := addons.WaitAvailable(ctx, e.Kube, crossplane.Namespace, d, crossplaneInstallTimeout); err != nil {
			return err
		}
	}
	// What docs/operations.md tells a platform to apply beside the chart: the chart's
	// ClusterRole lacks the kinds a Memcached composes (NetworkPolicies, PodDisruptionBudgets…).
	_, err = e.Kube.ApplyFile(ctx, filepath.Join(e.RepoRoot, "example", "rbac.yaml"))
	return err
}

// packageTimeout bounds a package becoming Healthy: pulled, unpacked, its runtime pod Ready.
const packageTimeout = 4 * time.Minute

// installPackages installs the function and the provider as a platform team does: a Function
// and a Provider naming their packages by digest, the provider with a DeploymentRuntimeConfig
// that passes its flags and names its ServiceAccount, which the provider's control-plane
// ClusterRole is bound to. Crossplane's Default runtime makes their Deployments, Services and
// certificates; both must become Healthy (the provider with no pod: nothing activates it).
func (e *Env) installPackages(ctx context.Context) error {
	providerPkg, err := e.Registry.Push(ctx, e.ProviderXPKG, "example/"+provider.Name, "e2e")
	if err != nil {
		return errors.Wrap(err, "cannot push the provider's package (make provider-xpkg)")
	}
	e.ProviderPackage = e.ClusterRef(providerPkg)
	args := make([]any, 0, len(e.ProviderArgs))
	for _, a := range e.ProviderArgs {
		args = append(args, a)
	}
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": FunctionGVK.GroupVersion().String(), "kind": FunctionGVK.Kind,
			"metadata": map[string]any{"name": FunctionName},
			"spec":     map[string]any{"package": e.Package},
		}},
		{Object: map[string]any{
			"apiVersion": deploymentRuntimeConfigGVK.GroupVersion().String(), "kind": deploymentRuntimeConfigGVK.Kind,
			"metadata": map[string]any{"name": provider.Name},
			"spec": map[string]any{
				"serviceAccountTemplate": map[string]any{"metadata": map[string]any{"name": provider.Name}},
				"deploymentTemplate": map[string]any{"spec": map[string]any{
					"selector": map[string]any{},
					"template": map[string]any{"spec": map[string]any{
						"containers": []any{map[string]any{"name": "package-runtime", "args": args}},
					}},
				}},
			},
		}},
		{Object: map[string]any{
			"apiVersion": provider.ProviderGVK.GroupVersion().String(), "kind": provider.ProviderGVK.Kind,
			"metadata": map[string]any{"name": provider.Name},
			"spec": map[string]any{
				"package":          e.ProviderPackage,
				"runtimeConfigRef": map[string]any{"name": provider.Name},
			},
		}},
	}
	for _, o := range objs {
		if _, err := e.Kube.Apply(ctx, o); err != nil {
			return err
		}
	}
	role, err := e.Kube.ApplyFile(ctx, filepath.Join(e.RepoRoot, "package-provider", "rbac", "control-plane-clusterrole.yaml"))
	if err != nil || len(role) != 1 {
		return errors.Errorf("cannot apply the provider's control-plane ClusterRole: %v", err)
	}
	b, err := kube.ToUnstructured(&rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: role[0].GetName()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role[0].GetName()},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: crossplane.Namespace, Name: provider.Name}},
	})
	if err != nil {
		return err
	}
	if _, err := e.Kube.Apply(ctx, b); err != nil {
		return err
	}
	healthy := map[string]string{"Installed": "True", "Healthy": "True"}
	if _, err := crossplane.WaitConditions(ctx, e.Kube, packageTimeout, FunctionGVK, "", FunctionName, healthy); err != nil {
		return err
	}
	if _, err := crossplane.WaitConditions(ctx, e.Kube, packageTimeout, provider.ProviderGVK, "", provider.Name, healthy); err != nil {
		return err
	}
	// The Instance's CRD waits for its activation.
	return crossplane.WaitEstablished(ctx, e.Kube, provider.ConfigCRDs()...)
}
