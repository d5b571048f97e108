package instance

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpfake "github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/clients/cluster"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/resolve"
)

const targetKubeconfig = `apiVersion: v1
kind: Config
current-context: target
contexts:
- name: target
  context: {cluster: target, user: admin}
clusters:
- name: target
  cluster: {server: 'https://target.example.com:6443', certificate-authority-data: Y2E=}
users:
- name: admin
  user: {token: s3cr3t}
`

const insecureKubeconfig = `apiVersion: v1
kind: Config
current-context: target
contexts:
- name: target
  context: {cluster: target, user: admin}
clusters:
- name: target
  cluster: {server: 'https://target.example.com:6443', insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: s3cr3t}
`

// controlPlane is the cluster the provider runs in, holding Instances, provider configs,
// usages and Secrets.
func controlPlane(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Instance{}).Build()
}

// clusterProviderConfig is the ClusterProviderConfig default, which lets Instances place
// objects in team-a (where every Instance of these tests runs its Memcached) beside their
// own namespace, changed by mods.
func clusterProviderConfig(source xpv2.CredentialsSource, mods ...func(*v1alpha1.ClusterProviderConfig)) *v1alpha1.ClusterProviderConfig {
	pc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pc.Spec.Credentials.Source = source
	pc.Spec.Placement.AllowedNamespaces = []string{"team-a"}
	for _, m := range mods {
		m(pc)
	}
	if source == xpv2.CredentialsSourceSecret {
		pc.Spec.Credentials.SecretRef = &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"}
	}
	return pc
}

// namespace is a control-plane namespace with labels.
func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// policy is a PolicySource of fixed settings, or of an error.
type policy struct {
	s   resolve.Settings
	err error
}

func (p policy) Settings(context.Context) (resolve.Settings, error) { return p.s, p.err }

// connector is the Connector as Setup builds it, over a fake control plane whose objects are
// cp's, reaching the target cluster tg (recording the host of the configuration it was
// made from) under policy s.
func connector(t *testing.T, cp client.Client, tg Target, s PolicySource, host *string, dropped *[]cluster.Key) *Connector {
	t.Helper()
	return &Connector{
		Kube:     cp,
		Metadata: cp,
		Usage:    resource.NewProviderConfigUsageTracker(cp, &v1alpha1.ProviderConfigUsage{}),
		Identity: &rest.Config{Host: "https://control-plane:443"},
		Clusters: func(_ cluster.Key, _ string, _ types.NamespacedName, config func() (*rest.Config, error)) (Target, error) {
			rc, err := config()
			if err != nil {
				return nil, err
			}
			if host != nil {
				*host = rc.Host
			}
			return tg, nil
		},
		Drop: func(k cluster.Key) {
			if dropped != nil {
				*dropped = append(*dropped, k)
			}
		},
		Policy:  s,
		Tenancy: Tenancy{Metadata: cp, ControlPlaneNamespaces: []string{"crossplane-system"}},
	}
}

func kubeconfigSecret(namespace, kubeconfig string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "target"}, Data: map[string][]byte{"kubeconfig": []byte(kubeconfig)}}
}

// usages lists the provider-config usages recorded in namespace platform.
func usages(t *testing.T, c client.Client) []xpv2.ProviderConfigReference {
	t.Helper()
	l := &v1alpha1.ProviderConfigUsageList{}
	if err := c.List(context.Background(), l, client.InNamespace("platform")); err != nil {
		t.Fatal(err)
	}
	var refs []xpv2.ProviderConfigReference
	for _, u := range l.Items {
		ref := u.GetProviderConfigReference()
		if u.Labels[xpv2.LabelKeyProviderName] != ref.Name || u.Labels[xpv2.LabelKeyProviderKind] != ref.Kind {
			t.Errorf("usage %s is labelled %v, which does not match its reference %v: its config would not count it", u.Name, u.Labels, ref)
		}
		if u.ResourceReference.Kind != v1alpha1.InstanceKind || u.ResourceReference.Name != "sessions" {
			t.Errorf("usage %s references %v, not Instance sessions", u.Name, u.ResourceReference)
		}
		refs = append(refs, ref)
	}
	return refs
}

func TestConnect(t *testing.T) {
	byRef := func(ref xpv2.ProviderConfigReference) func(*v1alpha1.Instance) {
		return func(i *v1alpha1.Instance) { i.Spec.ProviderConfigReference = &ref }
	}
	defaultRef := byRef(xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"})
	edgeRef := byRef(xpv2.ProviderConfigReference{Kind: v1alpha1.ProviderConfigKind, Name: "edge"})
	inNamespace := func(ns string) func(*v1alpha1.Instance) {
		return func(i *v1alpha1.Instance) { i.Spec.ForProvider.Namespace = ns }
	}
	edge := &v1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "edge"},
		Spec: v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.ProviderCredentials{
			Source:    xpv2.CredentialsSourceSecret,
			SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "target"}, Key: "kubeconfig"},
		}},
	}
	selecting := func(labels map[string]string) func(*v1alpha1.ClusterProviderConfig) {
		return func(pc *v1alpha1.ClusterProviderConfig) {
			pc.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: labels}
		}
	}
	allowing := func(ns ...string) func(*v1alpha1.ClusterProviderConfig) {
		return func(pc *v1alpha1.ClusterProviderConfig) { pc.Spec.Placement.AllowedNamespaces = ns }
	}
	only := func(refs ...cachev1alpha1.ProviderConfigReference) policy {
		s, err := resolve.NewSettings(&v1beta1.Input{Policy: v1beta1.Policy{AllowedProviderConfigs: refs}})
		if err != nil {
			t.Fatal(err)
		}
		return policy{s: s}
	}
	defaultPolicy := policy{s: settings(t)}
	unreachable := func(msg string) *xpv2.Condition {
		_, a := remote.Conditions(readiness.Condition{Reason: v1alpha1.ReasonUnreachable, Message: msg}, 2)
		return &a
	}

	type args struct {
		objs   []client.Object
		usage  resource.ModernTracker
		policy PolicySource
		cr     *v1alpha1.Instance
	}
	type want struct {
		host      string
		err       string
		refused   []string
		usages    []xpv2.ProviderConfigReference
		dropped   []cluster.Key
		available *xpv2.Condition
		adoption  bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"ClusterProviderConfigSecret": {
			reason: "A ClusterProviderConfig's kubeconfig Secret reaches the target cluster, and the use is recorded in the Instance's namespace.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret), kubeconfigSecret("crossplane-system", targetKubeconfig)},
				cr:   instance(defaultRef),
			},
			want: want{host: "https://target.example.com:6443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"ProviderConfigSecret": {
			reason: "A namespaced ProviderConfig reads its Secret from the Instance's namespace, and may place objects wherever its own credentials reach.",
			args:   args{objs: []client.Object{edge, kubeconfigSecret("platform", targetKubeconfig)}, cr: instance(edgeRef, inNamespace("anywhere"))},
			want:   want{host: "https://target.example.com:6443", usages: []xpv2.ProviderConfigReference{{Kind: "ProviderConfig", Name: "edge"}}},
		},
		"ProviderConfigInsecure": {
			reason: "A namespaced ProviderConfig's kubeconfig must verify TLS; the refusal is the Instance's Available condition too.",
			args:   args{objs: []client.Object{edge, kubeconfigSecret("platform", insecureKubeconfig)}, cr: instance(edgeRef)},
			want: want{
				err:       `invalid kubeconfig in Secret platform/target key "kubeconfig": cluster "target" sets insecure-skip-tls-verify, which a namespaced ProviderConfig may not: embed the server's CA in certificate-authority-data`,
				usages:    []xpv2.ProviderConfigReference{{Kind: "ProviderConfig", Name: "edge"}},
				available: unreachable(`invalid kubeconfig in Secret platform/target key "kubeconfig": cluster "target" sets insecure-skip-tls-verify, which a namespaced ProviderConfig may not: embed the server's CA in certificate-authority-data`),
			},
		},
		"InjectedIdentity": {
			reason: "InjectedIdentity runs Memcached in the provider's own cluster, as the provider.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity)}, cr: instance(defaultRef)},
			want:   want{host: "https://control-plane:443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"MissingProviderConfig": {
			reason: "A missing config is named, and the Instance says it cannot observe; no usage is recorded for a config that cannot yet be judged.",
			args:   args{cr: instance(defaultRef)},
			want: want{
				err:       `cannot get ClusterProviderConfig "default": clusterproviderconfigs.memcached.example.com "default" not found`,
				available: unreachable(`cannot get ClusterProviderConfig "default": clusterproviderconfigs.memcached.example.com "default" not found`),
			},
		},
		"MissingSecret": {
			reason: "A deleted credentials Secret is named with its namespace, and the connection made from it is dropped.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret)}, cr: instance(defaultRef)},
			want: want{
				err:       `cannot get credentials Secret crossplane-system/target: secrets "target" not found`,
				usages:    []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}},
				dropped:   []cluster.Key{{Kind: "ClusterProviderConfig", Name: "default"}},
				available: unreachable(`cannot get credentials Secret crossplane-system/target: secrets "target" not found`),
			},
		},
		"NamespaceSelected": {
			reason: "A ClusterProviderConfig serves the namespaces its selector selects.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, selecting(map[string]string{"memcached": "workload"})), namespace("platform", map[string]string{"memcached": "workload"})},
				cr:   instance(defaultRef),
			},
			want: want{host: "https://control-plane:443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"NamespaceNotSelected": {
			reason: "An Instance in a namespace the selector does not select is refused, naming the config.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, selecting(map[string]string{"memcached": "workload"})), namespace("platform", nil)},
				cr:   instance(defaultRef),
			},
			want: want{
				refused: []string{`spec.providerConfigRef: Invalid value: "ClusterProviderConfig/default": is not allowed from namespace platform`},
			},
		},
		"NamespaceNotSelectedLearnsNothing": {
			reason: "A refused tenant's Instance records no usage (which would keep the platform from deleting a config the tenant may not use) and reads nothing of the config's credentials: its refusal says not allowed, never the config's Secret (missing here) or the host it reaches.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret, selecting(map[string]string{"memcached": "workload"})), namespace("platform", nil)},
				cr:   instance(defaultRef),
			},
			want: want{
				refused: []string{`spec.providerConfigRef: Invalid value: "ClusterProviderConfig/default": is not allowed from namespace platform`},
			},
		},
		"NamespaceNotSelectedSecretPresent": {
			reason: "With its Secret present the refused Instance still connects to nothing.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret, selecting(map[string]string{"memcached": "workload"})), namespace("platform", nil), kubeconfigSecret("crossplane-system", targetKubeconfig)},
				cr:   instance(defaultRef),
			},
			want: want{
				refused: []string{`spec.providerConfigRef: Invalid value: "ClusterProviderConfig/default": is not allowed from namespace platform`},
			},
		},
		"PlacementOwnNamespace": {
			reason: "By default an Instance may place objects only in the target namespace named like its own.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, allowing())}, cr: instance(defaultRef, inNamespace(""))},
			want:   want{host: "https://control-plane:443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"PlacementOtherNamespace": {
			reason: "Another team's namespace is refused, saying which namespaces are allowed.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, allowing("cache"))}, cr: instance(defaultRef, inNamespace("team-b"))},
			want: want{
				refused: []string{`spec.forProvider.namespace: Invalid value: "team-b": ClusterProviderConfig default allows only namespace platform (the Instance's own) and cache (placement.allowedNamespaces)`},
			},
		},
		"PlacementAnyNamespace": {
			reason: "A placement allowing * allows any namespace but the control plane's.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, allowing("*"))}, cr: instance(defaultRef, inNamespace("team-b"))},
			want:   want{host: "https://control-plane:443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"ControlPlaneNamespace": {
			reason: "Acting as the provider in the control plane, * does not reach the control plane's own namespaces.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, allowing("*"))}, cr: instance(defaultRef, inNamespace("crossplane-system"))},
			want: want{
				refused: []string{`spec.forProvider.namespace: Invalid value: "crossplane-system": ClusterProviderConfig default acts as the provider in the control plane, whose own namespace crossplane-system it allows only when placement.allowedNamespaces lists it by name`},
			},
		},
		"ControlPlaneNamespaceListed": {
			reason: "A control-plane namespace the placement lists by name is the platform's explicit choice.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, allowing("kube-system"))}, cr: instance(defaultRef, inNamespace("kube-system"))},
			want:   want{host: "https://control-plane:443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"NotAllowedByPolicy": {
			reason: "The platform's policy.allowedProviderConfigs holds for Instances as for claims.",
			args: args{
				objs:   []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity)},
				policy: only(cachev1alpha1.ProviderConfigReference{Name: "workload-eu"}),
				cr:     instance(defaultRef),
			},
			want: want{
				refused: []string{`spec.providerConfigRef: Invalid value: "ClusterProviderConfig/default": is not allowed; policy.allowedProviderConfigs allows ClusterProviderConfig/workload-eu`},
			},
		},
		"PolicyError": {
			reason: "A policy the provider cannot read is the platform's mistake: nothing is judged against a policy nobody meant.",
			args: args{
				objs:   []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity)},
				policy: policy{err: errBoom},
				cr:     instance(defaultRef),
			},
			want: want{err: "boom"},
		},
		"DeletingWithoutPolicy": {
			reason: "Deleting deletes only what is the Instance's own: a policy that cannot be read does not keep an Instance its config allows from going.",
			args: args{
				objs:   []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity)},
				policy: policy{err: errBoom},
				cr:     instance(defaultRef, deleted),
			},
			want: want{host: "https://control-plane:443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"DeletingRefused": {
			reason: "A deleted Instance its config no longer allows is let go: refused, and no usage recorded; the connection is looked up only to stop waking it.",
			args: args{
				objs:   []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, allowing())},
				policy: policy{err: errBoom},
				cr:     instance(defaultRef, deleted),
			},
			want: want{
				host:    "https://control-plane:443",
				refused: []string{`spec.forProvider.namespace: Invalid value: "team-a": ClusterProviderConfig default allows only namespace platform (the Instance's own) (placement.allowedNamespaces)`},
			},
		},
		"AdoptionAllowed": {
			reason: "Whether Instances may adopt is the config's spec.adoption.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, func(pc *v1alpha1.ClusterProviderConfig) { pc.Spec.Adoption = v1alpha1.AdoptionAllowed })},
				cr:   instance(defaultRef),
			},
			want: want{host: "https://control-plane:443", adoption: true, usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"AdoptionAllowedByOwnProviderConfig": {
			reason: "A tenant's own ProviderConfig decides adoption for the cluster its own credentials reach.",
			args: args{
				objs: []client.Object{func() client.Object {
					pc := edge.DeepCopy()
					pc.Spec.Adoption = v1alpha1.AdoptionAllowed
					return pc
				}(), kubeconfigSecret("platform", targetKubeconfig)},
				cr: instance(edgeRef),
			},
			want: want{host: "https://target.example.com:6443", adoption: true, usages: []xpv2.ProviderConfigReference{{Kind: "ProviderConfig", Name: "edge"}}},
		},
		"NoProviderConfigRef": {
			reason: "Without a providerConfigRef (the CRD defaults one) there is nothing to connect with.",
			args:   args{cr: instance()},
			want:   want{err: "spec.providerConfigRef is not set", available: unreachable("spec.providerConfigRef is not set")},
		},
		"TrackError": {
			reason: "A usage that cannot be recorded stops the connection before the credentials are read.",
			args: args{
				objs:  []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret), kubeconfigSecret("crossplane-system", targetKubeconfig)},
				usage: resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return errBoom }),
				cr:    instance(defaultRef),
			},
			want: want{err: "cannot track ProviderConfig usage: boom"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kc := controlPlane(t, tc.args.objs...)
			var host string
			var dropped []cluster.Key
			p := tc.args.policy
			if p == nil {
				p = defaultPolicy
			}
			c := connector(t, kc, newTarget(targetCluster(interceptor.Funcs{})), p, &host, &dropped)
			if tc.args.usage != nil {
				c.Usage = tc.args.usage
			}
			ec, err := c.Connect(context.Background(), tc.args.cr)
			got := want{host: host, err: errString(err), usages: usages(t, kc), dropped: dropped}
			if e, ok := ec.(*External); ok && e != nil {
				for _, r := range e.Refused {
					got.refused = append(got.refused, r.Error())
				}
				got.adoption = e.Adoption.Allowed
			}
			if a := tc.args.cr.GetCondition(v1alpha1.TypeAvailable); a.Reason != "" {
				got.available = &a
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty(), cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// reconciler is the managed reconciler as Setup builds it with the provider's default
// flags, over a fake control plane and a fake target cluster.
func reconciler(t *testing.T, cp client.Client, target client.Client) *managed.Reconciler {
	t.Helper()
	mgr := &xpfake.Manager{Client: cp, Scheme: cp.Scheme()}
	return managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.InstanceGroupVersionKind),
		ReconcilerOptions(connector(t, cp, newTarget(target), policy{s: settings(t)}, nil, nil), time.Minute, Options{Settled: 10 * time.Minute, MinPoll: 10 * time.Second})...)
}

func TestMinPoll(t *testing.T) {
	// Instances share the provider's reconciles: a crossplane.io/poll-interval annotation
	// below --min-poll (10s here) is raised to it, so that a few Instances cannot take most
	// of them; one above it, or none, is left alone.
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	type want struct {
		min, max time.Duration
	}
	cases := map[string]struct {
		reason string
		args   map[string]string
		want   want
	}{
		"BelowFloor": {
			reason: "An Instance that asks to be polled every millisecond is polled every --min-poll.",
			args:   map[string]string{"crossplane.io/poll-interval": "1ms"},
			want:   want{min: 10 * time.Second, max: 10 * time.Second},
		},
		"AboveFloor": {
			reason: "An annotation above --min-poll is obeyed, less up to a tenth at random.",
			args:   map[string]string{"crossplane.io/poll-interval": "30s"},
			want:   want{min: 27 * time.Second, max: 30 * time.Second},
		},
		"NotAnnotated": {
			reason: "An Instance on its way up without an annotation is polled every --poll.",
			want:   want{min: 54 * time.Second, max: time.Minute},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i := instance(func(i *v1alpha1.Instance) {
				i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
				i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
				meta.AddAnnotations(i, tc.args)
			})
			i.Generation = 0
			cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
			r := reconciler(t, cp, targetCluster(interceptor.Funcs{}))

			// Create, then observe: the observation requeues after the poll interval.
			var got reconcile.Result
			for range 2 {
				var err error
				if got, err = r.Reconcile(ctx, req); err != nil {
					t.Fatalf("Reconcile(...): %v", err)
				}
			}
			if got.RequeueAfter < tc.want.min || got.RequeueAfter > tc.want.max {
				t.Errorf("\n%s\nReconcile(...) requeues after %v, want between %v and %v", tc.reason, got.RequeueAfter, tc.want.min, tc.want.max)
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	// The Instance controller end to end, on crossplane-runtime's managed reconciler: it
	// creates, reports and deletes through the external client, and management policies
	// without Delete leave the Memcached running when the Instance goes.
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	mr := func(policies ...xpv2.ManagementAction) *v1alpha1.Instance {
		i := instance(func(i *v1alpha1.Instance) {
			i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
			i.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "sessions-memcached"}
			i.Spec.ManagementPolicies = policies
		})
		i.Generation = 0
		return i
	}
	cases := map[string]struct {
		reason   string
		instance *v1alpha1.Instance
		want     live
	}{
		"Delete": {
			reason:   "With every management policy, deleting the Instance deletes the Memcached.",
			instance: mr(xpv2.ManagementActionAll),
			want:     live{},
		},
		"Orphan": {
			reason:   "Without the Delete policy (v2's deletionPolicy: Orphan), the Memcached keeps running.",
			instance: mr(xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize),
			want:     live{Replicas: 3, Image: resolve.DefaultImage, Service: true, PDB: true, Ours: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cp := controlPlane(t, tc.instance, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
			target := targetCluster(interceptor.Funcs{})
			r := reconciler(t, cp, target)

			// Create, then observe the result.
			for range 2 {
				if _, err := r.Reconcile(ctx, req); err != nil {
					t.Fatalf("Reconcile(...): %v", err)
				}
			}
			if got := observe(t, target); !got.Ours || !got.Service || !got.PDB {
				t.Fatalf("\n%s\nafter Reconcile(...) the target cluster holds %+v, want the Deployment, Service and PodDisruptionBudget", tc.reason, got)
			}
			i := &v1alpha1.Instance{}
			if err := cp.Get(ctx, req.NamespacedName, i); err != nil {
				t.Fatal(err)
			}
			if s := i.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionTrue {
				t.Errorf("\n%s\nSynced = %v (%s), want True", tc.reason, s.Status, s.Message)
			}
			if a := i.GetCondition(v1alpha1.TypeAvailable); a.Reason != "Creating" || a.Message != "creating: 0/3 replicas available" {
				t.Errorf("\n%s\nAvailable = %s %q, want Creating", tc.reason, a.Reason, a.Message)
			}
			secret := &corev1.Secret{}
			if err := cp.Get(ctx, types.NamespacedName{Namespace: "platform", Name: "sessions-memcached"}, secret); err != nil {
				t.Fatalf("\n%s\nconnection secret: %v", tc.reason, err)
			}
			if diff := cmp.Diff("sessions.team-a.svc.cluster.local:11211", string(secret.Data["endpoint"])); diff != "" {
				t.Errorf("\n%s\nconnection secret endpoint: -want, +got:\n%s", tc.reason, diff)
			}

			// Delete the Instance and let the reconciler finish.
			if err := cp.Delete(ctx, i); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := r.Reconcile(ctx, req); err != nil {
					t.Fatalf("Reconcile(...) while deleting: %v", err)
				}
			}
			if err := cp.Get(ctx, req.NamespacedName, &v1alpha1.Instance{}); err == nil {
				t.Errorf("\n%s\nthe Instance is still there after deletion", tc.reason)
			}
			if diff := cmp.Diff(tc.want, observe(t, target)); diff != "" {
				t.Errorf("\n%s\nafter deleting the Instance: -want in the target cluster, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPollIntervalHook(t *testing.T) {
	// Polling is a safety net: an Instance on its way (creating, failing, a spec not yet
	// judged) is polled every --poll, one that has settled every --settled-poll, each less up
	// to a tenth at random so that Instances created together do not poll together; a
	// crossplane.io/poll-interval annotation is obeyed, but never below --min-poll.
	synced := func(i *v1alpha1.Instance) { i.SetConditions(xpv2.ReconcileSuccess()) }
	type args struct {
		settled, minPoll, poll time.Duration
		// expires is when the Instance's TLS certificate expires, from now; zero is none.
		expires  time.Duration
		instance *v1alpha1.Instance
	}
	type want struct {
		min, max time.Duration
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Settled": {
			reason: "An Instance Available and synced at its generation is polled every --settled-poll.",
			args:   args{settled: 10 * time.Minute, poll: time.Minute, instance: instance(was(available), synced)},
			want:   want{min: 9 * time.Minute, max: 10 * time.Minute},
		},
		"Creating": {
			reason: "An Instance whose Memcached is not yet available is polled every --poll, to read its pods' reasons.",
			args:   args{settled: 10 * time.Minute, poll: time.Minute, instance: instance(was(readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/3 replicas available"}), synced)},
			want:   want{min: 54 * time.Second, max: time.Minute},
		},
		"NotSynced": {
			reason: "An Instance whose last reconcile failed has not settled.",
			args: args{settled: 10 * time.Minute, poll: time.Minute, instance: instance(was(available), func(i *v1alpha1.Instance) {
				i.SetConditions(xpv2.ReconcileError(errors.New("boom")))
			})},
			want: want{min: 54 * time.Second, max: time.Minute},
		},
		"NewGeneration": {
			reason: "An Instance Available at an earlier generation has a spec not yet judged.",
			args:   args{settled: 10 * time.Minute, poll: time.Minute, instance: instance(was(available), synced, func(i *v1alpha1.Instance) { i.Generation = 3 })},
			want:   want{min: 54 * time.Second, max: time.Minute},
		},
		"Annotated": {
			reason: "A crossplane.io/poll-interval annotation is obeyed, settled or not.",
			args: args{settled: 10 * time.Minute, poll: 30 * time.Second, instance: instance(was(available), synced, func(i *v1alpha1.Instance) {
				meta.AddAnnotations(i, map[string]string{"crossplane.io/poll-interval": "30s"})
			})},
			want: want{min: 27 * time.Second, max: 30 * time.Second},
		},
		"AnnotatedAtFloor": {
			reason: "The jitter never takes an annotated Instance below --min-poll (which the managed reconciler raised its annotation to).",
			args: args{settled: 10 * time.Minute, minPoll: 10 * time.Second, poll: 11 * time.Second, instance: instance(was(available), synced, func(i *v1alpha1.Instance) {
				meta.AddAnnotations(i, map[string]string{"crossplane.io/poll-interval": "1ms"})
			})},
			want: want{min: 10 * time.Second, max: 11 * time.Second},
		},
		"NotAnnotatedBelowFloor": {
			reason: "--min-poll only bounds annotations: a --poll below it is jittered as usual.",
			args:   args{settled: 10 * time.Minute, minPoll: time.Minute, poll: 30 * time.Second, instance: instance()},
			want:   want{min: 27 * time.Second, max: 30 * time.Second},
		},
		"CertificateExpiresSooner": {
			reason: "A settled Instance whose certificate expires before its next settled poll polls just after it expires, to say so.",
			args:   args{settled: 10 * time.Minute, poll: time.Minute, expires: 3 * time.Minute, instance: instance(was(available), synced)},
			want:   want{min: 2*time.Minute + 40*time.Second, max: 3*time.Minute + 2*time.Second},
		},
		"CertificateExpiresWithinPoll": {
			reason: "A certificate about to expire never makes an Instance poll more often than --poll.",
			args:   args{settled: 10 * time.Minute, poll: time.Minute, expires: 10 * time.Second, instance: instance(was(available), synced)},
			want:   want{min: 54 * time.Second, max: time.Minute},
		},
		"ObserveOnly": {
			reason: "An Instance that only observes judges a Deployment no watch of the provider's sees, so it never settles.",
			args: args{settled: 10 * time.Minute, poll: time.Minute, instance: instance(was(available), synced, func(i *v1alpha1.Instance) {
				i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
			})},
			want: want{min: 54 * time.Second, max: time.Minute},
		},
		"SettledShorter": {
			reason: "A --settled-poll shorter than --poll never makes a settled Instance poll more often.",
			args:   args{settled: 10 * time.Second, poll: time.Minute, instance: instance(was(available), synced)},
			want:   want{min: 54 * time.Second, max: time.Minute},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			expiries := NewExpiries()
			if tc.args.expires != 0 {
				expiries.Set(tc.args.instance.GetUID(), time.Now().Add(tc.args.expires))
			}
			hook := PollIntervalHook(tc.args.settled, tc.args.minPoll, expiries)
			seen := map[time.Duration]bool{}
			for range 100 {
				got := hook(tc.args.instance, tc.args.poll)
				if got < tc.want.min || got > tc.want.max {
					t.Fatalf("\n%s\nPollIntervalHook(%v, %v)(..., %v) = %v, want between %v and %v", tc.reason, tc.args.settled, tc.args.minPoll, tc.args.poll, got, tc.want.min, tc.want.max)
				}
				seen[got] = true
			}
			if len(seen) < 2 {
				t.Errorf("\n%s\nPollIntervalHook(%v, %v)(..., %v) returned one value in 100 calls: no jitter", tc.reason, tc.args.settled, tc.args.minPoll, tc.args.poll)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	// An Instance that cannot be reconciled is retried after 1s, 2s, 4s, ... each jittered to
	// between half and all of it, never after more than --poll; a success starts over.
	r := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	b := NewBackoff(time.Second, time.Minute)
	for n, full := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute} {
		got := b.When(r)
		if got < full/2 || got > full {
			t.Errorf("failure %d: retry after %v, want between %v and %v", n+1, got, full/2, full)
		}
	}
	if got := b.NumRequeues(r); got != 8 {
		t.Errorf("NumRequeues(...) = %d, want 8", got)
	}
	b.Forget(r)
	if got := b.When(r); got > time.Second {
		t.Errorf("after Forget(...): retry after %v, want at most 1s", got)
	}
	other := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "carts"}}
	if got := b.When(other); got > time.Second {
		t.Errorf("another Instance's first failure: retry after %v, want at most 1s", got)
	}
}

func TestReconcileConflict(t *testing.T) {
	// An Instance named like an application that already runs there never touches it:
	// Synced says which object is in the way, and, since the config does not allow
	// adoption (the default), suggests none; nothing is created or changed.
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	i := instance(func(i *v1alpha1.Instance) {
		i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
		i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
	target := targetCluster(interceptor.Funcs{})
	theirDeployment(map[string]string{"app": "shop"})(t, target)
	if _, err := reconciler(t, cp, interceptor.NewClient(target, readOnly(t))).Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile(...): %v", err)
	}
	if err := cp.Get(ctx, req.NamespacedName, i); err != nil {
		t.Fatal(err)
	}
	want := "observe failed: Deployment team-a/sessions exists and is not this Instance's: it has no label memcached.example.com/instance-uid; ClusterProviderConfig default does not allow adoption (its spec.adoption is not Allowed)"
	if s := i.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionFalse || s.Message != want {
		t.Errorf("Synced = %v %q, want False %q", s.Status, s.Message, want)
	}
	if got := observe(t, target); got.Replicas != 5 || got.Ours || got.Service {
		t.Errorf("the target cluster holds %+v; want the application's Deployment as it was, and nothing else", got)
	}
}

func TestReconcileCannotSteal(t *testing.T) {
	// Team b's Instance asking to adopt, under a config that allows adoption, in the target
	// namespace where team a's Instance of the same name runs: team a's Deployment, Service
	// and PodDisruptionBudget stay team a's, unchanged; team b is told whose they are, with
	// no suggestion to adopt; deleting team b's Instance deletes nothing of team a's.
	ctx := context.Background()
	byDefault := func(i *v1alpha1.Instance) {
		i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
		i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		i.Generation = 0
	}
	a := instance(byDefault, func(i *v1alpha1.Instance) { i.Namespace, i.UID = "team-a", "team-a-uid" })
	b := instance(byDefault, size(1), func(i *v1alpha1.Instance) {
		i.Namespace, i.UID = "team-b", "team-b-uid"
		i.Spec.AdoptionPolicy = v1alpha1.AdoptionPolicyAdopt
		i.Spec.ForProvider.Image = "memcached:1.6.38"
	})
	allowing := func(pc *v1alpha1.ClusterProviderConfig) {
		pc.Spec.Adoption = v1alpha1.AdoptionAllowed
		pc.Spec.Placement.AllowedNamespaces = []string{"*"}
	}
	cp := controlPlane(t, a, b, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity, allowing))
	target := targetCluster(interceptor.Funcs{})
	r := reconciler(t, cp, target)
	reqA := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "sessions"}}
	reqB := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-b", Name: "sessions"}}
	for range 2 {
		if _, err := r.Reconcile(ctx, reqA); err != nil {
			t.Fatalf("Reconcile(team a): %v", err)
		}
	}
	teamA := func() map[string]string {
		out := map[string]string{}
		for kind, o := range map[string]client.Object{"Deployment": &appsv1.Deployment{}, "Service": &corev1.Service{}, "PodDisruptionBudget": &policyv1.PodDisruptionBudget{}} {
			if err := target.Get(ctx, key, o); err != nil {
				out[kind] = err.Error()
				continue
			}
			out[kind] = string(o.GetUID()) + " " + o.GetResourceVersion() + " " + o.GetLabels()[v1alpha1.LabelInstanceUID]
		}
		return out
	}
	before := teamA()
	for range 3 {
		if _, err := r.Reconcile(ctx, reqB); err != nil {
			t.Fatalf("Reconcile(team b): %v", err)
		}
	}
	if diff := cmp.Diff(before, teamA()); diff != "" {
		t.Errorf("team a's objects after team b's Instance asked to adopt them: -before, +after:\n%s", diff)
	}
	got := &v1alpha1.Instance{}
	if err := cp.Get(ctx, reqB.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	want := "observe failed: Deployment team-a/sessions exists and is not this Instance's: it belongs to Instance team-a/sessions (memcached.example.com/instance-uid=team-a-uid); " +
		"Service team-a/sessions exists and is not this Instance's: it belongs to Instance team-a/sessions (memcached.example.com/instance-uid=team-a-uid)"
	if s := got.GetCondition(xpv2.TypeSynced); s.Message != want {
		t.Errorf("team b's Synced = %q, want %q", s.Message, want)
	}
	if a := got.GetCondition(v1alpha1.TypeAvailable); a.Reason != v1alpha1.ReasonConflict {
		t.Errorf("team b's Available reason = %q, want Conflict", a.Reason)
	}

	if err := cp.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := r.Reconcile(ctx, reqB); err != nil {
			t.Fatalf("Reconcile(team b) while deleting: %v", err)
		}
	}
	if err := cp.Get(ctx, reqB.NamespacedName, &v1alpha1.Instance{}); err == nil {
		t.Error("team b's Instance is still there after deletion")
	}
	if diff := cmp.Diff(before, teamA()); diff != "" {
		t.Errorf("team a's objects after team b's Instance was deleted: -before, +after:\n%s", diff)
	}
}

func TestReconcileInvalidSpecTouchesNothing(t *testing.T) {
	// The managed reconciler stops at Observe's error: nothing is created, and Synced says
	// which field is wrong.
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	i := instance(size(9), func(i *v1alpha1.Instance) {
		i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
		i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
	target := targetCluster(readOnly(t))
	if _, err := reconciler(t, cp, target).Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile(...): %v", err)
	}
	if err := cp.Get(ctx, req.NamespacedName, i); err != nil {
		t.Fatal(err)
	}
	want := "observe failed: invalid spec, nothing was changed: spec.forProvider.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"
	if s := i.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionFalse || s.Message != want {
		t.Errorf("Synced = %v %q, want False %q", s.Status, s.Message, want)
	}
	if a := i.GetCondition(v1alpha1.TypeAvailable); a.Reason != "InvalidSpec" {
		t.Errorf("Available reason = %q, want InvalidSpec", a.Reason)
	}
	if err := target.Get(ctx, key, &appsv1.Deployment{}); err == nil {
		t.Error("a Deployment exists in the target cluster; want nothing created")
	}
}

func TestSetup(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	// The manager is never started, so its API server need not exist.
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	o := controller.DefaultOptions()
	o.MetricOptions = &controller.MetricOptions{MRMetrics: managed.NewMRMetricRecorder(), MRStateMetrics: statemetrics.NewMRStateMetrics()}
	if err := Setup(mgr, o, Options{Namespace: "crossplane-system", Settled: 10 * time.Minute, MinPoll: 10 * time.Second, Targets: cluster.DefaultLimits()}); err != nil {
		t.Errorf("Setup(...): %v", err)
	}
}
