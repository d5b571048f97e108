package instance

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kubeconfig"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// Every Instance in these tests runs sessions in namespace team-a of the target cluster.
var key = types.NamespacedName{Namespace: "team-a", Name: "sessions"}

var errBoom = errors.New("boom")

func settings(t *testing.T) resolve.Settings {
	t.Helper()
	s, err := resolve.NewSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// instance returns an Instance of size 3 (generation 2), without a NetworkPolicy, changed by mods. It has a UID, as
// the API server would give it, for usages to be named after.
func instance(mods ...func(*v1alpha1.Instance)) *v1alpha1.Instance {
	i := &v1alpha1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "sessions", Generation: 2, UID: "0c4b6a0e-uid"}}
	i.Spec.ForProvider.Namespace = "team-a"
	i.Spec.ForProvider.Size = ptr.To[int32](3)
	// Off unless a test turns it on (secure): the built-in default would render one.
	i.Spec.ForProvider.NetworkPolicy = &cachev1alpha1.NetworkPolicy{Enabled: ptr.To(false)}
	for _, m := range mods {
		m(i)
	}
	return i
}

func size(n int32) func(*v1alpha1.Instance) {
	return func(i *v1alpha1.Instance) { i.Spec.ForProvider.Size = ptr.To(n) }
}

func deleted(i *v1alpha1.Instance) {
	now := metav1.Now()
	i.SetDeletionTimestamp(&now)
}

// available is the verdict on a Memcached whose 3 replicas all serve.
var available = readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "3/3 replicas available"}

// was gives an Instance the conditions an earlier observation left.
func was(c readiness.Condition) func(*v1alpha1.Instance) {
	return func(i *v1alpha1.Instance) { i.SetConditions(conditions(c)...) }
}

// conditions are the Ready and Available conditions an Instance of generation 2 gets for c.
func conditions(c readiness.Condition) []xpv2.Condition {
	r, a := remote.Conditions(c, 2)
	return []xpv2.Condition{r, a}
}

// memcached is what instance() resolves to.
func memcached(t *testing.T) render.Memcached {
	t.Helper()
	m, errs := remote.Memcached(instance(), settings(t))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return m
}

// targetCluster is a target cluster with server-side apply and managed fields, like a real one.
func targetCluster(funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(kubeconfig.Scheme()).WithReturnManagedFields().
		WithTypeConverters(withoutStatus{clientgoapplyconfigurations.NewTypeConverter(clientgoscheme.Scheme)}, managedfields.NewDeducedTypeConverter()).
		WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
}

// withoutStatus drops the empty status the fake client gives every object from a
// NetworkPolicy, whose schema has none, so that the NetworkPolicy is applied with its schema
// as a real API server applies it.
type withoutStatus struct{ managedfields.TypeConverter }

func (c withoutStatus) ObjectToTyped(o runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o); err == nil && u["kind"] == "NetworkPolicy" {
		delete(u, "status")
		o = &unstructured.Unstructured{Object: u}
	}
	return c.TypeConverter.ObjectToTyped(o, opts...)
}

// target is a fake Target over the target cluster c: Watched reads only what is labelled as
// some Instance's, like the provider's watches, and reads through Client are counted.
type target struct {
	c          client.Client
	watchErr   error
	directGets int
	forgotten  []types.NamespacedName
}

func newTarget(c client.Client) *target { return &target{c: c} }

func (t *target) Client() client.Client {
	return interceptor.NewClient(t.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			t.directGets++
			return c.Get(ctx, k, o, opts...)
		},
	})
}

func (t *target) Watched(_ context.Context, _ string, _ types.NamespacedName, _ string) (client.Reader, error) {
	if t.watchErr != nil {
		return nil, t.watchErr
	}
	return watched{t.c}, nil
}

func (t *target) Forget(namespace string, instance types.NamespacedName) {
	t.forgotten = append(t.forgotten, instance)
}

// watched reads what the provider's watches hold: objects labelled as an Instance's, and
// kubernetes.io/tls Secrets.
type watched struct{ client.Reader }

func (w watched) Get(ctx context.Context, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
	if err := w.Reader.Get(ctx, k, o, opts...); err != nil {
		return err
	}
	if _, ok := o.GetLabels()[v1alpha1.LabelInstanceUID]; !ok {
		if s, ok := o.(*corev1.Secret); ok && s.Type == corev1.SecretTypeTLS {
			return nil // The watch of kubernetes.io/tls Secrets holds it.
		}
		return kerrors.NewNotFound(schema.GroupResource{}, k.Name)
	}
	return nil
}

// readOnly fails the test on any write: observing must never change the target cluster.
func readOnly(t *testing.T) interceptor.Funcs {
	fail := func(verb string) error {
		t.Errorf("Observe must not write to the target cluster, but it called %s", verb)
		return errBoom
	}
	return interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return fail("Create")
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return fail("Update")
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return fail("Patch")
		},
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return fail("Apply")
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return fail("Delete")
		},
	}
}

// applied returns a target cluster in which the provider created i's objects, then let
// each change happen, as another actor would.
func applied(t *testing.T, i *v1alpha1.Instance, changes ...func(*testing.T, client.Client)) client.WithWatch {
	t.Helper()
	c := targetCluster(interceptor.Funcs{})
	if _, err := (&External{Target: newTarget(c), Settings: settings(t)}).Create(context.Background(), i); err != nil {
		t.Fatalf("Create(...): %v", err)
	}
	for _, change := range changes {
		change(t, c)
	}
	return c
}

// edit changes a live object as `kubectl edit` (or any controller) would: with an update
// under a field manager of its own.
func edit[T any, P interface {
	*T
	client.Object
}](manager string, f func(P)) func(*testing.T, client.Client) {
	return func(t *testing.T, c client.Client) {
		t.Helper()
		o := P(new(T))
		if err := c.Get(context.Background(), key, o); err != nil {
			t.Fatalf("Get(%T): %v", o, err)
		}
		f(o)
		if err := c.Update(context.Background(), o, client.FieldOwner(manager)); err != nil {
			t.Fatalf("Update(%T): %v", o, err)
		}
	}
}

// rollout sets a Deployment's status as the deployment controller would once available of
// its replicas are available.
func rollout(available int32) func(*testing.T, client.Client) {
	return func(t *testing.T, c client.Client) {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), key, d); err != nil {
			t.Fatalf("Get(Deployment): %v", err)
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
			ReadyReplicas: available, AvailableReplicas: available,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}},
		}
		if err := c.Status().Update(context.Background(), d, client.FieldOwner("kube-controller-manager")); err != nil {
			t.Fatalf("Status().Update(Deployment): %v", err)
		}
	}
}

// stall sets a Deployment's status as the deployment controller does once a rollout has
// exceeded its progress deadline with available of its replicas available.
func stall(available int32) func(*testing.T, client.Client) {
	return func(t *testing.T, c client.Client) {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), key, d); err != nil {
			t.Fatalf("Get(Deployment): %v", err)
		}
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
			ReadyReplicas: available, AvailableReplicas: available,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "sessions-5d8f" has timed out progressing.`},
			},
		}
		if err := c.Status().Update(context.Background(), d, client.FieldOwner("kube-controller-manager")); err != nil {
			t.Fatalf("Status().Update(Deployment): %v", err)
		}
	}
}

// apiServerDefaults fills in what the API server and other controllers add to the objects:
// defaults, a revision annotation, a cluster IP family, a label. None of it is the
// provider's.
func apiServerDefaults(t *testing.T, c client.Client) {
	t.Helper()
	edit("kube-apiserver", func(d *appsv1.Deployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations["deployment.kubernetes.io/revision"] = "1"
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
		p := &d.Spec.Template.Spec
		p.RestartPolicy, p.DNSPolicy, p.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, "default-scheduler"
		p.TerminationGracePeriodSeconds = ptr.To[int64](30)
		for i := range p.Containers {
			p.Containers[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
			p.Containers[i].TerminationMessagePolicy = corev1.TerminationMessageReadFile
			for _, probe := range []*corev1.Probe{p.Containers[i].ReadinessProbe, p.Containers[i].LivenessProbe} {
				if probe != nil {
					probe.SuccessThreshold = 1
				}
			}
		}
	})(t, c)
	edit("kube-apiserver", func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
		s.Spec.Type = corev1.ServiceTypeClusterIP
	})(t, c)
	if err := c.Get(context.Background(), key, &policyv1.PodDisruptionBudget{}); err == nil {
		edit("argocd", func(p *policyv1.PodDisruptionBudget) {
			p.Labels["team"] = "a"
		})(t, c)
	}
}

// failGet fails reading objects of o's type from the target cluster.
func failGet(o client.Object) interceptor.Funcs {
	return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if sameType(obj, o) {
			return errBoom
		}
		return c.Get(ctx, k, obj, opts...)
	}}
}

func sameType(a, b client.Object) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b)
}

// uid is the UID of every Instance instance() returns.
const uid = "0c4b6a0e-uid"

// someone creates an object under the Instance's names as someone else would: under their
// own field manager, labelled with labels.
func someone[T any, P interface {
	*T
	client.Object
}](labels map[string]string, f func(P)) func(*testing.T, client.Client) {
	return func(t *testing.T, c client.Client) {
		t.Helper()
		o := P(new(T))
		o.SetNamespace(key.Namespace)
		o.SetName(key.Name)
		o.SetLabels(labels)
		f(o)
		if err := c.Create(context.Background(), o, client.FieldOwner("someone")); err != nil {
			t.Fatalf("Create(%T): %v", o, err)
		}
	}
}

// theirDeployment is an application's Deployment that happens to have the Instance's name.
func theirDeployment(labels map[string]string) func(*testing.T, client.Client) {
	return someone(labels, func(d *appsv1.Deployment) {
		d.Spec.Replicas = ptr.To[int32](5)
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}
		d.Spec.Template.Labels = map[string]string{"app": "shop"}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "memcached", Image: "memcached:1.5"}}
	})
}

// othersDeployment is a Deployment the Instance team-b/sessions (otherInstance) made under
// the Instance's names: labelled with its UID and annotated with its name.
func othersDeployment(t *testing.T, c client.Client) {
	t.Helper()
	theirDeployment(map[string]string{v1alpha1.LabelInstanceUID: "other-uid"})(t, c)
	edit("someone", func(d *appsv1.Deployment) {
		d.Annotations = map[string]string{v1alpha1.AnnotationInstance: "team-b/sessions"}
	})(t, c)
}

// otherInstance is the Instance team-b/sessions, UID other-uid, as the control plane holds it.
func otherInstance() *v1alpha1.Instance {
	return instance(func(i *v1alpha1.Instance) { i.Namespace, i.UID = "team-b", "other-uid" })
}

// adopting asks to adopt what is under the Instance's names.
func adopting(i *v1alpha1.Instance) { i.Spec.AdoptionPolicy = v1alpha1.AdoptionPolicyAdopt }

// empty is a target cluster where changes happened, and nothing else.
func empty(changes ...func(*testing.T, client.Client)) func(*testing.T) client.Client {
	return func(t *testing.T) client.Client {
		c := targetCluster(interceptor.Funcs{})
		for _, change := range changes {
			change(t, c)
		}
		return c
	}
}

// legacyApplied is a target cluster where an earlier provider, with one field manager for
// every Instance and no ownership label, applied i's objects.
func legacyApplied(t *testing.T, i *v1alpha1.Instance, changes ...func(*testing.T, client.Client)) client.WithWatch {
	t.Helper()
	c := targetCluster(interceptor.Funcs{})
	m, errs := remote.Memcached(i, settings(t))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, o := range render.Objects(m) {
		u, err := render.ToApply(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(LegacyFieldManager), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	for _, change := range changes {
		change(t, c)
	}
	return c
}

// recorder records the reasons of the events it is given.
type recorder struct{ reasons []string }

func (r *recorder) Event(_ runtime.Object, e event.Event) {
	r.reasons = append(r.reasons, string(e.Type)+"/"+string(e.Reason))
}

func (r *recorder) WithAnnotations(...string) event.Recorder { return r }

func TestObserve(t *testing.T) {
	ctx := context.Background()
	m := memcached(t)
	details := published(render.ConnectionDetails(m))
	endpoint := render.Endpoint(m)
	selector := "app.kubernetes.io/instance=sessions,app.kubernetes.io/name=memcached"
	atProvider := func(replicas, available int32, size ...int32) v1alpha1.InstanceObservation {
		o := v1alpha1.InstanceObservation{}
		o.Replicas, o.AvailableReplicas, o.Endpoint = replicas, available, endpoint
		o.Selector = selector
		if len(size) > 0 {
			o.Size, o.Image = ptr.To(size[0]), resolve.DefaultImage
		}
		return o
	}
	invalid := "invalid spec, nothing was changed: spec.forProvider.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"
	conflictUnlabelled := "Deployment team-a/sessions exists and is not this Instance's: it has no label memcached.example.com/instance-uid; set spec.adoptionPolicy: Adopt to take it over"
	conflictLive := "Deployment team-a/sessions exists and is not this Instance's: it belongs to Instance team-b/sessions (memcached.example.com/instance-uid=other-uid)"
	conflictDead := "Deployment team-a/sessions exists and is not this Instance's: it is labelled memcached.example.com/instance-uid=other-uid, an Instance that no longer exists; set spec.adoptionPolicy: Adopt to take it over"
	conflictForbidden := "Deployment team-a/sessions exists and is not this Instance's: it has no label memcached.example.com/instance-uid; ClusterProviderConfig default does not allow adoption (its spec.adoption is not Allowed)"

	type args struct {
		kube     func(t *testing.T) client.Client
		watchErr error
		refused  field.ErrorList
		// forbidden: the config does not allow adoption.
		forbidden bool
		// instances are the control plane's Instances; nil takes every label for a live
		// Instance's.
		instances []client.Object
		cr        *v1alpha1.Instance
		// reported is the availability reason this process last reported for the Instance.
		reported string
	}
	type want struct {
		o          managed.ExternalObservation
		diff       []string
		err        string
		status     *v1alpha1.InstanceStatus
		events     []string
		directGets int
	}
	status := func(p v1alpha1.InstanceObservation, c ...xpv2.Condition) *v1alpha1.InstanceStatus {
		s := &v1alpha1.InstanceStatus{AtProvider: p}
		s.SetConditions(c...)
		return s
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NotFound": {
			reason: "Nothing under the Instance's names means nothing exists, so the managed reconciler creates it; what the watches do not hold is read directly to be sure.",
			args:   args{kube: func(t *testing.T) client.Client { return targetCluster(readOnly(t)) }, cr: instance()},
			want: want{
				o:          managed.ExternalObservation{ConnectionDetails: details},
				diff:       []string{"Deployment team-a/sessions: does not exist", "Service team-a/sessions: does not exist", "PodDisruptionBudget team-a/sessions: does not exist"},
				status:     status(atProvider(0, 0), conditions(readiness.Available(nil, readiness.Want{Replicas: 3}, ""))...),
				directGets: 3,
			},
		},
		"UpToDate": {
			reason: "What the Instance applied, unchanged and fully rolled out, is up to date and available, read from the watches alone; becoming available is an event.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(3)) }, cr: instance(was(readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/3 replicas available"}))},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 3, 3), conditions(available)...),
				events: []string{"Normal/Available"},
			},
		},
		"SteadyState": {
			reason: "An available Instance that stays available reads nothing directly from the target cluster and records no event.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(3)) }, cr: instance(was(available))},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 3, 3), conditions(available)...),
			},
		},
		"UpToDateDespiteDefaults": {
			reason: "Fields the API server defaults and fields others add are not the Instance's, so they never count as drift.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance(), apiServerDefaults, rollout(3)) }, cr: instance(was(available))},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 3, 3), conditions(available)...),
			},
		},
		"ReplicasChangedByHand": {
			reason: "Scaling by hand moves spec.replicas to another manager: drift, which Update takes back.",
			args: args{
				kube: func(t *testing.T) client.Client {
					return applied(t, instance(), rollout(3), edit("kubectl-edit", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }), rollout(5))
				},
				cr: instance(was(available)),
			},
			want: want{
				o:    managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff: []string{"Deployment team-a/sessions:", "Replicas"},
				status: status(atProvider(5, 5, 5), conditions(readiness.Condition{
					Reason: readiness.ReasonResizing, Message: "resizing from 5 to 3 replicas (5 available)",
				})...),
				events: []string{"Normal/Resizing"},
			},
		},
		"StaleCopyMidResize": {
			reason: "A reconcile reading a copy of the Instance older than what this process last reported (Resizing to 3, the copy still Available at 1) judges from Resizing: 2/3 available is still the resize, not Degraded, and no event repeats.",
			args: args{
				kube:     func(t *testing.T) client.Client { return applied(t, instance(), rollout(2)) },
				cr:       instance(was(readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "1/1 replicas available"})),
				reported: readiness.ReasonResizing,
			},
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 2, 3), conditions(readiness.Condition{
					Reason: readiness.ReasonResizing, Message: "resizing to 3 replicas: 2/3 replicas available",
				})...),
			},
		},
		"ServiceMissing": {
			reason: "A Memcached with its Deployment but without its Service exists, and is not up to date.",
			args: args{
				kube: func(t *testing.T) client.Client {
					return applied(t, instance(), rollout(3), func(t *testing.T, c client.Client) {
						if err := c.Delete(context.Background(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
							t.Fatal(err)
						}
					})
				},
				cr: instance(was(available)),
			},
			want: want{
				o:          managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff:       []string{"Service team-a/sessions: does not exist"},
				status:     status(atProvider(3, 3, 3), conditions(available)...),
				directGets: 1,
			},
		},
		"PDBNoLongerNeeded": {
			reason: "After a resize to one replica the Instance's PodDisruptionBudget must go.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(3)) }, cr: instance(size(1), was(available))},
			want: want{
				o:    managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff: []string{"PodDisruptionBudget team-a/sessions: is no longer needed", "Replicas"},
				status: status(atProvider(3, 3, 3), conditions(readiness.Condition{
					Reason: readiness.ReasonResizing, Message: "resizing from 3 to 1 replicas (3 available)",
				})...),
				events: []string{"Normal/Resizing"},
			},
		},
		"ForeignPDBNotNeeded": {
			reason: "Someone else's PodDisruptionBudget under the names of an Instance that needs none is neither drift nor a conflict, and is not even read.",
			args: args{
				kube: func(t *testing.T) client.Client {
					return applied(t, instance(size(1)), rollout(1), someone(nil, func(p *policyv1.PodDisruptionBudget) {
						p.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
					}))
				},
				cr: instance(size(1), was(readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "1/1 replicas available"})),
			},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(1, 1, 1), conditions(readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "1/1 replicas available"})...),
			},
		},
		"Degraded": {
			reason: "Ready is Unavailable with the claim's reason in its message; Available carries the reason itself; losing a replica is a Warning event.",
			args: args{
				kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(2)) },
				cr:   instance(was(available)),
			},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 2, 3), conditions(readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available"})...),
				events: []string{"Warning/Degraded"},
			},
		},
		"Stalled": {
			reason: "A rollout past its progress deadline is Stalled, announced once with a Warning event, as on a claim.",
			args: args{
				kube: func(t *testing.T) client.Client { return applied(t, instance(), stall(1)) },
				cr:   instance(was(readiness.Condition{Reason: readiness.ReasonProgressing, Message: "rolling out: 1/3 replicas available"})),
			},
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 1, 3), conditions(readiness.Condition{
					Reason: readiness.ReasonStalled, Message: `rollout stalled: ReplicaSet "sessions-5d8f" has timed out progressing. 1/3 replicas available`,
				})...),
				events: []string{"Warning/Stalled"},
			},
		},
		"ConflictUnlabelled": {
			reason: "An application's Deployment under the Instance's names is not the Instance's: a conflict naming it, and nothing is written.",
			args: args{
				kube: func(t *testing.T) client.Client {
					c := targetCluster(interceptor.Funcs{})
					theirDeployment(map[string]string{"app": "shop"})(t, c)
					return interceptor.NewClient(c, readOnly(t))
				},
				cr: instance(),
			},
			want: want{
				err:        conflictUnlabelled,
				status:     status(atProvider(0, 0), conditions(readiness.Condition{Reason: v1alpha1.ReasonConflict, Message: conflictUnlabelled})...),
				events:     []string{"Warning/Conflict"},
				directGets: 3,
			},
		},
		"ConflictOtherInstance": {
			reason: "Another live Instance's Deployment under the same names (two teams picking the same name) is a conflict naming that Instance, and suggests nothing: it can never be adopted.",
			args: args{
				kube:      empty(othersDeployment),
				instances: []client.Object{otherInstance()},
				cr:        instance(),
			},
			want: want{
				err: conflictLive,
				status: status(atProvider(0, 0), conditions(readiness.Condition{Reason: v1alpha1.ReasonConflict,
					Message: conflictLive})...),
				events:     []string{"Warning/Conflict"},
				directGets: 2,
			},
		},
		"AdoptNeverStealsFromALiveInstance": {
			reason: "Adopt does not take over what another live Instance made (another team's Memcached in a shared namespace): a conflict naming that Instance, found by its UID whatever the annotation says, and nothing written.",
			args: args{
				kube: func(t *testing.T) client.Client {
					c := targetCluster(interceptor.Funcs{})
					othersDeployment(t, c)
					edit("someone", func(d *appsv1.Deployment) { delete(d.Annotations, v1alpha1.AnnotationInstance) })(t, c)
					return interceptor.NewClient(c, readOnly(t))
				},
				instances: []client.Object{otherInstance()},
				cr:        instance(adopting),
			},
			want: want{
				err: conflictLive,
				status: status(atProvider(0, 0), conditions(readiness.Condition{Reason: v1alpha1.ReasonConflict,
					Message: conflictLive})...),
				events:     []string{"Warning/Conflict"},
				directGets: 2,
			},
		},
		"ConflictDeletedInstance": {
			reason: "What an Instance that no longer exists left is nobody's: a conflict that says so, and how to take it over.",
			args: args{
				kube:      empty(othersDeployment),
				instances: []client.Object{},
				cr:        instance(),
			},
			want: want{
				err: conflictDead,
				status: status(atProvider(0, 0), conditions(readiness.Condition{Reason: v1alpha1.ReasonConflict,
					Message: conflictDead})...),
				events:     []string{"Warning/Conflict"},
				directGets: 2,
			},
		},
		"AdoptDeletedInstances": {
			reason: "With Adopt, what an Instance that no longer exists left is taken over, like an unlabelled object.",
			args: args{
				kube:      empty(othersDeployment),
				instances: []client.Object{},
				cr:        instance(adopting),
			},
			want: want{
				o:    managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff: []string{"Deployment team-a/sessions: is adopted (spec.adoptionPolicy: Adopt)", "Service team-a/sessions: does not exist"},
				status: status(v1alpha1.InstanceObservation{MemcachedStatus: cachev1alpha1.MemcachedStatus{Endpoint: endpoint, Selector: selector}, Size: ptr.To[int32](5), Image: "memcached:1.5"},
					conditions(readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/3 replicas available"})...),
				directGets: 2,
			},
		},
		"AdoptForbiddenByConfig": {
			reason: "Whether unlabelled objects may be adopted is the config's decision, not the Instance's: without its spec.adoption: Allowed, Adopt is a conflict naming the config.",
			args: args{
				kube: func(t *testing.T) client.Client {
					c := targetCluster(interceptor.Funcs{})
					theirDeployment(nil)(t, c)
					return interceptor.NewClient(c, readOnly(t))
				},
				forbidden: true,
				cr:        instance(adopting),
			},
			want: want{
				err: conflictForbidden,
				status: status(atProvider(0, 0), conditions(readiness.Condition{Reason: v1alpha1.ReasonConflict,
					Message: conflictForbidden})...),
				events:     []string{"Warning/Conflict"},
				directGets: 3,
			},
		},
		"Adopt": {
			reason: "With adoptionPolicy Adopt someone else's Deployment is taken over: it exists and is not up to date until the Instance applied over it.",
			args: args{
				kube: empty(theirDeployment(nil)),
				cr:   instance(func(i *v1alpha1.Instance) { i.Spec.AdoptionPolicy = v1alpha1.AdoptionPolicyAdopt }),
			},
			want: want{
				o:    managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff: []string{"Deployment team-a/sessions: is adopted (spec.adoptionPolicy: Adopt)", "Service team-a/sessions: does not exist"},
				status: status(v1alpha1.InstanceObservation{MemcachedStatus: cachev1alpha1.MemcachedStatus{Endpoint: endpoint, Selector: selector}, Size: ptr.To[int32](5), Image: "memcached:1.5"},
					conditions(readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/3 replicas available"})...),
				directGets: 3,
			},
		},
		"Legacy": {
			reason: "What an earlier provider applied for these names (one field manager for all, no label) is taken over and migrated, not a conflict.",
			args:   args{kube: func(t *testing.T) client.Client { return legacyApplied(t, instance(), rollout(3)) }, cr: instance(was(available))},
			want: want{
				o:          managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff:       []string{"Deployment team-a/sessions: moves from field manager memcached-provider to memcached-provider/platform/sessions"},
				status:     status(atProvider(3, 3, 3), conditions(available)...),
				directGets: 3,
			},
		},
		"Refused": {
			reason: "An Instance its config does not allow to place what it asks where it asks is told so by field, and nothing is read.",
			args: args{
				kube:     func(t *testing.T) client.Client { return targetCluster(failGet(&appsv1.Deployment{})) },
				watchErr: errors.New("the watches must not be read"),
				refused:  field.ErrorList{field.Invalid(field.NewPath("spec", "forProvider", "namespace"), "kube-system", "ClusterProviderConfig default allows only namespace platform")},
				cr:       instance(),
			},
			want: want{
				err: `invalid spec, nothing was changed: spec.forProvider.namespace: Invalid value: "kube-system": ClusterProviderConfig default allows only namespace platform`,
				status: status(v1alpha1.InstanceObservation{}, conditions(readiness.Condition{Reason: readiness.ReasonInvalidSpec,
					Message: `invalid spec, nothing was changed: spec.forProvider.namespace: Invalid value: "kube-system": ClusterProviderConfig default allows only namespace platform`})...),
				events: []string{"Warning/InvalidSpec"},
			},
		},
		"Unreachable": {
			reason: "When the target cannot be observed, an available Instance stops saying so: Available turns False with the error, trimmed.",
			args: args{
				kube:     func(t *testing.T) client.Client { return applied(t, instance(), rollout(3)) },
				watchErr: errors.New("cannot observe namespace team-a of https://target:6443: " + strings.Repeat("connection refused ", 40)),
				cr:       instance(was(available)),
			},
			want: want{
				err: kubeconfig.Trim(errors.New("cannot observe namespace team-a of https://target:6443: " + strings.Repeat("connection refused ", 40))).Error(),
				status: status(v1alpha1.InstanceObservation{}, conditions(readiness.Condition{Reason: v1alpha1.ReasonUnreachable,
					Message: kubeconfig.Trim(errors.New("cannot observe namespace team-a of https://target:6443: " + strings.Repeat("connection refused ", 40))).Error()})...),
				events: []string{"Warning/Unreachable"},
			},
		},
		"ObserveOnly": {
			reason: "An Instance that only observes judges the live Deployment, whoever made it, by its own replicas, reading it alone, and publishes where it runs.",
			args: args{
				kube: empty(theirDeployment(nil), func(t *testing.T, c client.Client) { rollout(5)(t, c) }),
				cr: instance(func(i *v1alpha1.Instance) {
					i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
				}),
			},
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(v1alpha1.InstanceObservation{MemcachedStatus: cachev1alpha1.MemcachedStatus{Replicas: 5, AvailableReplicas: 5, Endpoint: endpoint, Selector: selector}, Size: ptr.To[int32](5), Image: "memcached:1.5"},
					conditions(readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "5/5 replicas available"})...),
				events:     []string{"Normal/Available"},
				directGets: 1,
			},
		},
		"ObserveOnlyUnreachable": {
			reason: "An Instance that only observes still registers with its namespace's watches: while the namespace cannot be observed it is Unreachable, and nothing is read.",
			args: args{
				kube:     empty(theirDeployment(nil)),
				watchErr: errors.New("cannot observe namespace team-a of https://target:6443: forbidden"),
				cr: instance(func(i *v1alpha1.Instance) {
					i.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
				}),
			},
			want: want{
				err: "cannot observe namespace team-a of https://target:6443: forbidden",
				status: status(v1alpha1.InstanceObservation{}, conditions(readiness.Condition{Reason: v1alpha1.ReasonUnreachable,
					Message: "cannot observe namespace team-a of https://target:6443: forbidden"})...),
				events: []string{"Warning/Unreachable"},
			},
		},
		"InvalidSpec": {
			reason: "An invalid spec is an error naming field, value and limit, before anything exists.",
			args:   args{kube: func(t *testing.T) client.Client { return targetCluster(readOnly(t)) }, cr: instance(size(9))},
			want: want{
				err:    invalid,
				status: status(v1alpha1.InstanceObservation{MemcachedStatus: cachev1alpha1.MemcachedStatus{Endpoint: endpoint, Selector: selector}}, conditions(readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: invalid})...),
				events: []string{"Warning/InvalidSpec"},
			},
		},
		"InvalidSpecKeepsRunning": {
			reason: "An invalid resize reports what still runs as it runs: Ready stays True, Available says InvalidSpec.",
			args: args{
				kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(3)) },
				cr:   instance(size(9), was(available)),
			},
			want: want{
				err: invalid,
				status: status(atProvider(3, 3, 3),
					conditions(available)[0],
					conditions(readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: invalid})[1]),
				events: []string{"Warning/InvalidSpec"},
			},
		},
		"NoNamespace": {
			reason: "An Instance without a target namespace of its own or forProvider's (one made by hand) is an invalid spec; nothing is read.",
			args: args{
				kube:     func(t *testing.T) client.Client { return targetCluster(failGet(&appsv1.Deployment{})) },
				watchErr: errors.New("the watches must not be read"),
				cr:       instance(func(i *v1alpha1.Instance) { i.Spec.ForProvider.Namespace, i.Namespace = "", "" }),
			},
			want: want{
				err: "invalid spec, nothing was changed: spec.forProvider.namespace: Required value: the namespace of the target cluster to run Memcached in",
				status: status(v1alpha1.InstanceObservation{}, conditions(readiness.Condition{
					Reason: readiness.ReasonInvalidSpec, Message: "invalid spec, nothing was changed: spec.forProvider.namespace: Required value: the namespace of the target cluster to run Memcached in",
				})...),
				events: []string{"Warning/InvalidSpec"},
			},
		},
		"Deleting": {
			reason: "A deleted Instance needs only its names: even an invalid one is reported as existing until its own objects are gone.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance()) }, cr: instance(size(9), deleted)},
			want:   want{o: managed.ExternalObservation{ResourceExists: true}, status: status(v1alpha1.InstanceObservation{})},
		},
		"DeletingOnlyTheirs": {
			reason: "Someone else's objects under the names of a deleted Instance are not its to delete: nothing of its own exists.",
			args:   args{kube: empty(theirDeployment(map[string]string{v1alpha1.LabelInstanceUID: "other-uid"})), cr: instance(deleted)},
			want:   want{o: managed.ExternalObservation{}, status: status(v1alpha1.InstanceObservation{})},
		},
		"DeletingGone": {
			reason: "Once nothing is left, the managed reconciler can remove its finalizer.",
			args:   args{kube: func(t *testing.T) client.Client { return targetCluster(readOnly(t)) }, cr: instance(deleted)},
			want:   want{o: managed.ExternalObservation{}, status: status(v1alpha1.InstanceObservation{})},
		},
		"GetError": {
			reason: "A failed read names the object and the Instance says it cannot observe.",
			args:   args{kube: func(t *testing.T) client.Client { return targetCluster(failGet(&corev1.Service{})) }, cr: instance()},
			want: want{
				err:        "cannot get Service team-a/sessions: boom",
				status:     status(v1alpha1.InstanceObservation{}, conditions(readiness.Condition{Reason: v1alpha1.ReasonUnreachable, Message: "cannot get Service team-a/sessions: boom"})...),
				events:     []string{"Warning/Unreachable"},
				directGets: 1,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tg := newTarget(tc.args.kube(t))
			tg.watchErr = tc.args.watchErr
			rec := &recorder{}
			e := &External{Target: tg, Settings: settings(t), Refused: tc.args.refused, Recorder: rec, Adoption: Adoption{Allowed: !tc.args.forbidden, Config: "ClusterProviderConfig default"}}
			if tc.args.instances != nil {
				e.Adoption.Instances = controlPlane(t, tc.args.instances...)
			}
			if tc.args.reported != "" {
				e.Transitions = NewTransitions()
				e.Transitions.Changed(tc.args.cr.GetUID(), readiness.State{}, readiness.StateOf(tc.args.reported, ""))
			}
			o, err := e.Observe(ctx, tc.args.cr)
			if diff := cmp.Diff(tc.want.err, errString(err)); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, o, cmpopts.IgnoreFields(managed.ExternalObservation{}, "Diff")); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			for _, s := range tc.want.diff {
				if !strings.Contains(o.Diff, s) {
					t.Errorf("\n%s\nObserve(...).Diff does not mention %q:\n%s", tc.reason, s, o.Diff)
				}
			}
			if o.ResourceUpToDate && o.Diff != "" {
				t.Errorf("\n%s\nObserve(...) is up to date, yet has a diff:\n%s", tc.reason, o.Diff)
			}
			if cr := tc.args.cr; tc.want.status != nil {
				if diff := cmp.Diff(*tc.want.status, cr.Status, test.EquateConditions(), cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" {
					t.Errorf("\n%s\nObserve(...) status: -want, +got:\n%s", tc.reason, diff)
				}
			}
			if diff := cmp.Diff(tc.want.events, rec.reasons); diff != "" {
				t.Errorf("\n%s\nObserve(...) events: -want, +got:\n%s", tc.reason, diff)
			}
			if tg.directGets != tc.want.directGets {
				t.Errorf("\n%s\nObserve(...) read the target cluster directly %d times, want %d", tc.reason, tg.directGets, tc.want.directGets)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// applyCall is what one server-side apply asked for.
type applyCall struct {
	Kind         string
	FieldManager string
	Force        bool
}

// recordApplies records every apply in calls and lets it through; an applied Deployment
// comes back with a new generation, as from an API server.
func recordApplies(calls *[]applyCall) interceptor.Funcs {
	return interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
		o := (&client.ApplyOptions{}).ApplyOptions(opts)
		k, _ := obj.(interface{ GetKind() string })
		*calls = append(*calls, applyCall{Kind: k.GetKind(), FieldManager: o.FieldManager, Force: ptr.Deref(o.Force, false)})
		if err := c.Apply(ctx, obj, opts...); err != nil {
			return err
		}
		if g, ok := obj.(interface {
			GetGeneration() int64
			SetGeneration(int64)
		}); ok && k.GetKind() == "Deployment" {
			g.SetGeneration(g.GetGeneration() + 1)
		}
		return nil
	}}
}

// writesBeforePatch changes each Deployment (as the Deployment controller writing its
// status would) just before the first n patches of it reach the cluster, so that a patch
// guarded by the resourceVersion read before finds the object changed.
func writesBeforePatch(t *testing.T, n int) interceptor.Funcs {
	return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*appsv1.Deployment); ok && n > 0 {
			n--
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), d); err != nil {
				t.Fatal(err)
			}
			d.Status.ObservedGeneration++
			if err := c.Status().Update(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
}

// failApply fails applying objects of kind.
func failApply(kind string) interceptor.Funcs {
	return interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
		if k, _ := obj.(interface{ GetKind() string }); k.GetKind() == kind {
			return errBoom
		}
		return c.Apply(ctx, obj, opts...)
	}}
}

// live describes what a target cluster holds under the Instance's names.
type live struct {
	Replicas int32
	Image    string
	Service  bool
	PDB      bool
	// Ours: the Deployment is labelled and annotated as the Instance's, and its fields are
	// the Instance's field manager's, applied.
	Ours bool
	// Legacy: an object still carries the field manager of earlier providers.
	Legacy     bool
	ForeignPDB bool
}

func observe(t *testing.T, c client.Client) live {
	t.Helper()
	ctx := context.Background()
	var l live
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, key, d); err == nil {
		l.Replicas, l.Image = *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image
		l.Ours = d.Labels[v1alpha1.LabelInstanceUID] == uid && d.Annotations[v1alpha1.AnnotationInstance] == "platform/sessions"
		for _, f := range d.GetManagedFields() {
			switch {
			case f.Manager == LegacyFieldManager:
				l.Legacy = true
			case f.Manager == "memcached-provider/platform/sessions" && f.Operation != metav1.ManagedFieldsOperationApply:
				t.Errorf("the Instance's fields were written with %s, not server-side apply", f.Operation)
			}
		}
	}
	l.Service = c.Get(ctx, key, &corev1.Service{}) == nil
	pdb := &policyv1.PodDisruptionBudget{}
	if err := c.Get(ctx, key, pdb); err == nil {
		l.PDB, l.ForeignPDB = true, pdb.Labels[v1alpha1.LabelInstanceUID] != uid
	}
	return l
}

func TestCreateAndUpdate(t *testing.T) {
	ctx := context.Background()
	details := published(render.ConnectionDetails(memcached(t)))
	manager := "memcached-provider/platform/sessions"
	everything := []applyCall{
		{Kind: "Deployment", FieldManager: manager, Force: true},
		{Kind: "Service", FieldManager: manager, Force: true},
		{Kind: "PodDisruptionBudget", FieldManager: manager, Force: true},
	}
	noPDB := everything[:2]
	image := resolve.DefaultImage
	ours := live{Replicas: 3, Image: image, Service: true, PDB: true, Ours: true}

	type args struct {
		kube    func(t *testing.T, funcs interceptor.Funcs) client.Client
		cr      *v1alpha1.Instance
		observe bool
	}
	type want struct {
		details   managed.ConnectionDetails
		err       string
		applies   []applyCall
		live      live
		available *readiness.Condition
	}
	fresh := func(_ *testing.T, funcs interceptor.Funcs) client.Client { return targetCluster(funcs) }
	with := func(c client.WithWatch, funcs interceptor.Funcs) client.Client {
		return interceptor.NewClient(c, funcs)
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Create": {
			reason: "Create server-side applies every object with the Instance's own field manager and force, labelled and annotated as the Instance's, and returns the connection details.",
			args:   args{kube: fresh, cr: instance()},
			want:   want{details: details, applies: everything, live: ours, available: &readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/3 replicas available"}},
		},
		"CreateSingleReplica": {
			reason: "A single replica gets no PodDisruptionBudget.",
			args:   args{kube: fresh, cr: instance(size(1))},
			want:   want{details: details, applies: noPDB, live: live{Replicas: 1, Image: image, Service: true, Ours: true}, available: &readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 0/1 replicas available"}},
		},
		"UpdateTakesBackDrift": {
			reason: "Update forces the Instance's values back over fields changed by hand.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					return with(applied(t, instance(), edit("kubectl-edit", func(d *appsv1.Deployment) {
						d.Spec.Replicas = ptr.To[int32](5)
						d.Spec.Template.Spec.Containers[0].Image = "memcached:1.5"
					})), funcs)
				},
				cr: instance(), observe: true,
			},
			want: want{details: details, applies: everything, live: ours},
		},
		"ProgressingFromWhatTheApplyReturned": {
			reason: "A change just applied to an available Memcached is Progressing, judged on the Deployment the apply returned, not Available with the old Deployment's numbers.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					return with(applied(t, instance(), rollout(3)), funcs)
				},
				cr: instance(was(available), func(i *v1alpha1.Instance) { i.Spec.ForProvider.Threads = ptr.To[int32](8) }), observe: true,
			},
			want: want{details: details, applies: everything, live: ours, available: &readiness.Condition{Reason: readiness.ReasonProgressing, Message: "rolling out: the Deployment controller has not seen the new spec yet, 3/3 replicas available"}},
		},
		"ResizingFromWhatTheApplyReturned": {
			reason: "A remote resize reads like a local one: Resizing, judged on the Deployment the apply returned, with the replicas available now.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					return with(applied(t, instance(), rollout(3)), funcs)
				},
				cr: instance(was(available), size(2)), observe: true,
			},
			want: want{details: details, applies: everything, live: live{Replicas: 2, Image: image, Service: true, PDB: true, Ours: true},
				available: &readiness.Condition{Reason: readiness.ReasonResizing, Message: "resizing to 2 replicas: 3/2 replicas available"}},
		},
		"UpdateRemovesStalePDB": {
			reason: "Resizing to one replica removes the Instance's PodDisruptionBudget.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client { return with(applied(t, instance()), funcs) },
				cr:   instance(size(1)), observe: true,
			},
			want: want{details: details, applies: noPDB, live: live{Replicas: 1, Image: image, Service: true, Ours: true}},
		},
		"UpdateKeepsForeignPDB": {
			reason: "A PodDisruptionBudget that is not the Instance's is not the Instance's to delete.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					c := applied(t, instance(size(1)))
					someone(nil, func(*policyv1.PodDisruptionBudget) {})(t, c)
					return with(c, funcs)
				},
				cr: instance(size(1)), observe: true,
			},
			want: want{details: details, applies: noPDB, live: live{Replicas: 1, Image: image, Service: true, Ours: true, PDB: true, ForeignPDB: true}},
		},
		"Migrates": {
			reason: "Objects an earlier provider applied move to the Instance's own field manager and get its label: no field is left to the old manager.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					return with(legacyApplied(t, instance()), funcs)
				},
				cr: instance(), observe: true,
			},
			want: want{details: details, applies: everything, live: ours},
		},
		"MigratesWhileTheControllerWrites": {
			reason: "An earlier provider's Deployment that the Deployment controller writes to between Observe and the move is read again and moved in the same reconcile, not left to a growing backoff.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					return with(interceptor.NewClient(legacyApplied(t, instance()), writesBeforePatch(t, 2)), funcs)
				},
				cr: instance(), observe: true,
			},
			want: want{details: details, applies: everything, live: ours},
		},
		"MigrationChangedHands": {
			reason: "An earlier provider's Deployment that another Instance labelled between Observe and the move is not taken: nothing is applied, and the next reconcile judges whose it is.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					c := legacyApplied(t, instance())
					return with(interceptor.NewClient(c, interceptor.Funcs{Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						d := &appsv1.Deployment{}
						if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), d); err != nil {
							t.Fatal(err)
						}
						d.Labels[v1alpha1.LabelInstanceUID] = "other-uid"
						if err := cl.Update(ctx, d); err != nil {
							t.Fatal(err)
						}
						return cl.Patch(ctx, obj, patch, opts...)
					}}), funcs)
				},
				cr: instance(), observe: true,
			},
			want: want{
				err:  "cannot move Deployment team-a/sessions to field manager memcached-provider/platform/sessions: it changed hands while being moved",
				live: live{Replicas: 3, Image: image, Service: true, PDB: true, Legacy: true, ForeignPDB: true},
			},
		},
		"Adopts": {
			reason: "With adoptionPolicy Adopt an application's Deployment is taken over: labelled as the Instance's and applied over.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					c := targetCluster(interceptor.Funcs{})
					theirDeployment(nil)(t, c)
					return with(c, funcs)
				},
				cr: instance(func(i *v1alpha1.Instance) { i.Spec.AdoptionPolicy = v1alpha1.AdoptionPolicyAdopt }), observe: true,
			},
			want: want{details: details, applies: everything, live: ours},
		},
		"AdoptLeavesAnotherInstancesPDB": {
			reason: "Adopting an unlabelled Deployment takes only what the Instance needs: a live Instance's PodDisruptionBudget under its names is not pruned as if it were the Instance's.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					c := targetCluster(interceptor.Funcs{})
					theirDeployment(nil)(t, c)
					someone(map[string]string{v1alpha1.LabelInstanceUID: "other-uid"}, func(p *policyv1.PodDisruptionBudget) {
						p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
					})(t, c)
					return with(c, funcs)
				},
				cr: instance(size(1), adopting), observe: true,
			},
			want: want{details: details, applies: noPDB, live: live{Replicas: 1, Image: image, Service: true, Ours: true, PDB: true, ForeignPDB: true}},
		},
		"InvalidSpec": {
			reason: "Create and Update refuse an invalid spec on their own, applying nothing.",
			args:   args{kube: fresh, cr: instance(size(9))},
			want:   want{err: "invalid spec, nothing was changed: spec.forProvider.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"},
		},
		"ApplyError": {
			reason: "A failed apply names the object.",
			args: args{
				kube: func(_ *testing.T, funcs interceptor.Funcs) client.Client {
					return with(targetCluster(failApply("Service")), funcs)
				},
				cr: instance(),
			},
			want: want{err: "cannot apply Service team-a/sessions: boom", applies: everything[:2], live: live{Replicas: 3, Image: image, Ours: true}},
		},
	}
	for name, tc := range cases {
		for _, op := range []string{"Create", "Update"} {
			t.Run(name+"/"+op, func(t *testing.T) {
				var calls []applyCall
				c := tc.args.kube(t, recordApplies(&calls))
				e := &External{Target: newTarget(c), Settings: settings(t), Adoption: Adoption{Allowed: true, Config: "ClusterProviderConfig default"}}
				cr := tc.args.cr.DeepCopy()
				if tc.args.observe {
					if _, err := e.Observe(ctx, cr); err != nil {
						t.Fatalf("Observe(...): %v", err)
					}
					calls = nil
				}
				var cd managed.ConnectionDetails
				var err error
				if op == "Create" {
					var got managed.ExternalCreation
					got, err = e.Create(ctx, cr)
					cd = got.ConnectionDetails
				} else {
					var got managed.ExternalUpdate
					got, err = e.Update(ctx, cr)
					cd = got.ConnectionDetails
				}
				if diff := cmp.Diff(tc.want.err, errString(err)); diff != "" {
					t.Errorf("\n%s\n%s(...): -want error, +got error:\n%s", tc.reason, op, diff)
				}
				if diff := cmp.Diff(tc.want.details, cd); diff != "" {
					t.Errorf("\n%s\n%s(...): -want connection details, +got:\n%s", tc.reason, op, diff)
				}
				if diff := cmp.Diff(tc.want.applies, calls, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("\n%s\n%s(...): -want applies, +got:\n%s", tc.reason, op, diff)
				}
				if diff := cmp.Diff(tc.want.live, observe(t, c)); diff != "" {
					t.Errorf("\n%s\n%s(...): -want in the target cluster, +got:\n%s", tc.reason, op, diff)
				}
				if a := tc.want.available; a != nil {
					got := cr.GetCondition(v1alpha1.TypeAvailable)
					if diff := cmp.Diff(*a, readiness.Condition{Available: got.Status == corev1.ConditionTrue, Reason: string(got.Reason), Message: got.Message}); diff != "" {
						t.Errorf("\n%s\n%s(...): -want Available, +got:\n%s", tc.reason, op, diff)
					}
				}
			})
		}
	}
}

func TestCreatedIsUpToDate(t *testing.T) {
	// The round trip that keeps the provider from fighting itself: whatever Create applies,
	// the next Observe finds up to date, for every shape of Memcached.
	shapes := map[string]*v1alpha1.Instance{
		"Single":  instance(size(1)),
		"Three":   instance(),
		"Metrics": instance(func(i *v1alpha1.Instance) { i.Spec.ForProvider.Metrics = &cachev1alpha1.Metrics{Enabled: ptr.To(true)} }),
		"CPU": instance(func(i *v1alpha1.Instance) {
			i.Spec.ForProvider.Resources = &cachev1alpha1.CPUResources{
				Requests: &cachev1alpha1.CPU{CPU: "0.5"}, Limits: &cachev1alpha1.CPU{CPU: "1000m"},
			}
		}),
		"NoHighAvailability": instance(func(i *v1alpha1.Instance) {
			i.Spec.ForProvider.HighAvailability = &cachev1alpha1.HighAvailability{Enabled: ptr.To(false)}
		}),
	}
	for name, i := range shapes {
		t.Run(name, func(t *testing.T) {
			c := applied(t, i, apiServerDefaults)
			o, err := (&External{Target: newTarget(c), Settings: settings(t)}).Observe(context.Background(), i)
			if err != nil || !o.ResourceExists || !o.ResourceUpToDate {
				t.Errorf("Observe(...) after Create(...) = exists %v, up to date %v, %v; want true, true, nil. Diff:\n%s", o.ResourceExists, o.ResourceUpToDate, err, o.Diff)
			}
		})
	}
}

func TestTwoInstancesNeverShareFields(t *testing.T) {
	// Two Instances that place a Memcached under the same names (two control-plane
	// namespaces, one target namespace) never take each other's objects for their own: the
	// second one's Observe reports a conflict and its Update, were it called, would not run.
	c := applied(t, instance(), rollout(3))
	other := instance(func(i *v1alpha1.Instance) { i.Namespace, i.UID = "team-b", "other-uid" })
	e := &External{Target: newTarget(c), Settings: settings(t)}
	_, err := e.Observe(context.Background(), other)
	want := "Deployment team-a/sessions exists and is not this Instance's: it belongs to Instance platform/sessions (memcached.example.com/instance-uid=0c4b6a0e-uid); " +
		"Service team-a/sessions exists and is not this Instance's: it belongs to Instance platform/sessions (memcached.example.com/instance-uid=0c4b6a0e-uid); " +
		"PodDisruptionBudget team-a/sessions exists and is not this Instance's: it belongs to Instance platform/sessions (memcached.example.com/instance-uid=0c4b6a0e-uid)"
	if diff := cmp.Diff(want, errString(err)); diff != "" {
		t.Errorf("Observe(...) of the second Instance: -want error, +got:\n%s", diff)
	}
	if got := observe(t, c); !got.Ours {
		t.Errorf("the first Instance's Deployment is no longer its own: %+v", got)
	}
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	type args struct {
		kube client.Client
		cr   *v1alpha1.Instance
	}
	type want struct {
		err  string
		live live
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"DeletesEverything": {
			reason: "Delete removes the Instance's Deployment, Service and PodDisruptionBudget.",
			args:   args{kube: applied(t, instance()), cr: instance(deleted)},
			want:   want{},
		},
		"InvalidSpec": {
			reason: "Deleting needs names only, so an Instance whose spec went bad is deleted too.",
			args:   args{kube: applied(t, instance()), cr: instance(size(9), deleted)},
			want:   want{},
		},
		"OnlyItsOwn": {
			reason: "What is not the Instance's stays: an application's Deployment under its names, an earlier provider's Service not yet migrated.",
			args: args{
				kube: func() client.Client {
					c := targetCluster(interceptor.Funcs{})
					theirDeployment(nil)(t, c)
					return c
				}(),
				cr: instance(deleted),
			},
			want: want{live: live{Replicas: 5, Image: "memcached:1.5"}},
		},
		"AlreadyGone": {
			reason: "What is already gone is fine: Delete is idempotent.",
			args:   args{kube: targetCluster(interceptor.Funcs{}), cr: instance(deleted)},
			want:   want{},
		},
		"DeleteError": {
			reason: "A failed delete names the object.",
			args: args{
				kube: interceptor.NewClient(applied(t, instance()), interceptor.Funcs{
					Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
						if _, ok := obj.(*corev1.Service); ok {
							return errBoom
						}
						return c.Delete(ctx, obj, opts...)
					},
				}),
				cr: instance(deleted),
			},
			want: want{err: "cannot delete Service team-a/sessions: boom", live: live{Service: true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tg := newTarget(tc.args.kube)
			e := &External{Target: tg, Settings: settings(t)}
			if _, err := e.Observe(ctx, tc.args.cr); err != nil {
				t.Fatalf("Observe(...): %v", err)
			}
			_, err := e.Delete(ctx, tc.args.cr)
			if diff := cmp.Diff(tc.want.err, errString(err)); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.live, observe(t, tc.args.kube)); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want in the target cluster, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDeletePreconditions(t *testing.T) {
	// Every delete names the UID of the object Observe judged the Instance's, so that an
	// object replaced meanwhile by someone else's under the same name is never deleted.
	var uids []types.UID
	c := interceptor.NewClient(applied(t, instance()), interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			o := &client.DeleteOptions{}
			o.ApplyOptions(opts)
			if o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != obj.GetUID() {
				t.Errorf("Delete(%T) without a precondition on its UID %q: %+v", obj, obj.GetUID(), o.Preconditions)
			} else {
				uids = append(uids, *o.Preconditions.UID)
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	e := &External{Target: newTarget(c), Settings: settings(t)}
	if _, err := e.Observe(context.Background(), instance(deleted)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(context.Background(), instance(deleted)); err != nil {
		t.Fatal(err)
	}
	if len(uids) != 3 {
		t.Errorf("Delete(...) deleted %d objects with a UID precondition, want 3", len(uids))
	}
}

func TestStalePDBErrors(t *testing.T) {
	// Update removes the Instance's PodDisruptionBudget after a resize to one replica and
	// reports a failure to.
	c := interceptor.NewClient(applied(t, instance()), interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
		return errBoom
	}})
	e := &External{Target: newTarget(c), Settings: settings(t)}
	cr := instance(size(1))
	if _, err := e.Observe(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	_, err := e.Update(context.Background(), cr)
	if diff := cmp.Diff("cannot delete PodDisruptionBudget team-a/sessions: boom", errString(err)); diff != "" {
		t.Errorf("Update(...): -want error, +got error:\n%s", diff)
	}
}
