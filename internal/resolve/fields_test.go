package resolve

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
)

// everyFieldSpec sets every field of the API's spec (one element of each list), valid under
// everyFieldSettings, so that a change of any one field shows.
func everyFieldSpec() v1alpha1.MemcachedSpec {
	return v1alpha1.MemcachedSpec{
		Size: ptr.To[int32](2), Image: "memcached:1.6.39-alpine", MemoryLimitMB: ptr.To[int32](256),
		MaxConnections: ptr.To[int32](1024), Threads: ptr.To[int32](4),
		Resources:        &v1alpha1.CPUResources{Requests: &v1alpha1.CPU{CPU: "250m"}, Limits: &v1alpha1.CPU{CPU: "1"}},
		HighAvailability: &v1alpha1.HighAvailability{Enabled: ptr.To(true)},
		Metrics:          &v1alpha1.Metrics{Enabled: ptr.To(true)},
		MaxItemSizeMB:    ptr.To[int32](2),
		Auth:             &v1alpha1.Auth{Enabled: ptr.To(true), Rotation: "2026-12-01"},
		TLS:              &v1alpha1.TLS{SecretName: "sessions-tls"},
		NetworkPolicy: &v1alpha1.NetworkPolicy{Enabled: ptr.To(true), AllowedNamespaces: &metav1.LabelSelector{
			MatchLabels:      map[string]string{corev1.LabelMetadataName: "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"api"}}},
		}},
		Scheduling: &v1alpha1.Scheduling{
			NodeSelector: map[string]string{"disk": "ssd"},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache",
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)}},
			PriorityClassName: "cache",
		},
		ExternalStorage: &v1alpha1.ExternalStorage{SizeMB: 1024},
	}
}

// specSample changes one field of everyFieldSpec. A valid change must change what
// resolve.Memcached returns; a field with only one valid value says so in refused, and its
// sample's other value must be refused, at that field.
type specSample struct {
	set     func(s *v1alpha1.MemcachedSpec)
	refused string
}

// specSamples hold a change of every field of v1alpha1.MemcachedSpec, by its JSON path ("[]"
// for each element of a list). A field added to the API needs one here.
var specSamples = map[string]specSample{
	"size":                     {set: func(s *v1alpha1.MemcachedSpec) { s.Size = ptr.To[int32](3) }},
	"image":                    {set: func(s *v1alpha1.MemcachedSpec) { s.Image = "memcached:1.6.38-alpine" }},
	"memoryLimitMB":            {set: func(s *v1alpha1.MemcachedSpec) { s.MemoryLimitMB = ptr.To[int32](512) }},
	"maxConnections":           {set: func(s *v1alpha1.MemcachedSpec) { s.MaxConnections = ptr.To[int32](2048) }},
	"threads":                  {set: func(s *v1alpha1.MemcachedSpec) { s.Threads = ptr.To[int32](8) }},
	"resources.requests.cpu":   {set: func(s *v1alpha1.MemcachedSpec) { s.Resources.Requests.CPU = "500m" }},
	"resources.limits.cpu":     {set: func(s *v1alpha1.MemcachedSpec) { s.Resources.Limits.CPU = "2" }},
	"highAvailability.enabled": {set: func(s *v1alpha1.MemcachedSpec) { s.HighAvailability.Enabled = ptr.To(false) }},
	"metrics.enabled":          {set: func(s *v1alpha1.MemcachedSpec) { s.Metrics.Enabled = ptr.To(false) }},
	"maxItemSizeMB":            {set: func(s *v1alpha1.MemcachedSpec) { s.MaxItemSizeMB = ptr.To[int32](4) }},
	// A rotation needs authentication on.
	"auth.enabled":          {set: func(s *v1alpha1.MemcachedSpec) { s.Auth.Enabled, s.Auth.Rotation = ptr.To(false), "" }},
	"auth.rotation":         {set: func(s *v1alpha1.MemcachedSpec) { s.Auth.Rotation = "2027-01-01" }},
	"auth.mode":             {set: func(s *v1alpha1.MemcachedSpec) { s.Auth.Mode = v1alpha1.AuthModeSASL }},
	"tls.secretName":        {set: func(s *v1alpha1.MemcachedSpec) { s.TLS.SecretName = "renewed-tls" }},
	"networkPolicy.enabled": {set: func(s *v1alpha1.MemcachedSpec) { s.NetworkPolicy.Enabled = ptr.To(false) }},
	"networkPolicy.allowedNamespaces.matchLabels": {set: func(s *v1alpha1.MemcachedSpec) {
		s.NetworkPolicy.AllowedNamespaces.MatchLabels[corev1.LabelMetadataName] = "shop"
	}},
	"networkPolicy.allowedNamespaces.matchExpressions[].key": {set: func(s *v1alpha1.MemcachedSpec) {
		s.NetworkPolicy.AllowedNamespaces.MatchExpressions[0].Key = "team"
	}},
	"networkPolicy.allowedNamespaces.matchExpressions[].operator": {
		set: func(s *v1alpha1.MemcachedSpec) {
			s.NetworkPolicy.AllowedNamespaces.MatchExpressions[0].Operator = metav1.LabelSelectorOpNotIn
		},
		refused: "only In names the namespaces a selector admits",
	},
	"networkPolicy.allowedNamespaces.matchExpressions[].values": {set: func(s *v1alpha1.MemcachedSpec) {
		s.NetworkPolicy.AllowedNamespaces.MatchExpressions[0].Values = []string{"api", "shop"}
	}},
	"scheduling.nodeSelector":      {set: func(s *v1alpha1.MemcachedSpec) { s.Scheduling.NodeSelector["disk"] = "hdd" }},
	"scheduling.tolerations[].key": {set: func(s *v1alpha1.MemcachedSpec) { s.Scheduling.Tolerations[0].Key = "gpu" }},
	// Exists matches any value, so it takes none.
	"scheduling.tolerations[].operator": {set: func(s *v1alpha1.MemcachedSpec) {
		s.Scheduling.Tolerations[0].Operator, s.Scheduling.Tolerations[0].Value = corev1.TolerationOpExists, ""
	}},
	"scheduling.tolerations[].value": {set: func(s *v1alpha1.MemcachedSpec) { s.Scheduling.Tolerations[0].Value = "sessions" }},
	// Only NoExecute takes tolerationSeconds.
	"scheduling.tolerations[].effect": {set: func(s *v1alpha1.MemcachedSpec) {
		s.Scheduling.Tolerations[0].Effect, s.Scheduling.Tolerations[0].TolerationSeconds = corev1.TaintEffectNoSchedule, nil
	}},
	"scheduling.tolerations[].tolerationSeconds": {set: func(s *v1alpha1.MemcachedSpec) { s.Scheduling.Tolerations[0].TolerationSeconds = ptr.To[int64](120) }},
	"scheduling.priorityClassName":               {set: func(s *v1alpha1.MemcachedSpec) { s.Scheduling.PriorityClassName = "batch" }},
	"externalStorage.sizeMB":                     {set: func(s *v1alpha1.MemcachedSpec) { s.ExternalStorage.SizeMB = 768 }},
	"externalStorage.storageClassName":           {set: func(s *v1alpha1.MemcachedSpec) { s.ExternalStorage.StorageClassName = "local-ssd" }},
}

// localOnly are the fields of the spec that resolve.Memcached does not read, because only
// the function uses them in the cluster of the claim, each with the reason docs/api.md's
// table gives. None is today.
var localOnly = map[string]string{}

// TestEverySpecFieldResolves proves that resolve reads every field of the API's spec (and so
// of the XRDs and the Instance's forProvider): a valid change of any leaf field, found by
// walking v1alpha1.MemcachedSpec by reflection (into structs, pointers and lists), changes
// what Memcached returns; a field with one valid value only is refused at that field when it
// has another; a field resolve must not read is in localOnly, with the reason docs/api.md
// gives.
func TestEverySpecFieldResolves(t *testing.T) {
	s, err := NewSettings(&v1beta1.Input{
		Defaults: v1beta1.Defaults{AuthProxyImage: "registry.example.com/auth-proxy:1"},
		Policy: v1beta1.Policy{
			NetworkPolicy:         v1beta1.NetworkPolicyPolicy{AllowedNamespaceLabels: []string{corev1.LabelMetadataName, "team"}},
			AllowedStorageClasses: []string{"local-ssd"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	root := field.NewPath("spec")
	base, errs := Memcached(root, everyFieldSpec(), "sessions", "team-a", s)
	if len(errs) > 0 {
		t.Fatalf("Memcached(everyFieldSpec()): %v", errs)
	}
	paths := specPaths(reflect.TypeFor[v1alpha1.MemcachedSpec](), "")
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			if reason, ok := localOnly[p]; ok {
				if !strings.Contains(string(api), reason) {
					t.Errorf("docs/api.md does not give the reason spec.%s is local only: %q", p, reason)
				}
				return
			}
			sample, ok := specSamples[p]
			if !ok {
				t.Fatalf("spec.%s has no sample in specSamples (internal/resolve/fields_test.go): add a valid value that changes what resolve.Memcached returns and make resolve read it, or list it in localOnly with the reason and add that reason to docs/api.md's table", p)
			}
			spec := everyFieldSpec()
			sample.set(&spec)
			if cmp.Equal(specValues(everyFieldSpec(), p), specValues(spec, p)) {
				t.Fatalf("specSamples' change of spec.%s leaves it as it was", p)
			}
			got, errs := Memcached(root, spec, "sessions", "team-a", s)
			if sample.refused != "" {
				at := "spec." + strings.ReplaceAll(p, "[]", "[0]")
				if !slices.ContainsFunc(errs, func(e *field.Error) bool { return e.Field == at }) {
					t.Errorf("spec.%s has one valid value only (%s), but another is not refused at %s: %v", p, sample.refused, at, errs)
				}
				if !strings.Contains(string(api), sample.refused) {
					t.Errorf("docs/api.md does not say why spec.%s has one valid value only: %q", p, sample.refused)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("specSamples' change of spec.%s is refused: %v", p, errs)
			}
			if cmp.Equal(base, got) {
				t.Errorf("a change of spec.%s changes nothing resolve.Memcached returns: resolve it into render.Memcached (and render it), or list it in localOnly with the reason and add that reason to docs/api.md's table", p)
			}
		})
	}
	for p := range specSamples {
		if !slices.Contains(paths, p) {
			t.Errorf("specSamples has spec.%s, which the API does not have: remove it", p)
		}
	}
}

// specPaths are the JSON paths of every leaf field of t: structs and pointers are walked
// into, each element of a list is "[]", and a map is a leaf.
func specPaths(t reflect.Type, prefix string) []string {
	switch t.Kind() {
	case reflect.Pointer:
		return specPaths(t.Elem(), prefix)
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Struct || e.Kind() == reflect.Pointer {
			return specPaths(e, prefix+"[]")
		}
	case reflect.Struct:
		var paths []string
		for f := range t.Fields() {
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				name = f.Name
			}
			p := name
			if prefix != "" {
				p = prefix + "." + name
			}
			if f.Anonymous && f.Tag.Get("json") == ",inline" {
				p = prefix
			}
			paths = append(paths, specPaths(f.Type, p)...)
		}
		return paths
	}
	return []string{prefix}
}

// specValues are the values at path p (as specPaths writes it) of spec, one per list element.
func specValues(spec v1alpha1.MemcachedSpec, p string) []any {
	vs := []reflect.Value{reflect.ValueOf(spec)}
	for part := range strings.SplitSeq(strings.ReplaceAll(p, "[]", ".[]"), ".") {
		var next []reflect.Value
		for _, v := range vs {
			for v.Kind() == reflect.Pointer && !v.IsNil() {
				v = v.Elem()
			}
			switch {
			case v.Kind() == reflect.Pointer:
			case part == "[]":
				for i := range v.Len() {
					next = append(next, v.Index(i))
				}
			default:
				for i := range v.NumField() {
					if strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0] == part {
						next = append(next, v.Field(i))
					}
				}
			}
		}
		vs = next
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v.Interface()
	}
	return out
}
