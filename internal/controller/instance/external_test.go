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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kube"
	"github.com/example/function-memcached/readiness"
	"github.com/example/function-memcached/remote"
	"github.com/example/function-memcached/render"
	"github.com/example/function-memcached/resolve"
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

// instance returns an Instance of size 3 (generation 2) changed by mods. It has a UID, as
// the API server would give it, for usages to be named after.
func instance(mods ...func(*v1alpha1.Instance)) *v1alpha1.Instance {
	i := &v1alpha1.Instance{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "sessions", Generation: 2, UID: "0c4b6a0e-uid"}}
	i.Spec.ForProvider.Namespace = "team-a"
	i.Spec.ForProvider.Size = ptr.To[int32](3)
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

// cluster is a target cluster with server-side apply and managed fields, like a real one.
func cluster(funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(kube.Scheme()).WithReturnManagedFields().
		WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
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
	c := cluster(interceptor.Funcs{})
	if _, err := (&External{Kube: c, Settings: settings(t)}).Create(context.Background(), i); err != nil {
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

// apiServerDefaults fills in what the API server and other controllers add to the objects:
// defaults, a revision annotation, a cluster IP family, a label. None of it is the
// provider's.
func apiServerDefaults(t *testing.T, c client.Client) {
	t.Helper()
	edit("kube-apiserver", func(d *appsv1.Deployment) {
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

func TestObserve(t *testing.T) {
	ctx := context.Background()
	m := memcached(t)
	details := managed.ConnectionDetails(render.ConnectionDetails(m))
	endpoint := render.Endpoint(m)
	atProvider := func(replicas, available int32) v1alpha1.InstanceObservation {
		o := v1alpha1.InstanceObservation{}
		o.Replicas, o.AvailableReplicas, o.Endpoint = replicas, available, endpoint
		o.Selector = "app.kubernetes.io/instance=sessions,app.kubernetes.io/name=memcached"
		return o
	}
	invalid := "invalid spec, nothing was changed: spec.forProvider.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"

	type args struct {
		kube func(t *testing.T) client.Client
		cr   *v1alpha1.Instance
	}
	type want struct {
		o      managed.ExternalObservation
		diff   []string
		err    string
		status *v1alpha1.InstanceStatus
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
			reason: "Nothing under the Instance's names means nothing exists, so the managed reconciler creates it.",
			args:   args{kube: func(t *testing.T) client.Client { return cluster(readOnly(t)) }, cr: instance()},
			want: want{
				o:      managed.ExternalObservation{ConnectionDetails: details},
				diff:   []string{"Deployment team-a/sessions: does not exist", "Service team-a/sessions: does not exist", "PodDisruptionBudget team-a/sessions: does not exist"},
				status: status(atProvider(0, 0), conditions(readiness.Available(nil, readiness.Want{Replicas: 3}, ""))...),
			},
		},
		"UpToDate": {
			reason: "What the provider applied, unchanged and fully rolled out, is up to date and available.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(3)) }, cr: instance()},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 3), conditions(available)...),
			},
		},
		"UpToDateDespiteDefaults": {
			reason: "Fields the API server defaults and fields others add are not the provider's, so they never count as drift.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance(), apiServerDefaults, rollout(3)) }, cr: instance()},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 3), conditions(available)...),
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
				status: status(atProvider(5, 5), conditions(readiness.Condition{
					Reason: readiness.ReasonResizing, Message: "resizing from 5 to 3 replicas (5 available)",
				})...),
			},
		},
		"ImageChangedByHand": {
			reason: "`kubectl set image` is drift too.",
			args: args{
				kube: func(t *testing.T) client.Client {
					return applied(t, instance(), rollout(3), edit("kubectl-set", func(d *appsv1.Deployment) {
						d.Spec.Template.Spec.Containers[0].Image = "memcached:1.5"
					}))
				},
				cr: instance(was(available)),
			},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff:   []string{"Deployment team-a/sessions:", "Image"},
				status: status(atProvider(3, 3), conditions(available)...),
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
				o:      managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff:   []string{"Service team-a/sessions: does not exist"},
				status: status(atProvider(3, 3), conditions(available)...),
			},
		},
		"PDBNoLongerNeeded": {
			reason: "After a resize to one replica the provider's PodDisruptionBudget must go.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(3)) }, cr: instance(size(1), was(available))},
			want: want{
				o:    managed.ExternalObservation{ResourceExists: true, ConnectionDetails: details},
				diff: []string{"PodDisruptionBudget team-a/sessions: is no longer needed", "Replicas"},
				status: status(atProvider(3, 3), conditions(readiness.Condition{
					Reason: readiness.ReasonResizing, Message: "resizing from 3 to 1 replicas (3 available)",
				})...),
			},
		},
		"ForeignPDBIgnored": {
			reason: "A PodDisruptionBudget the provider never applied is someone else's and no drift.",
			args: args{
				kube: func(t *testing.T) client.Client {
					return applied(t, instance(size(1)), rollout(1), func(t *testing.T, c client.Client) {
						pdb := &policyv1.PodDisruptionBudget{
							ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
							Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))},
						}
						if err := c.Create(context.Background(), pdb, client.FieldOwner("someone")); err != nil {
							t.Fatal(err)
						}
					})
				},
				cr: instance(size(1)),
			},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(1, 1), conditions(readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "1/1 replicas available"})...),
			},
		},
		"Degraded": {
			reason: "Ready is Unavailable with the claim's reason in its message; Available carries the reason itself.",
			args: args{
				kube: func(t *testing.T) client.Client { return applied(t, instance(), rollout(2)) },
				cr:   instance(was(available)),
			},
			want: want{
				o:      managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ConnectionDetails: details},
				status: status(atProvider(3, 2), conditions(readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available"})...),
			},
		},
		"InvalidSpec": {
			reason: "An invalid spec is an error naming field, value and limit, before anything exists.",
			args:   args{kube: func(t *testing.T) client.Client { return cluster(readOnly(t)) }, cr: instance(size(9))},
			want: want{
				err:    invalid,
				status: status(atProvider(0, 0), conditions(readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: invalid})...),
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
				status: status(atProvider(3, 3),
					conditions(available)[0],
					conditions(readiness.Condition{Reason: readiness.ReasonInvalidSpec, Message: invalid})[1]),
			},
		},
		"NoNamespace": {
			reason: "An Instance without a target namespace (the CRD requires one) is an invalid spec; nothing is read.",
			args: args{
				kube: func(t *testing.T) client.Client { return cluster(failGet(&appsv1.Deployment{})) },
				cr:   instance(func(i *v1alpha1.Instance) { i.Spec.ForProvider.Namespace = "" }),
			},
			want: want{
				err: "invalid spec, nothing was changed: spec.forProvider.namespace: Required value: the namespace of the target cluster to run Memcached in",
				status: status(v1alpha1.InstanceObservation{}, conditions(readiness.Condition{
					Reason: readiness.ReasonInvalidSpec, Message: "invalid spec, nothing was changed: spec.forProvider.namespace: Required value: the namespace of the target cluster to run Memcached in",
				})...),
			},
		},
		"Deleting": {
			reason: "A deleted Instance needs only its names: even an invalid one is reported as existing until its objects are gone.",
			args:   args{kube: func(t *testing.T) client.Client { return applied(t, instance()) }, cr: instance(size(9), deleted)},
			want:   want{o: managed.ExternalObservation{ResourceExists: true}, status: status(v1alpha1.InstanceObservation{})},
		},
		"DeletingGone": {
			reason: "Once nothing is left, the managed reconciler can remove its finalizer.",
			args:   args{kube: func(t *testing.T) client.Client { return cluster(readOnly(t)) }, cr: instance(deleted)},
			want:   want{o: managed.ExternalObservation{}, status: status(v1alpha1.InstanceObservation{})},
		},
		"GetDeploymentError": {
			reason: "A failed read names the object.",
			args:   args{kube: func(t *testing.T) client.Client { return cluster(failGet(&appsv1.Deployment{})) }, cr: instance()},
			want:   want{err: "cannot get Deployment team-a/sessions: boom", status: status(v1alpha1.InstanceObservation{})},
		},
		"GetServiceError": {
			reason: "A failed read names the object.",
			args:   args{kube: func(t *testing.T) client.Client { return cluster(failGet(&corev1.Service{})) }, cr: instance()},
			want:   want{err: "cannot get Service team-a/sessions: boom", status: status(v1alpha1.InstanceObservation{})},
		},
		"GetPodDisruptionBudgetError": {
			reason: "A failed read names the object.",
			args:   args{kube: func(t *testing.T) client.Client { return cluster(failGet(&policyv1.PodDisruptionBudget{})) }, cr: instance()},
			want:   want{err: "cannot get PodDisruptionBudget team-a/sessions: boom", status: status(v1alpha1.InstanceObservation{})},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := &External{Kube: tc.args.kube(t), Settings: settings(t)}
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

// recordApplies records every apply in calls and lets it through.
func recordApplies(calls *[]applyCall) interceptor.Funcs {
	return interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
		o := (&client.ApplyOptions{}).ApplyOptions(opts)
		k, _ := obj.(interface{ GetKind() string })
		*calls = append(*calls, applyCall{Kind: k.GetKind(), FieldManager: o.FieldManager, Force: ptr.Deref(o.Force, false)})
		return c.Apply(ctx, obj, opts...)
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
	Replicas   int32
	Image      string
	Service    bool
	PDB        bool
	OwnedByUs  bool
	ForeignPDB bool
}

func observe(t *testing.T, c client.Client) live {
	t.Helper()
	ctx := context.Background()
	var l live
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, key, d); err == nil {
		l.Replicas, l.Image, l.OwnedByUs = *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image, ownedByUs(d)
		for _, f := range d.GetManagedFields() {
			if f.Manager == FieldManager && f.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("the provider's fields were written with %s, not server-side apply", f.Operation)
			}
		}
	}
	l.Service = c.Get(ctx, key, &corev1.Service{}) == nil
	pdb := &policyv1.PodDisruptionBudget{}
	if err := c.Get(ctx, key, pdb); err == nil {
		l.PDB, l.ForeignPDB = true, !ownedByUs(pdb)
	}
	return l
}

func TestCreateAndUpdate(t *testing.T) {
	ctx := context.Background()
	details := managed.ConnectionDetails(render.ConnectionDetails(memcached(t)))
	everything := []applyCall{
		{Kind: "Deployment", FieldManager: FieldManager, Force: true},
		{Kind: "Service", FieldManager: FieldManager, Force: true},
		{Kind: "PodDisruptionBudget", FieldManager: FieldManager, Force: true},
	}
	noPDB := everything[:2]
	image := resolve.DefaultImage

	type args struct {
		kube  func(t *testing.T, funcs interceptor.Funcs) client.Client
		funcs interceptor.Funcs
		cr    *v1alpha1.Instance
	}
	type want struct {
		details managed.ConnectionDetails
		err     string
		applies []applyCall
		live    live
	}
	empty := func(_ *testing.T, funcs interceptor.Funcs) client.Client { return cluster(funcs) }
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Create": {
			reason: "Create server-side applies every object with the provider's field manager and force, and returns the connection details.",
			args:   args{kube: empty, cr: instance()},
			want:   want{details: details, applies: everything, live: live{Replicas: 3, Image: image, Service: true, PDB: true, OwnedByUs: true}},
		},
		"CreateSingleReplica": {
			reason: "A single replica gets no PodDisruptionBudget.",
			args:   args{kube: empty, cr: instance(size(1))},
			want:   want{details: details, applies: noPDB, live: live{Replicas: 1, Image: image, Service: true, OwnedByUs: true}},
		},
		"UpdateTakesBackDrift": {
			reason: "Update forces the provider's values back over fields changed by hand.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					c := applied(t, instance(), edit("kubectl-edit", func(d *appsv1.Deployment) {
						d.Spec.Replicas = ptr.To[int32](5)
						d.Spec.Template.Spec.Containers[0].Image = "memcached:1.5"
					}))
					return interceptor.NewClient(c, funcs)
				},
				cr: instance(),
			},
			want: want{details: details, applies: everything, live: live{Replicas: 3, Image: image, Service: true, PDB: true, OwnedByUs: true}},
		},
		"UpdateRemovesStalePDB": {
			reason: "Resizing to one replica removes the provider's PodDisruptionBudget.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					return interceptor.NewClient(applied(t, instance()), funcs)
				},
				cr: instance(size(1)),
			},
			want: want{details: details, applies: noPDB, live: live{Replicas: 1, Image: image, Service: true, OwnedByUs: true}},
		},
		"UpdateKeepsForeignPDB": {
			reason: "A PodDisruptionBudget the provider never applied is not the provider's to delete.",
			args: args{
				kube: func(t *testing.T, funcs interceptor.Funcs) client.Client {
					pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
					return cluster(funcs, pdb)
				},
				cr: instance(size(1)),
			},
			want: want{details: details, applies: noPDB, live: live{Replicas: 1, Image: image, Service: true, OwnedByUs: true, PDB: true, ForeignPDB: true}},
		},
		"InvalidSpec": {
			reason: "Create and Update refuse an invalid spec on their own, applying nothing.",
			args:   args{kube: empty, cr: instance(size(9))},
			want:   want{err: "invalid spec, nothing was changed: spec.forProvider.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"},
		},
		"ApplyError": {
			reason: "A failed apply names the object.",
			args: args{
				kube: func(_ *testing.T, funcs interceptor.Funcs) client.Client {
					return interceptor.NewClient(cluster(failApply("Service")), funcs)
				},
				cr: instance(),
			},
			want: want{
				err:     "cannot apply Service team-a/sessions: boom",
				applies: everything[:2],
				live:    live{Replicas: 3, Image: image, OwnedByUs: true},
			},
		},
	}
	for name, tc := range cases {
		for _, op := range []string{"Create", "Update"} {
			t.Run(name+"/"+op, func(t *testing.T) {
				var calls []applyCall
				c := tc.args.kube(t, recordApplies(&calls))
				e := &External{Kube: c, Settings: settings(t)}
				var cd managed.ConnectionDetails
				var err error
				if op == "Create" {
					var got managed.ExternalCreation
					got, err = e.Create(ctx, tc.args.cr)
					cd = got.ConnectionDetails
				} else {
					var got managed.ExternalUpdate
					got, err = e.Update(ctx, tc.args.cr)
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
			o, err := (&External{Kube: c, Settings: settings(t)}).Observe(context.Background(), i)
			if err != nil || !o.ResourceExists || !o.ResourceUpToDate {
				t.Errorf("Observe(...) after Create(...) = exists %v, up to date %v, %v; want true, true, nil. Diff:\n%s", o.ResourceExists, o.ResourceUpToDate, err, o.Diff)
			}
		})
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
			reason: "Delete removes the Deployment, Service and PodDisruptionBudget.",
			args:   args{kube: applied(t, instance()), cr: instance(deleted)},
			want:   want{},
		},
		"InvalidSpec": {
			reason: "Deleting needs names only, so an Instance whose spec went bad is deleted too.",
			args:   args{kube: applied(t, instance()), cr: instance(size(9), deleted)},
			want:   want{},
		},
		"AlreadyGone": {
			reason: "What is already gone is fine: Delete is idempotent.",
			args:   args{kube: cluster(interceptor.Funcs{}), cr: instance(deleted)},
			want:   want{},
		},
		"NoNamespace": {
			reason: "Without a namespace nothing was ever created.",
			args:   args{kube: cluster(interceptor.Funcs{}), cr: instance(deleted, func(i *v1alpha1.Instance) { i.Spec.ForProvider.Namespace = "" })},
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
			want: want{err: "cannot delete Service team-a/sessions: boom", live: live{Service: true, PDB: true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := (&External{Kube: tc.args.kube, Settings: settings(t)}).Delete(ctx, tc.args.cr)
			if diff := cmp.Diff(tc.want.err, errString(err)); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.live, observe(t, tc.args.kube)); diff != "" {
				t.Errorf("\n%s\nDelete(...): -want in the target cluster, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDeleteStalePDBErrors(t *testing.T) {
	// Update removes a PodDisruptionBudget only after reading it; both steps report failures.
	cases := map[string]struct {
		reason string
		funcs  interceptor.Funcs
		want   string
	}{
		"GetError": {
			reason: "A failed read names the budget.",
			funcs:  failGet(&policyv1.PodDisruptionBudget{}),
			want:   "cannot get PodDisruptionBudget team-a/sessions: boom",
		},
		"DeleteError": {
			reason: "A failed delete names the budget.",
			funcs: interceptor.Funcs{Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
				return errBoom
			}},
			want: "cannot delete PodDisruptionBudget team-a/sessions: boom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := interceptor.NewClient(applied(t, instance()), tc.funcs)
			_, err := (&External{Kube: c, Settings: settings(t)}).Update(context.Background(), instance(size(1)))
			if diff := cmp.Diff(tc.want, errString(err)); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}
