package instance

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpfake "github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kube"
)

const kubeconfig = `apiVersion: v1
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

func clusterProviderConfig(source xpv2.CredentialsSource) *v1alpha1.ClusterProviderConfig {
	pc := &v1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pc.Spec.Credentials.Source = source
	if source == xpv2.CredentialsSourceSecret {
		pc.Spec.Credentials.SecretRef = &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"}
	}
	return pc
}

func credentials(namespace, kubeconfig string) *corev1.Secret {
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
	identity := &rest.Config{Host: "https://control-plane:443"}
	byRef := func(ref xpv2.ProviderConfigReference) func(*v1alpha1.Instance) {
		return func(i *v1alpha1.Instance) { i.Spec.ProviderConfigReference = &ref }
	}
	defaultRef := byRef(xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"})

	type args struct {
		objs      []client.Object
		usage     resource.ModernTracker
		newClient error
		cr        *v1alpha1.Instance
	}
	type want struct {
		host   string
		err    string
		usages []xpv2.ProviderConfigReference
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"ClusterProviderConfigSecret": {
			reason: "A ClusterProviderConfig's kubeconfig Secret reaches the target cluster, and the use is recorded in the Instance's namespace.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret), credentials("crossplane-system", kubeconfig)},
				cr:   instance(defaultRef),
			},
			want: want{host: "https://target.example.com:6443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"ProviderConfigSecret": {
			reason: "A namespaced ProviderConfig reads its Secret from the Instance's namespace.",
			args: args{
				objs: []client.Object{
					&v1alpha1.ProviderConfig{
						ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "edge"},
						Spec: v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.ProviderCredentials{
							Source:    xpv2.CredentialsSourceSecret,
							SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "target"}, Key: "kubeconfig"},
						}},
					},
					credentials("platform", kubeconfig),
				},
				cr: instance(byRef(xpv2.ProviderConfigReference{Kind: v1alpha1.ProviderConfigKind, Name: "edge"})),
			},
			want: want{host: "https://target.example.com:6443", usages: []xpv2.ProviderConfigReference{{Kind: "ProviderConfig", Name: "edge"}}},
		},
		"InjectedIdentity": {
			reason: "InjectedIdentity runs Memcached in the provider's own cluster, as the provider.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity)},
				cr:   instance(defaultRef),
			},
			want: want{host: "https://control-plane:443", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
		"MissingProviderConfig": {
			reason: "A missing config is named; the usage is recorded first, so the config cannot be deleted from under an Instance that retries.",
			args:   args{cr: instance(defaultRef)},
			want: want{
				err:    `cannot get ClusterProviderConfig "default": clusterproviderconfigs.memcached.example.com "default" not found`,
				usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}},
			},
		},
		"MissingSecret": {
			reason: "A missing credentials Secret is named with its namespace.",
			args:   args{objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret)}, cr: instance(defaultRef)},
			want: want{
				err:    `credentials Secret crossplane-system/target: cannot get credentials secret: secrets "target" not found`,
				usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}},
			},
		},
		"BadKubeconfig": {
			reason: "A bad kubeconfig names the Secret and key it came from.",
			args: args{
				objs: []client.Object{clusterProviderConfig(xpv2.CredentialsSourceSecret), credentials("crossplane-system", "{not yaml")},
				cr:   instance(defaultRef),
			},
			want: want{
				err:    `invalid kubeconfig in Secret crossplane-system/target key "kubeconfig": cannot parse kubeconfig: yaml: line 1: did not find expected ',' or '}'`,
				usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}},
			},
		},
		"NoProviderConfigRef": {
			reason: "Without a providerConfigRef (the CRD defaults one) there is nothing to track or connect with.",
			args:   args{cr: instance()},
			want:   want{err: "cannot track ProviderConfig usage: managed resource does not reference a ProviderConfig"},
		},
		"TrackError": {
			reason: "A usage that cannot be recorded stops the connection.",
			args: args{
				usage: resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return errBoom }),
				cr:    instance(defaultRef),
			},
			want: want{err: "cannot track ProviderConfig usage: boom"},
		},
		"NewClientError": {
			reason: "A client that cannot be built is an error too.",
			args: args{
				objs:      []client.Object{clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity)},
				newClient: errBoom,
				cr:        instance(defaultRef),
			},
			want: want{err: "boom", usages: []xpv2.ProviderConfigReference{{Kind: "ClusterProviderConfig", Name: "default"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kc := controlPlane(t, tc.args.objs...)
			usage := tc.args.usage
			if usage == nil {
				usage = resource.NewProviderConfigUsageTracker(kc, &v1alpha1.ProviderConfigUsage{})
			}
			var host string
			c := &Connector{
				Kube: kc, Usage: usage, Identity: identity, Settings: settings(t),
				NewClient: func(rc *rest.Config) (client.Client, error) {
					host = rc.Host
					if tc.args.newClient != nil {
						return nil, tc.args.newClient
					}
					return kube.New(rc)
				},
			}
			ec, err := c.Connect(context.Background(), tc.args.cr)
			got := want{host: host, err: errString(err), usages: usages(t, kc)}
			if err != nil {
				got.host = ""
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want, +got:\n%s", tc.reason, diff)
			}
			if err == nil {
				if _, ok := ec.(*External); !ok {
					t.Errorf("\n%s\nConnect(...) = %T, want *External", tc.reason, ec)
				}
			}
		})
	}
}

// reconciler is the managed reconciler as Setup builds it, over a fake control plane and a
// fake target cluster.
func reconciler(t *testing.T, cp client.Client, target client.Client) *managed.Reconciler {
	t.Helper()
	mgr := &xpfake.Manager{Client: cp, Scheme: cp.Scheme()}
	return managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.InstanceGroupVersionKind),
		ReconcilerOptions(&Connector{
			Kube:      cp,
			Usage:     resource.NewProviderConfigUsageTracker(cp, &v1alpha1.ProviderConfigUsage{}),
			NewClient: func(*rest.Config) (client.Client, error) { return target, nil },
			Identity:  &rest.Config{Host: "https://control-plane:443"},
			Settings:  settings(t),
		}, time.Minute)...)
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
			want:     live{Replicas: 3, Image: "memcached:1.6.39-alpine", Service: true, PDB: true, OwnedByUs: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cp := controlPlane(t, tc.instance, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
			target := cluster(interceptor.Funcs{})
			r := reconciler(t, cp, target)

			// Create, then observe the result.
			for range 2 {
				if _, err := r.Reconcile(ctx, req); err != nil {
					t.Fatalf("Reconcile(...): %v", err)
				}
			}
			if got := observe(t, target); !got.OwnedByUs || !got.Service || !got.PDB {
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

func TestPollsSoonUntilAvailable(t *testing.T) {
	// The provider does not watch target clusters, so it polls: every UnavailablePoll while
	// the Instance is not Available, so that a rollout's end shows within seconds, and every
	// poll interval once it is.
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "platform", Name: "sessions"}}
	i := instance(func(i *v1alpha1.Instance) {
		i.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: v1alpha1.ClusterProviderConfigKind, Name: "default"}
		i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	cp := controlPlane(t, i, clusterProviderConfig(xpv2.CredentialsSourceInjectedIdentity))
	target := cluster(interceptor.Funcs{})
	r := reconciler(t, cp, target)
	reconcileAfter := func() (time.Duration, string) {
		t.Helper()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			t.Fatalf("Reconcile(...): %v", err)
		}
		got := &v1alpha1.Instance{}
		if err := cp.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		return res.RequeueAfter, string(got.GetCondition(v1alpha1.TypeAvailable).Reason)
	}

	reconcileAfter() // Creates the Memcached.
	if after, reason := reconcileAfter(); after != UnavailablePoll || reason != "Creating" {
		t.Errorf("while Creating: requeue after %v (Available reason %q), want %v", after, reason, UnavailablePoll)
	}
	rollout(3)(t, target)
	if after, reason := reconcileAfter(); after != time.Minute || reason != "Available" {
		t.Errorf("once Available: requeue after %v (Available reason %q), want the poll interval, 1m", after, reason)
	}
	rollout(2)(t, target)
	if after, reason := reconcileAfter(); after != UnavailablePoll || reason != "Degraded" {
		t.Errorf("when Degraded: requeue after %v (Available reason %q), want %v", after, reason, UnavailablePoll)
	}
}

func TestPollInterval(t *testing.T) {
	ready := instance(func(i *v1alpha1.Instance) { i.SetConditions(xpv2.Available()) })
	creating := instance(func(i *v1alpha1.Instance) { i.SetConditions(xpv2.Creating()) })
	cases := map[string]struct {
		reason string
		mg     resource.Managed
		poll   time.Duration
		want   time.Duration
	}{
		"Ready":             {reason: "A Ready Instance is polled at the poll interval.", mg: ready, poll: time.Minute, want: time.Minute},
		"NotReady":          {reason: "An Instance that is not Ready is polled soon.", mg: creating, poll: time.Minute, want: UnavailablePoll},
		"NoCondition":       {reason: "An Instance never observed is polled soon.", mg: instance(), poll: time.Minute, want: UnavailablePoll},
		"ShortPollInterval": {reason: "A poll interval shorter than UnavailablePoll is kept.", mg: creating, poll: time.Second, want: time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PollInterval(tc.mg, tc.poll); got != tc.want {
				t.Errorf("\n%s\nPollInterval(..., %v) = %v, want %v", tc.reason, tc.poll, got, tc.want)
			}
		})
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
	target := cluster(readOnly(t))
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
	if err := Setup(mgr, o); err != nil {
		t.Errorf("Setup(...): %v", err)
	}
}
