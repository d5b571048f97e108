package resolve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/render"
)

func defaults(t *testing.T) Settings {
	t.Helper()
	s, err := NewSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMemcached(t *testing.T) {
	type args struct {
		spec v1alpha1.MemcachedSpec
		in   *v1beta1.Input
	}
	type want struct {
		m    render.Memcached
		errs []string
	}
	base := render.Memcached{
		Name: "sessions", Namespace: "team-a", Size: 1, Image: DefaultImage, MemoryLimitMB: 64,
		MaxConnections: 1024, Threads: 4, CPURequest: ptr.To(resource.MustParse("100m")),
		HighAvailability: true, ExporterImage: DefaultExporterImage, NetworkPolicy: &render.NetworkAccess{},
	}
	with := func(f func(*render.Memcached)) render.Memcached {
		m := base
		f(&m)
		return m
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"EmptySpec": {
			reason: "An empty spec is a valid, production-shaped Memcached of one replica.",
			want:   want{m: base},
		},
		"EveryField": {
			reason: "Every field of the API reaches the renderer.",
			args: args{spec: v1alpha1.MemcachedSpec{
				Size: ptr.To[int32](3), Image: "docker.io/library/memcached:1.6.38", MemoryLimitMB: ptr.To[int32](512),
				MaxConnections: ptr.To[int32](4096), Threads: ptr.To[int32](8),
				Resources:        &v1alpha1.CPUResources{Requests: &v1alpha1.CPU{CPU: "250m"}, Limits: &v1alpha1.CPU{CPU: "2"}},
				HighAvailability: &v1alpha1.HighAvailability{Enabled: ptr.To(false)},
				Metrics:          &v1alpha1.Metrics{Enabled: ptr.To(true)},
			}},
			want: want{m: with(func(m *render.Memcached) {
				m.Size, m.Image, m.MemoryLimitMB, m.MaxConnections, m.Threads = 3, "docker.io/library/memcached:1.6.38", 512, 4096, 8
				m.CPURequest, m.CPULimit = ptr.To(resource.MustParse("250m")), ptr.To(resource.MustParse("2"))
				m.HighAvailability, m.Metrics = false, true
			})},
		},
		"InputDefaults": {
			reason: "The Input's defaults fill what the claim leaves empty.",
			args: args{in: &v1beta1.Input{Defaults: v1beta1.Defaults{
				Image: "registry.example.com/memcached:1.6", MemoryLimitMB: ptr.To[int32](256), ExporterImage: "registry.example.com/exporter:1",
			}, Policy: v1beta1.Policy{MaxMemoryLimitMB: ptr.To[int32](512)}}},
			want: want{m: with(func(m *render.Memcached) {
				m.Image, m.MemoryLimitMB, m.ExporterImage = "registry.example.com/memcached:1.6", 256, "registry.example.com/exporter:1"
			})},
		},
		"SmallPolicyWithItsDefault": {
			reason: "A platform whose policy allows at most 32 MB and whose default is 32 MB accepts a claim that names no cache size.",
			args: args{in: &v1beta1.Input{
				Defaults: v1beta1.Defaults{MemoryLimitMB: ptr.To[int32](32)},
				Policy:   v1beta1.Policy{MaxMemoryLimitMB: ptr.To[int32](32)},
			}},
			want: want{m: with(func(m *render.Memcached) { m.MemoryLimitMB = 32 })},
		},
		"SmallPolicyWithoutDefault": {
			reason: "The built-in 64 MB default yields to a policy maximum below it, rather than rejecting every claim that names no cache size.",
			args:   args{in: &v1beta1.Input{Policy: v1beta1.Policy{MaxMemoryLimitMB: ptr.To[int32](32)}}},
			want:   want{m: with(func(m *render.Memcached) { m.MemoryLimitMB = 32 })},
		},
		"SizeOverPolicy": {
			reason: "A size over policy.maxSize names the field, the value and the limit.",
			args:   args{spec: v1alpha1.MemcachedSpec{Size: ptr.To[int32](9)}},
			want:   want{errs: []string{"spec.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"}},
		},
		"SizeRaisedByPolicy": {
			reason: "A platform may allow more replicas.",
			args:   args{spec: v1alpha1.MemcachedSpec{Size: ptr.To[int32](9)}, in: &v1beta1.Input{Policy: v1beta1.Policy{MaxSize: ptr.To[int32](10)}}},
			want:   want{m: with(func(m *render.Memcached) { m.Size = 9 })},
		},
		"EveryBoundAtOnce": {
			reason: "Zero, negative and out-of-range integers are all reported at once, each with its value and limit, large ones never in e-notation.",
			args: args{spec: v1alpha1.MemcachedSpec{
				Size: ptr.To[int32](-1), MemoryLimitMB: ptr.To[int32](8), MaxConnections: ptr.To[int32](0), Threads: ptr.To[int32](1000000),
			}},
			want: want{errs: []string{
				"spec.size: Invalid value: -1: must be an integer between 1 and 3 (policy.maxSize)",
				"spec.memoryLimitMB: Invalid value: 8: must be an integer between 16 and 1024 (policy.maxMemoryLimitMB)",
				"spec.maxConnections: Invalid value: 0: must be an integer between 48 and 65536, and at least 6 per thread plus 24",
				"spec.threads: Invalid value: 1000000: must be an integer between 1 and 64",
			}},
		},
		"BadImage": {
			reason: "An image with spaces is not a reference.",
			args:   args{spec: v1alpha1.MemcachedSpec{Image: "memcached latest"}},
			want:   want{errs: []string{`spec.image: Invalid value: "memcached latest": must be a valid image reference, like memcached:1.6.39-alpine`}},
		},
		"RegistryNotAllowed": {
			reason: "An image from a registry the policy does not list is rejected, naming the policy field and the allowed registries.",
			args: args{spec: v1alpha1.MemcachedSpec{Image: "ghcr.io/x/memcached:1"},
				in: &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"docker.io", "registry.example.com"}}}},
			want: want{errs: []string{`spec.image: Invalid value: "ghcr.io/x/memcached:1": registry ghcr.io is not allowed; policy.allowedRegistries allows docker.io, registry.example.com`}},
		},
		"DockerHubAliases": {
			reason: "docker.io in the policy allows Docker Hub images written without a registry.",
			args: args{spec: v1alpha1.MemcachedSpec{Image: "memcached:1.6.38"},
				in: &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"docker.io"}}}},
			want: want{m: with(func(m *render.Memcached) { m.Image = "memcached:1.6.38" })},
		},
		"DigestRequiredTagOnly": {
			reason: "With policy.requireImageDigests, an image named by its tag alone is refused, naming the field, the value and the rule.",
			args: args{spec: v1alpha1.MemcachedSpec{Image: "memcached:1.6.39-alpine"},
				in: &v1beta1.Input{Policy: v1beta1.Policy{RequireImageDigests: true}}},
			want: want{errs: []string{`spec.image: Invalid value: "memcached:1.6.39-alpine": must name its digest, like memcached:1.6.39-alpine@sha256:<64 hex digits>: policy.requireImageDigests requires one, so that every node runs the same bytes`}},
		},
		"DigestRequiredShortDigest": {
			reason: "A digest that is not sha256 and 64 hex digits is no reference at all.",
			args: args{spec: v1alpha1.MemcachedSpec{Image: "memcached@sha256:eca5d776"},
				in: &v1beta1.Input{Policy: v1beta1.Policy{RequireImageDigests: true}}},
			want: want{errs: []string{`spec.image: Invalid value: "memcached@sha256:eca5d776": must be a valid image reference, like memcached:1.6.39-alpine`}},
		},
		"DigestRequiredByDigest": {
			reason: "An image named by its digest alone passes the digest rule and, from docker.io, the registry rule.",
			args: args{spec: v1alpha1.MemcachedSpec{Image: "memcached@sha256:" + strings.Repeat("ab", 32)},
				in: &v1beta1.Input{Policy: v1beta1.Policy{RequireImageDigests: true, AllowedRegistries: []string{"docker.io"}}}},
			want: want{m: with(func(m *render.Memcached) { m.Image = "memcached@sha256:" + strings.Repeat("ab", 32) })},
		},
		"DigestRequiredTagAndDigest": {
			reason: "An image named by tag and digest passes both rules: the registry is read from the name either way.",
			args: args{spec: v1alpha1.MemcachedSpec{Image: "registry.example.com:5000/cache/memcached:1.6.39-alpine@sha256:" + strings.Repeat("cd", 32)},
				in: &v1beta1.Input{
					Defaults: v1beta1.Defaults{Image: "registry.example.com:5000/cache/memcached:1.6.39-alpine", ExporterImage: "registry.example.com:5000/prom/memcached-exporter:v0.15.4"},
					Policy:   v1beta1.Policy{RequireImageDigests: true, AllowedRegistries: []string{"registry.example.com:5000"}},
				}},
			want: want{m: with(func(m *render.Memcached) {
				m.Image = "registry.example.com:5000/cache/memcached:1.6.39-alpine@sha256:" + strings.Repeat("cd", 32)
				m.ExporterImage = "registry.example.com:5000/prom/memcached-exporter:v0.15.4"
			})},
		},
		"DigestDoesNotEscapeRegistries": {
			reason: "A digest does not let an image from a registry the policy does not list through.",
			args: args{spec: v1alpha1.MemcachedSpec{Image: "ghcr.io/evil/memcached:1.6@sha256:" + strings.Repeat("ef", 32)},
				in: &v1beta1.Input{Policy: v1beta1.Policy{RequireImageDigests: true, AllowedRegistries: []string{"docker.io"}}}},
			want: want{errs: []string{`spec.image: Invalid value: "ghcr.io/evil/memcached:1.6@sha256:` + strings.Repeat("ef", 32) + `": registry ghcr.io is not allowed; policy.allowedRegistries allows docker.io`}},
		},
		"DigestNotRequired": {
			reason: "Without the policy, an image named by its tag alone is accepted as before.",
			args:   args{spec: v1alpha1.MemcachedSpec{Image: "memcached:1.6.38"}},
			want:   want{m: with(func(m *render.Memcached) { m.Image = "memcached:1.6.38" })},
		},
		"CPULimitBelowRequest": {
			reason: "A CPU limit below the request could never be scheduled as asked.",
			args:   args{spec: v1alpha1.MemcachedSpec{Resources: &v1alpha1.CPUResources{Limits: &v1alpha1.CPU{CPU: "50m"}}}},
			want:   want{errs: []string{"spec.resources.limits.cpu: Invalid value: \"50m\": must be at least resources.requests.cpu (100m)"}},
		},
		"CPUNotAQuantity": {
			reason: "A CPU that is not a positive quantity is rejected.",
			args:   args{spec: v1alpha1.MemcachedSpec{Resources: &v1alpha1.CPUResources{Requests: &v1alpha1.CPU{CPU: "-1"}}}},
			want:   want{errs: []string{`spec.resources.requests.cpu: Invalid value: "-1": must be a positive CPU quantity, like "100m" or "1"`}},
		},
		"InstanceRoot": {
			reason: "An Instance's fields are named where they live, under spec.forProvider.",
			args:   args{spec: v1alpha1.MemcachedSpec{Size: ptr.To[int32](4)}},
			want:   want{errs: []string{"spec.forProvider.size: Invalid value: 4: must be an integer between 1 and 3 (policy.maxSize)"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSettings(tc.args.in)
			if err != nil {
				t.Fatal(err)
			}
			root := field.NewPath("spec")
			if name == "InstanceRoot" {
				root = field.NewPath("spec", "forProvider")
			}
			got, errs := Memcached(root, tc.args.spec, "sessions", "team-a", s)
			if diff := cmp.Diff(tc.want.errs, messages(errs)); diff != "" {
				t.Errorf("%s\nMemcached(...) errors: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.m, got); diff != "" {
				t.Errorf("%s\nMemcached(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func messages(errs field.ErrorList) []string {
	if len(errs) == 0 {
		return nil
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

// settingsCase is an Input and the error NewSettings must return for it, "" for none.
type settingsCase struct {
	reason string
	in     *v1beta1.Input
	want   string
}

// checkNewSettings runs NewSettings on each case's Input and compares its error.
func checkNewSettings(t *testing.T, cases map[string]settingsCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewSettings(tc.in)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nNewSettings(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNewSettings(t *testing.T) {
	checkNewSettings(t, map[string]settingsCase{
		"NoInput": {reason: "No Input is every default.", in: nil},
		"ZeroMaxSize": {
			reason: "A policy allowing no replica is the platform team's mistake, named by Input field.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{MaxSize: ptr.To[int32](0)}},
			want:   "invalid function Input: policy.maxSize: Invalid value: 0: must be at least 1",
		},
		"DefaultMemoryOverCeiling": {
			reason: "A default the Input's own policy forbids is rejected, naming both fields and the limit.",
			in: &v1beta1.Input{
				Defaults: v1beta1.Defaults{MemoryLimitMB: ptr.To[int32](2048)},
				Policy:   v1beta1.Policy{MaxMemoryLimitMB: ptr.To[int32](512)},
			},
			want: "invalid function Input: defaults.memoryLimitMB: Invalid value: 2048: must be an integer between 16 and 512 (policy.maxMemoryLimitMB)",
		},
		"DefaultImageNotAllowed": {
			reason: "The default images must come from an allowed registry too, naming both fields.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"registry.example.com"}}},
			want: "invalid function Input: [defaults.image: Invalid value: \"" + DefaultImage + "\": registry docker.io is not allowed; policy.allowedRegistries allows registry.example.com, " +
				"defaults.exporterImage: Invalid value: \"prom/memcached-exporter:v0.15.4\": registry docker.io is not allowed; policy.allowedRegistries allows registry.example.com]",
		},
		"SmallPolicy": {
			reason: "A policy maximum of 32 MB without a default of its own is valid: the built-in default yields to it.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{MaxMemoryLimitMB: ptr.To[int32](32)}},
		},
		"PolicyBelowMemcachedsMinimum": {
			reason: "A policy maximum below the smallest useful cache is named alone, not with the default it makes invalid.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{MaxMemoryLimitMB: ptr.To[int32](8)}},
			want:   "invalid function Input: policy.maxMemoryLimitMB: Invalid value: 8: must be at least 16",
		},
		"AllowedProviderConfigs": {
			reason: "A default placement the policy allows is valid; a kind left empty reads ClusterProviderConfig on both sides.",
			in: &v1beta1.Input{
				Defaults: v1beta1.Defaults{ProviderConfigRef: &v1alpha1.ProviderConfigReference{Name: "workload-eu"}},
				Policy:   v1beta1.Policy{AllowedProviderConfigs: []v1alpha1.ProviderConfigReference{{Name: "workload-eu"}}},
			},
		},
		"DefaultProviderConfigNotAllowed": {
			reason: "A default placement the Input's own policy forbids is rejected, naming both fields.",
			in: &v1beta1.Input{
				Defaults: v1beta1.Defaults{ProviderConfigRef: &v1alpha1.ProviderConfigReference{Name: "workload-us"}},
				Policy:   v1beta1.Policy{AllowedProviderConfigs: []v1alpha1.ProviderConfigReference{{Name: "workload-eu"}, {Name: "edge", Kind: "ProviderConfig"}}},
			},
			want: `invalid function Input: defaults.providerConfigRef: Invalid value: "ClusterProviderConfig/workload-us": is not allowed; policy.allowedProviderConfigs allows ClusterProviderConfig/workload-eu, ProviderConfig/edge`,
		},
		"BadAllowedProviderConfig": {
			reason: "An allowed ProviderConfig must name one of the provider's kinds.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedProviderConfigs: []v1alpha1.ProviderConfigReference{{Name: "x", Kind: "Secret"}}}},
			want:   `invalid function Input: policy.allowedProviderConfigs[0].kind: Unsupported value: "Secret": supported values: "ClusterProviderConfig", "ProviderConfig"`,
		},
		"BadRegistry": {
			reason: "An allowed registry must be a registry host.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"docker.io", "not a host"}}},
			want:   `invalid function Input: policy.allowedRegistries[1]: Invalid value: "not a host": must be a registry host, like docker.io or registry.example.com:5000`,
		},
	})
}

func TestPlacement(t *testing.T) {
	platform := &v1beta1.Input{Defaults: v1beta1.Defaults{ProviderConfigRef: &v1alpha1.ProviderConfigReference{Name: "workload-eu"}}}
	cases := map[string]struct {
		reason string
		ref    *v1alpha1.ProviderConfigReference
		in     *v1beta1.Input
		want   *v1alpha1.ProviderConfigReference
		errs   []string
	}{
		"Here": {reason: "Without a ProviderConfig anywhere, Memcached runs in this cluster."},
		"PlatformDefault": {
			reason: "The Input's default places claims that name none, as a ClusterProviderConfig.",
			in:     platform,
			want:   &v1alpha1.ProviderConfigReference{Name: "workload-eu", Kind: KindClusterProviderConfig},
		},
		"ClaimWins": {
			reason: "A claim's own providerConfigRef wins over the platform's default.",
			ref:    &v1alpha1.ProviderConfigReference{Name: "team-cluster", Kind: "ProviderConfig"}, in: platform,
			want: &v1alpha1.ProviderConfigReference{Name: "team-cluster", Kind: KindProviderConfig},
		},
		"NoName": {
			reason: "A reference must name something.",
			ref:    &v1alpha1.ProviderConfigReference{},
			errs:   []string{"spec.providerConfigRef.name: Required value: the name of a ProviderConfig of the Memcached provider"},
		},
		"WrongKind": {
			reason: "Only the Memcached provider's two kinds can be referenced.",
			ref:    &v1alpha1.ProviderConfigReference{Name: "x", Kind: "Secret"},
			errs:   []string{`spec.providerConfigRef.kind: Unsupported value: "Secret": supported values: "ClusterProviderConfig", "ProviderConfig"`},
		},
		"Allowed": {
			reason: "A claim may name a config that policy.allowedProviderConfigs lists.",
			ref:    &v1alpha1.ProviderConfigReference{Name: "workload-eu"},
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedProviderConfigs: []v1alpha1.ProviderConfigReference{{Name: "workload-eu"}}}},
			want:   &v1alpha1.ProviderConfigReference{Name: "workload-eu", Kind: KindClusterProviderConfig},
		},
		"NotAllowed": {
			reason: "A claim naming a config the policy does not list is refused, naming what is allowed; the same name of the other kind is another config.",
			ref:    &v1alpha1.ProviderConfigReference{Name: "workload-eu", Kind: "ProviderConfig"},
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedProviderConfigs: []v1alpha1.ProviderConfigReference{{Name: "workload-eu"}}}},
			errs:   []string{`spec.providerConfigRef: Invalid value: "ProviderConfig/workload-eu": is not allowed; policy.allowedProviderConfigs allows ClusterProviderConfig/workload-eu`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSettings(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := Placement(field.NewPath("spec", "providerConfigRef"), tc.ref, s)
			if diff := cmp.Diff(tc.errs, messages(errs)); diff != "" {
				t.Errorf("%s\nPlacement(...) errors: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPlacement(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
