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
	// Builtin lets Instances fall back to the built-in policy (any registry, any
	// ProviderConfig) when no Composition is labelled; without it they are refused, since a
	// platform that forgot the label would otherwise give every tenant no limits at all.
	// The provider's --allow-builtin-policy sets it.
	Builtin bool

	mu       sync.Mutex
	key      string
	settings resolve.Settings
	err      error
}

// Settings are the defaults and limits Instances are resolved with: the labelled
// Composition's Input. Without a labelled Composition they are an error (the policy fails
// closed) unless Builtin allows the built-in ones (what a claim gets under a Composition
// without an Input). More than one labelled Composition is an error naming them all, even
// when their Inputs agree today: the provider cannot tell which one the platform means, and
// the next edit of either would make Instances obey whichever it read. So is a labelled
// Composition without a function-memcached Input, or with an invalid one.
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
	p.settings, p.err = settingsOf(l.Items, p.Builtin)
	p.key = key.String()
	return p.settings, p.err
}

// settingsOf reads the policy of the labelled Compositions cs; builtin allows the built-in
// policy when there are none.
func settingsOf(cs []unstructured.Unstructured, builtin bool) (resolve.Settings, error) {
	switch len(cs) {
	case 0:
		if builtin {
			return resolve.NewSettings(nil)
		}
		return resolve.Settings{}, errors.Errorf("no Composition is labelled %s=true, so Instances have no policy and are refused: label the Composition whose function-memcached Input they should obey, or start the provider with --allow-builtin-policy to give them the built-in one (any registry, any ProviderConfig)", v1alpha1.LabelInstancePolicy)
	case 1:
	default:
		names := make([]string, len(cs))
		for i := range cs {
			names[i] = cs[i].GetName()
		}
		all := "all"
		if len(names) == 2 {
			all = "both"
		}
		return resolve.Settings{}, errors.Errorf("Compositions %s and %s are %s labelled %s=true, so Instances are refused: label only the one whose function-memcached Input they should obey",
			strings.Join(names[:len(names)-1], ", "), names[len(names)-1], all, v1alpha1.LabelInstancePolicy)
	}
	raw, err := inputOf(&cs[0])
	if err != nil {
		return resolve.Settings{}, err
	}
	in, err := v1beta1.Decode(raw)
	if err != nil {
		return resolve.Settings{}, errors.Wrapf(err, "Composition %s", cs[0].GetName())
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
