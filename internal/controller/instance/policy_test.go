package instance

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/resolve"
)

// composition is a Composition named name with one function-memcached step whose Input is
// in (nil for a step without Input), labelled as the Instances' policy when policy is set.
func composition(name string, policy bool, in map[string]any) *unstructured.Unstructured {
	step := map[string]any{"step": "memcached", "functionRef": map[string]any{"name": "function-memcached"}}
	if in != nil {
		step["input"] = in
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.crossplane.io/v1",
		"kind":       "Composition",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"mode": "Pipeline", "pipeline": []any{step}},
	}}
	if policy {
		u.SetLabels(map[string]string{v1alpha1.LabelInstancePolicy: "true"})
	}
	return u
}

func inputOfPolicy(policy map[string]any) map[string]any {
	return map[string]any{"apiVersion": v1beta1.APIVersion, "kind": v1beta1.Kind, "policy": policy}
}

func TestPolicy(t *testing.T) {
	strict := inputOfPolicy(map[string]any{
		"maxSize":                int64(2),
		"allowedRegistries":      []any{"registry.example.com"},
		"allowedProviderConfigs": []any{map[string]any{"name": "workload-eu"}},
	})
	defaults, err := resolve.NewSettings(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason  string
		objs    []client.Object
		builtin bool
		want    *v1beta1.Input
		err     string
	}{
		"NoneLabelled": {
			reason: "Without a labelled Composition the policy fails closed: a platform that forgot the label does not give every tenant any registry and any ProviderConfig.",
			objs:   []client.Object{composition("xmemcacheds", false, strict)},
			err:    "no Composition is labelled memcached.example.com/instance-policy=true, so Instances have no policy and are refused: label the Composition whose function-memcached Input they should obey, or start the provider with --allow-builtin-policy to give them the built-in one (any registry, any ProviderConfig)",
		},
		"NoneLabelledBuiltinAllowed": {
			reason:  "With --allow-builtin-policy, Instances without a labelled Composition get the built-in policy, as a claim does under a Composition without an Input.",
			objs:    []client.Object{composition("xmemcacheds", false, strict)},
			builtin: true,
		},
		"Labelled": {
			reason: "The labelled Composition's Input is the policy: the same limits, registries and ProviderConfigs as its claims.",
			objs:   []client.Object{composition("xmemcacheds", true, strict), composition("other", false, nil)},
			want: &v1beta1.Input{Policy: v1beta1.Policy{
				MaxSize: ptr.To[int32](2), AllowedRegistries: []string{"registry.example.com"},
				AllowedProviderConfigs: []cachev1alpha1.ProviderConfigReference{{Name: "workload-eu"}},
			}},
			err: "Composition xmemcacheds: invalid function Input: [defaults.image: Invalid value: \"" + resolve.DefaultImage + "\": registry docker.io is not allowed; policy.allowedRegistries allows registry.example.com, defaults.exporterImage: Invalid value: \"prom/memcached-exporter:v0.15.4\": registry docker.io is not allowed; policy.allowedRegistries allows registry.example.com]",
		},
		"LabelledSame": {
			reason:  "Two labelled Compositions are refused, naming both, even while their Inputs agree: the next edit of either would make Instances obey whichever the provider read.",
			objs:    []client.Object{composition("a", true, inputOfPolicy(map[string]any{"maxSize": int64(2)})), composition("b", true, inputOfPolicy(map[string]any{"maxSize": int64(2)}))},
			builtin: true,
			err:     "Compositions a and b are both labelled memcached.example.com/instance-policy=true, so Instances are refused: label only the one whose function-memcached Input they should obey",
		},
		"LabelledDiffer": {
			reason: "Two labelled Compositions whose Inputs differ are the platform's mistake, named: the provider cannot tell which one it means.",
			objs:   []client.Object{composition("a", true, inputOfPolicy(map[string]any{"maxSize": int64(2)})), composition("b", true, inputOfPolicy(map[string]any{"maxSize": int64(3)}))},
			err:    "Compositions a and b are both labelled memcached.example.com/instance-policy=true, so Instances are refused: label only the one whose function-memcached Input they should obey",
		},
		"ThreeLabelled": {
			reason: "Every labelled Composition is named.",
			objs:   []client.Object{composition("c", true, nil), composition("a", true, nil), composition("b", true, nil)},
			err:    "Compositions a, b and c are all labelled memcached.example.com/instance-policy=true, so Instances are refused: label only the one whose function-memcached Input they should obey",
		},
		"NoInput": {
			reason: "A labelled Composition without a function-memcached Input is no policy.",
			objs:   []client.Object{composition("a", true, nil)},
			err:    "Composition a is labelled memcached.example.com/instance-policy=true but has no pipeline step with a memcached.fn.example.com/v1beta1 Input",
		},
		"InvalidInput": {
			reason: "A misspelt Input field is named, as the function names it, rather than a policy silently not applied.",
			objs:   []client.Object{composition("a", true, inputOfPolicy(map[string]any{"maxSise": int64(2)}))},
			err:    `Composition a: invalid function Input (memcached.fn.example.com/v1beta1): json: unknown field "maxSise"`,
		},
	}
	// The labelled Input that allows only registry.example.com must also set default images
	// from there; the case above shows the error, this one the policy itself.
	cases["Labelled"].objs[0].(*unstructured.Unstructured).Object["spec"].(map[string]any)["pipeline"].([]any)[0].(map[string]any)["input"].(map[string]any)["defaults"] = map[string]any{
		"image": "registry.example.com/memcached:1.6", "exporterImage": "registry.example.com/exporter:1",
	}
	c := cases["Labelled"]
	c.want.Defaults = v1beta1.Defaults{Image: "registry.example.com/memcached:1.6", ExporterImage: "registry.example.com/exporter:1"}
	c.err = ""
	cases["Labelled"] = c

	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kc := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(tc.objs...).Build()
			got, err := (&Policy{Kube: kc, Builtin: tc.builtin}).Settings(context.Background())
			if diff := cmp.Diff(tc.err, errString(err)); diff != "" {
				t.Errorf("\n%s\nSettings(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			want := defaults
			if tc.want != nil {
				if want, err = resolve.NewSettings(tc.want); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("\n%s\nSettings(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
