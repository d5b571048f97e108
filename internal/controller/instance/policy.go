package instance

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/resolve"
)

// CompositionListGVK is the kind the provider lists to find the platform's policy.
var CompositionListGVK = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1", Kind: "CompositionList"}

// A Policy reads the platform's policy for Instances from where the platform sets it for
// claims: the function-memcached Input of a Composition. The platform says which by labelling
// that Composition memcached.example.com/instance-policy=true, so that Instances created
// directly obey exactly what claims obey (registries, sizes, cache sizes, default images,
// allowed ProviderConfigs), with resolve.NewSettings as the one reading of it.
type Policy struct {
	// Kube lists Compositions, from a cache.
	Kube client.Reader

	mu       sync.Mutex
	key      string
	settings resolve.Settings
	err      error
}

// Settings are the defaults and limits Instances are resolved with: the labelled
// Composition's Input, or, when no Composition carries the label, the built-in ones (what a
// claim gets under a Composition without an Input). Labelled Compositions whose Inputs differ
// are an error naming them, since the provider cannot tell which one the platform means; so
// is a labelled Composition without a function-memcached Input, or with an invalid one.
func (p *Policy) Settings(ctx context.Context) (resolve.Settings, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(CompositionListGVK)
	if err := p.Kube.List(ctx, l, client.MatchingLabels{v1alpha1.LabelInstancePolicy: "true"}); err != nil {
		return resolve.Settings{}, errors.Wrapf(err, "cannot list the Compositions labelled %s=true, whose Input is the policy of Instances (the provider needs get, list and watch on compositions.apiextensions.crossplane.io)", v1alpha1.LabelInstancePolicy)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].GetName() < l.Items[j].GetName() })
	var key strings.Builder
	for _, c := range l.Items {
		key.WriteString(c.GetName() + "@" + c.GetResourceVersion() + " ")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if key.String() == p.key && p.key != "" {
		return p.settings, p.err
	}
	p.settings, p.err = settingsOf(l.Items)
	p.key = key.String()
	return p.settings, p.err
}

// settingsOf reads the policy of the labelled Compositions cs.
func settingsOf(cs []unstructured.Unstructured) (resolve.Settings, error) {
	if len(cs) == 0 {
		return resolve.NewSettings(nil)
	}
	var first []byte
	var in *v1beta1.Input
	for i := range cs {
		raw, err := inputOf(&cs[i])
		if err != nil {
			return resolve.Settings{}, err
		}
		if i == 0 {
			first = raw
			if in, err = v1beta1.Decode(raw); err != nil {
				return resolve.Settings{}, errors.Wrapf(err, "Composition %s", cs[i].GetName())
			}
			continue
		}
		if string(raw) != string(first) {
			return resolve.Settings{}, errors.Errorf("Compositions %s and %s are both labelled %s=true and their function-memcached Inputs differ: label only the one whose Input Instances should obey",
				cs[0].GetName(), cs[i].GetName(), v1alpha1.LabelInstancePolicy)
		}
	}
	s, err := resolve.NewSettings(in)
	return s, errors.Wrapf(err, "Composition %s", cs[0].GetName())
}

// inputOf returns, as canonical JSON, the Input of c's function-memcached pipeline step.
func inputOf(c *unstructured.Unstructured) ([]byte, error) {
	steps, _, _ := unstructured.NestedSlice(c.Object, "spec", "pipeline")
	for _, s := range steps {
		in, _, _ := unstructured.NestedMap(asMap(s), "input")
		if in["apiVersion"] == v1beta1.APIVersion && in["kind"] == v1beta1.Kind {
			b, err := json.Marshal(in)
			return b, errors.Wrapf(err, "cannot read the Input of Composition %s", c.GetName())
		}
	}
	return nil, errors.Errorf("Composition %s is labelled %s=true but has no pipeline step with a %s %s", c.GetName(), v1alpha1.LabelInstancePolicy, v1beta1.APIVersion, v1beta1.Kind)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
