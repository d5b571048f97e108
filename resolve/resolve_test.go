package resolve

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/render"
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
		spec map[string]any
		in   *v1beta1.Input
	}
	type want struct {
		m    render.Memcached
		errs []string
	}
	base := render.Memcached{
		Name: "sessions", Namespace: "team-a", Size: 1, Image: DefaultImage, MemoryLimitMB: 64,
		MaxConnections: 1024, Threads: 4, CPURequest: ptr.To(resource.MustParse("100m")),
		HighAvailability: true, ExporterImage: DefaultExporterImage,
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
			args:   args{spec: nil},
			want:   want{m: base},
		},
		"EveryField": {
			reason: "Every field of the API reaches the renderer.",
			args: args{spec: map[string]any{
				"size": 3.0, "image": "docker.io/library/memcached:1.6.38", "memoryLimitMB": 512.0,
				"maxConnections": 4096.0, "threads": 8.0,
				"resources":        map[string]any{"requests": map[string]any{"cpu": "250m"}, "limits": map[string]any{"cpu": "2"}},
				"highAvailability": map[string]any{"enabled": false},
				"metrics":          map[string]any{"enabled": true},
			}},
			want: want{m: with(func(m *render.Memcached) {
				m.Size, m.Image, m.MemoryLimitMB, m.MaxConnections, m.Threads = 3, "docker.io/library/memcached:1.6.38", 512, 4096, 8
				m.CPURequest, m.CPULimit = ptr.To(resource.MustParse("250m")), ptr.To(resource.MustParse("2"))
				m.HighAvailability, m.Metrics = false, true
			})},
		},
		"InputDefaults": {
			reason: "The Input's defaults fill what the claim leaves empty.",
			args: args{spec: map[string]any{}, in: &v1beta1.Input{Defaults: v1beta1.Defaults{
				Image: "registry.example.com/memcached:1.6", MemoryLimitMB: ptr.To[int32](256), ExporterImage: "registry.example.com/exporter:1",
			}, Policy: v1beta1.Policy{MaxMemoryLimitMB: ptr.To[int32](512)}}},
			want: want{m: with(func(m *render.Memcached) {
				m.Image, m.MemoryLimitMB, m.ExporterImage = "registry.example.com/memcached:1.6", 256, "registry.example.com/exporter:1"
			})},
		},
		"SizeOverPolicy": {
			reason: "A size over policy.maxSize names the field, the value and the limit.",
			args:   args{spec: map[string]any{"size": 9.0}},
			want:   want{errs: []string{"spec.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)"}},
		},
		"SizeRaisedByPolicy": {
			reason: "A platform may allow more replicas.",
			args:   args{spec: map[string]any{"size": 9.0}, in: &v1beta1.Input{Policy: v1beta1.Policy{MaxSize: ptr.To[int32](10)}}},
			want:   want{m: with(func(m *render.Memcached) { m.Size = 9 })},
		},
		"SizeZeroNegativeHugeFraction": {
			reason: "Zero, negative, huge and fractional sizes are all rejected with the value the user wrote.",
			args:   args{spec: map[string]any{"size": -1.0, "threads": 1e12, "maxConnections": 0.5, "memoryLimitMB": 8.0}},
			want: want{errs: []string{
				"spec.size: Invalid value: -1: must be an integer between 1 and 3 (policy.maxSize)",
				"spec.memoryLimitMB: Invalid value: 8: must be an integer between 16 and 1024 (policy.maxMemoryLimitMB)",
				"spec.maxConnections: Invalid value: 0.5: must be an integer between 1 and 65536",
				"spec.threads: Invalid value: 1e+12: must be an integer between 1 and 64",
			}},
		},
		"WrongTypes": {
			reason: "A wrong type names the field and shows the value.",
			args: args{spec: map[string]any{
				"size": "three", "image": 7.0, "resources": "lots", "highAvailability": map[string]any{"enabled": "yes"},
			}},
			want: want{errs: []string{
				`spec.size: Invalid value: "three": must be an integer between 1 and 3 (policy.maxSize)`,
				"spec.image: Invalid value: 7: must be a string",
				`spec.highAvailability.enabled: Invalid value: "yes": must be true or false`,
				`spec.resources: Invalid value: "lots": must be an object`,
			}},
		},
		"BadImage": {
			reason: "An image with spaces is not a reference.",
			args:   args{spec: map[string]any{"image": "memcached latest"}},
			want:   want{errs: []string{`spec.image: Invalid value: "memcached latest": must be a valid image reference, like memcached:1.6.39-alpine`}},
		},
		"RegistryNotAllowed": {
			reason: "An image from a registry the policy does not list is rejected, naming the allowed ones.",
			args: args{spec: map[string]any{"image": "ghcr.io/x/memcached:1"},
				in: &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"docker.io", "registry.example.com"}}}},
			want: want{errs: []string{`spec.image: Invalid value: "ghcr.io/x/memcached:1": registry ghcr.io is not allowed; allowed registries are docker.io, registry.example.com`}},
		},
		"DockerHubAliases": {
			reason: "docker.io in the policy allows Docker Hub images written without a registry.",
			args: args{spec: map[string]any{"image": "memcached:1.6.38"},
				in: &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"docker.io"}}}},
			want: want{m: with(func(m *render.Memcached) { m.Image = "memcached:1.6.38" })},
		},
		"CPULimitBelowRequest": {
			reason: "A CPU limit below the request could never be scheduled as asked.",
			args:   args{spec: map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "50m"}}}},
			want:   want{errs: []string{"spec.resources.limits.cpu: Invalid value: \"50m\": must be at least resources.requests.cpu (100m)"}},
		},
		"CPUNotAQuantity": {
			reason: "A CPU that is not a positive quantity is rejected.",
			args:   args{spec: map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "-1"}}}},
			want:   want{errs: []string{`spec.resources.requests.cpu: Invalid value: "-1": must be a positive CPU quantity, like "100m" or "1"`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSettings(tc.args.in)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := Memcached(tc.args.spec, "sessions", "team-a", s)
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

// TestResolveReadsEveryAPIField proves the resolver and the API types agree: for every
// leaf field of v1alpha1.XMemcachedSpec (and so of the XRD), a value of the wrong type is
// reported by Memcached or Placement at exactly that field. A field added to the API but not
// to the resolver fails here.
func TestResolveReadsEveryAPIField(t *testing.T) {
	leaves := jsonLeaves(reflect.TypeFor[v1alpha1.XMemcachedSpec](), nil)
	if len(leaves) < 11 {
		t.Fatalf("found only %d leaf fields in MemcachedSpec: %v", len(leaves), leaves)
	}
	for _, leaf := range leaves {
		t.Run(strings.Join(leaf, "."), func(t *testing.T) {
			spec := map[string]any{}
			cur := spec
			for _, k := range leaf[:len(leaf)-1] {
				next := map[string]any{}
				cur[k] = next
				cur = next
			}
			cur[leaf[len(leaf)-1]] = []any{"wrong type"}
			_, errs := Memcached(spec, "sessions", "team-a", defaults(t))
			_, perrs := Placement(spec, defaults(t))
			errs = append(errs, perrs...)
			want := "spec." + strings.Join(leaf, ".")
			if len(errs) != 1 || errs[0].Field != want {
				t.Errorf("Memcached(%v): want one error at %s, got %v", spec, want, errs)
			}
		})
	}
}

// jsonLeaves lists the JSON paths of the scalar fields of a struct type.
func jsonLeaves(t reflect.Type, prefix []string) [][]string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out [][]string
	for i := range t.NumField() {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if name == "" && f.Anonymous {
			out = append(out, jsonLeaves(ft, prefix)...) // Inline: the parent's fields.
			continue
		}
		path := append(append([]string{}, prefix...), name)
		if ft.Kind() == reflect.Struct {
			out = append(out, jsonLeaves(ft, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

func TestNewSettings(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     *v1beta1.Input
		want   string
	}{
		"NoInput": {reason: "No Input is every default.", in: nil},
		"ZeroMaxSize": {
			reason: "A policy allowing no replica is the platform team's mistake, named by Input field.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{MaxSize: ptr.To[int32](0)}},
			want:   "invalid function Input: policy.maxSize: Invalid value: 0: must be at least 1",
		},
		"DefaultMemoryOverCeiling": {
			reason: "A default the policy itself forbids is rejected.",
			in:     &v1beta1.Input{Defaults: v1beta1.Defaults{MemoryLimitMB: ptr.To[int32](2048)}},
			want:   "invalid function Input: defaults.memoryLimitMB: Invalid value: 2048: must be between 16 and policy.maxMemoryLimitMB",
		},
		"DefaultImageNotAllowed": {
			reason: "The default image must come from an allowed registry too.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"registry.example.com"}}},
			want: "invalid function Input: [defaults.image: Invalid value: \"memcached:1.6.39-alpine\": registry docker.io is not allowed; allowed registries are registry.example.com, " +
				"defaults.exporterImage: Invalid value: \"prom/memcached-exporter:v0.15.4\": registry docker.io is not allowed; allowed registries are registry.example.com]",
		},
		"BadRegistry": {
			reason: "An allowed registry must be a registry host.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedRegistries: []string{"docker.io", "not a host"}}},
			want:   `invalid function Input: policy.allowedRegistries[1]: Invalid value: "not a host": must be a registry host, like docker.io or registry.example.com:5000`,
		},
	}
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

func TestPlacement(t *testing.T) {
	platform := &v1beta1.Input{Defaults: v1beta1.Defaults{ProviderConfigRef: &v1alpha1.ProviderConfigReference{Name: "workload-eu"}}}
	cases := map[string]struct {
		reason string
		spec   map[string]any
		in     *v1beta1.Input
		want   *v1alpha1.ProviderConfigReference
		errs   []string
	}{
		"Here": {reason: "Without a ProviderConfig anywhere, Memcached runs in this cluster.", spec: map[string]any{}},
		"PlatformDefault": {
			reason: "The Input's default places claims that name none, as a ClusterProviderConfig.",
			spec:   map[string]any{}, in: platform,
			want: &v1alpha1.ProviderConfigReference{Name: "workload-eu", Kind: KindClusterProviderConfig},
		},
		"ClaimWins": {
			reason: "A claim's own providerConfigRef wins over the platform's default.",
			spec:   map[string]any{"providerConfigRef": map[string]any{"name": "team-cluster", "kind": "ProviderConfig"}}, in: platform,
			want: &v1alpha1.ProviderConfigReference{Name: "team-cluster", Kind: KindProviderConfig},
		},
		"NoName": {
			reason: "A reference must name something.",
			spec:   map[string]any{"providerConfigRef": map[string]any{}},
			errs:   []string{"spec.providerConfigRef.name: Required value: the name of a ProviderConfig of the Memcached provider"},
		},
		"WrongKind": {
			reason: "Only the Memcached provider's two kinds can be referenced.",
			spec:   map[string]any{"providerConfigRef": map[string]any{"name": "x", "kind": "Secret"}},
			errs:   []string{`spec.providerConfigRef.kind: Unsupported value: "Secret": supported values: "ClusterProviderConfig", "ProviderConfig"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSettings(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := Placement(tc.spec, s)
			if diff := cmp.Diff(tc.errs, messages(errs)); diff != "" {
				t.Errorf("%s\nPlacement(...) errors: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nPlacement(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
