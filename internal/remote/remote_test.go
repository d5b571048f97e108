package remote

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

func defaults(t *testing.T) resolve.Settings {
	t.Helper()
	s, err := resolve.NewSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// resolved is what resolve makes of a claim of size 3 named sessions in team-a.
func resolved() render.Memcached {
	return render.Memcached{
		Name: "sessions", Namespace: "team-a", Size: 3, Image: resolve.DefaultImage, MemoryLimitMB: 64,
		MaxConnections: 1024, Threads: 4, CPURequest: ptr.To(resource.MustParse("100m")),
		HighAvailability: true, ExporterImage: resolve.DefaultExporterImage,
	}
}

func TestInstance(t *testing.T) {
	ref := xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "edge"}
	with := func(f func(*render.Memcached)) render.Memcached {
		m := resolved()
		f(&m)
		return m
	}
	cases := map[string]struct {
		reason string
		m      render.Memcached
	}{
		"Defaults": {
			reason: "A claim resolved with every default comes back unchanged.",
			m:      resolved(),
		},
		"EveryField": {
			reason: "Every field the claim can set survives the trip through an Instance.",
			m: with(func(m *render.Memcached) {
				m.Size, m.Image, m.MemoryLimitMB, m.MaxConnections, m.Threads = 2, "registry.example.com/memcached:1.6", 512, 4096, 8
				m.CPURequest, m.CPULimit = ptr.To(resource.MustParse("250m")), ptr.To(resource.MustParse("1"))
				m.HighAvailability, m.Metrics = false, true
			}),
		},
		"NoCPURequest": {
			reason: "A Memcached without a CPU request keeps none (resolve then applies its default).",
			m:      with(func(m *render.Memcached) { m.CPURequest = nil }),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i := Instance(tc.m, ref)
			if diff := cmp.Diff(&ref, i.Spec.ProviderConfigReference); diff != "" {
				t.Errorf("\n%s\nInstance(...).Spec.ProviderConfigReference: -want, +got:\n%s", tc.reason, diff)
			}
			if got := i.GroupVersionKind(); got != v1alpha1.InstanceGroupVersionKind {
				t.Errorf("\n%s\nInstance(...) kind = %v, want %v", tc.reason, got, v1alpha1.InstanceGroupVersionKind)
			}
			want := tc.m
			if want.CPURequest == nil {
				want.CPURequest = ptr.To(resource.MustParse(resolve.DefaultCPURequest))
			}
			got, errs := Memcached(i, defaults(t))
			if len(errs) > 0 {
				t.Fatalf("\n%s\nMemcached(Instance(...)): %v", tc.reason, errs)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("\n%s\nMemcached(Instance(m)): -want m, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTarget(t *testing.T) {
	instance := func(name, forName string) *v1alpha1.Instance {
		i := &v1alpha1.Instance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "platform"}}
		i.Spec.ForProvider = v1alpha1.InstanceParameters{Namespace: "team-a", Name: forName}
		return i
	}
	cases := map[string]struct {
		reason string
		i      *v1alpha1.Instance
		want   [2]string
	}{
		"OwnName": {
			reason: "Without forProvider.name the Instance's own name is used.",
			i:      instance("sessions", ""),
			want:   [2]string{"sessions", "team-a"},
		},
		"ForProviderName": {
			reason: "forProvider.name wins over the Instance's name, which Crossplane may have generated.",
			i:      instance("sessions-x7k2p", "sessions"),
			want:   [2]string{"sessions", "team-a"},
		},
		"MappedName": {
			reason: "A name that is no DNS label is mapped like a claim's name.",
			i:      instance("sessions", "Sessions.Cache"),
			want:   [2]string{render.Name("Sessions.Cache"), "team-a"},
		},
		"OwnNamespace": {
			reason: "Without forProvider.namespace the objects go to the namespace named like the Instance's own.",
			i: func() *v1alpha1.Instance {
				i := instance("sessions", "")
				i.Spec.ForProvider.Namespace = ""
				return i
			}(),
			want: [2]string{"sessions", "platform"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, ns := Target(tc.i)
			if diff := cmp.Diff(tc.want, [2]string{n, ns}); diff != "" {
				t.Errorf("\n%s\nTarget(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMemcached(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      v1alpha1.InstanceParameters
		want   []string
	}{
		"NoNamespace": {
			reason: "There is nowhere to run a Memcached without a namespace: neither forProvider's nor the Instance's own.",
			p:      v1alpha1.InstanceParameters{},
			want:   []string{"spec.forProvider.namespace: Required value: the namespace of the target cluster to run Memcached in"},
		},
		"TooBig": {
			reason: "Errors name the Instance's field, the value and the limit.",
			p: v1alpha1.InstanceParameters{Namespace: "team-a", MemcachedSpec: cachev1alpha1.MemcachedSpec{
				Size: ptr.To[int32](9), MemoryLimitMB: ptr.To[int32](4096),
				Resources: &cachev1alpha1.CPUResources{Limits: &cachev1alpha1.CPU{CPU: "lots"}},
			}},
			want: []string{
				"spec.forProvider.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)",
				"spec.forProvider.memoryLimitMB: Invalid value: 4096: must be an integer between 16 and 1024 (policy.maxMemoryLimitMB)",
				`spec.forProvider.resources.limits.cpu: Invalid value: "lots": must be a positive CPU quantity, like "100m" or "1"`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i := &v1alpha1.Instance{ObjectMeta: metav1.ObjectMeta{Name: "sessions"}}
			i.Spec.ForProvider = tc.p
			_, errs := Memcached(i, defaults(t))
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = e.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nMemcached(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestInvalidMessage(t *testing.T) {
	i := &v1alpha1.Instance{}
	i.Spec.ForProvider = v1alpha1.InstanceParameters{Namespace: "team-a", MemcachedSpec: cachev1alpha1.MemcachedSpec{Size: ptr.To[int32](9), Threads: ptr.To[int32](0)}}
	_, errs := Memcached(i, defaults(t))
	want := "invalid spec, nothing was changed: spec.forProvider.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize); " +
		"spec.forProvider.threads: Invalid value: 0: must be an integer between 1 and 64"
	if got := resolve.Message(errs); got != want {
		t.Errorf("resolve.Message(Memcached(...)):\nwant %q\n got %q", want, got)
	}
}

func TestConditions(t *testing.T) {
	type want struct {
		ready, available xpv2.Condition
	}
	cases := map[string]struct {
		reason string
		c      readiness.Condition
		want   want
	}{
		"Available": {
			reason: "Every replica available is Ready.",
			c:      readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "3/3 replicas available"},
			want: want{
				ready:     xpv2.Available().WithMessage("Available: 3/3 replicas available").WithObservedGeneration(4),
				available: xpv2.Condition{Type: v1alpha1.TypeAvailable, Status: corev1.ConditionTrue, Reason: "Available", Message: "3/3 replicas available", ObservedGeneration: 4},
			},
		},
		"Creating": {
			reason: "Not yet available since creation is Crossplane's Creating.",
			c:      readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: 1/3 replicas available"},
			want: want{
				ready:     xpv2.Creating().WithMessage("Creating: creating: 1/3 replicas available").WithObservedGeneration(4),
				available: xpv2.Condition{Type: v1alpha1.TypeAvailable, Status: corev1.ConditionFalse, Reason: "Creating", Message: "creating: 1/3 replicas available", ObservedGeneration: 4},
			},
		},
		"Degraded": {
			reason: "Any other verdict is Unavailable, and Ready's message leads with the verdict's reason.",
			c:      readiness.Condition{Reason: readiness.ReasonDegraded, Message: "2/3 replicas available"},
			want: want{
				ready:     xpv2.Unavailable().WithMessage("Degraded: 2/3 replicas available").WithObservedGeneration(4),
				available: xpv2.Condition{Type: v1alpha1.TypeAvailable, Status: corev1.ConditionFalse, Reason: "Degraded", Message: "2/3 replicas available", ObservedGeneration: 4},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ready, available := Conditions(tc.c, 4)
			if diff := cmp.Diff(tc.want, want{ready, available}, cmp.AllowUnexported(want{}), cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("\n%s\nConditions(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReadyAndAvailable(t *testing.T) {
	observed := func(c ...xpv2.Condition) *v1alpha1.Instance {
		i := &v1alpha1.Instance{}
		i.SetConditions(c...)
		return i
	}
	ready, available := Conditions(readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "3/3 replicas available"}, 1)
	unready, resizing := Conditions(readiness.Condition{Reason: readiness.ReasonResizing, Message: "resizing from 3 to 1 replicas (3 available)"}, 1)
	type want struct {
		ready     bool
		available readiness.Condition
	}
	cases := map[string]struct {
		reason string
		i      *v1alpha1.Instance
		want   want
	}{
		"NotObserved": {
			reason: "An Instance the provider has not observed is Creating, and not ready.",
			i:      observed(),
			want:   want{available: readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: waiting for the provider to observe the Instance"}},
		},
		"CannotConnect": {
			reason: "When the provider cannot sync the Instance, the message says why.",
			i:      observed(xpv2.ReconcileError(errors.New("connect failed: cannot get ClusterProviderConfig \"default\""))),
			want:   want{available: readiness.Condition{Reason: readiness.ReasonCreating, Message: "creating: connect failed: cannot get ClusterProviderConfig \"default\""}},
		},
		"Available": {
			reason: "An available Instance is ready and says so in the claim's words.",
			i:      observed(ready, available),
			want:   want{ready: true, available: readiness.Condition{Available: true, Reason: readiness.ReasonAvailable, Message: "3/3 replicas available"}},
		},
		"Resizing": {
			reason: "The provider's verdict passes through unchanged.",
			i:      observed(unready, resizing),
			want:   want{available: readiness.Condition{Reason: readiness.ReasonResizing, Message: "resizing from 3 to 1 replicas (3 available)"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want{ready: Ready(tc.i), available: Available(tc.i)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nReady, Available(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestInstanceCarriesSecurity(t *testing.T) {
	m := resolved()
	m.Auth = &render.Auth{Rotation: "r1"}
	m.TLS = &render.TLS{SecretName: "sessions-cert"}
	m.NetworkPolicy = &render.NetworkAccess{AllowedNamespaces: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "web"}}}
	i := Instance(m, xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "edge"})
	want := cachev1alpha1.MemcachedSpec{
		Auth:          &cachev1alpha1.Auth{Enabled: ptr.To(true), Rotation: "r1"},
		TLS:           &cachev1alpha1.TLS{SecretName: "sessions-cert"},
		NetworkPolicy: &cachev1alpha1.NetworkPolicy{Enabled: ptr.To(true), AllowedNamespaces: m.NetworkPolicy.AllowedNamespaces},
	}
	got := i.Spec.ForProvider.MemcachedSpec
	if diff := cmp.Diff(want, cachev1alpha1.MemcachedSpec{Auth: got.Auth, TLS: got.TLS, NetworkPolicy: got.NetworkPolicy}); diff != "" {
		t.Errorf("The Instance carries auth (enabled, rotation), the TLS Secret's name and the NetworkPolicy: -want, +got:\n%s", diff)
	}
}

func TestMemcachedSecurityErrorsNameTheInstancesFields(t *testing.T) {
	i := &v1alpha1.Instance{}
	i.Spec.ForProvider.Namespace = "team-a"
	i.Spec.ForProvider.Auth = &cachev1alpha1.Auth{Enabled: ptr.To(true), Rotation: "not a label"}
	i.Spec.ForProvider.NetworkPolicy = &cachev1alpha1.NetworkPolicy{Enabled: ptr.To(true), AllowedNamespaces: &metav1.LabelSelector{}}
	_, errs := Memcached(i, defaults(t))
	msg := resolve.Message(errs)
	for _, want := range []string{
		`spec.forProvider.auth.rotation: Invalid value: "not a label": must be at most 63 letters`,
		`spec.forProvider.networkPolicy.allowedNamespaces: Invalid value: "{}": must name the namespaces it admits`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("An Instance's auth and NetworkPolicy are checked as a claim's, with the same words, naming spec.forProvider: %q does not contain %q", msg, want)
		}
	}
}
