package fn

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	memcachedv1alpha1 "github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// A Memcached moves between clusters by Instance: an Instance's providerConfigRef is
// immutable, so the function composes a new Instance, under a composed resource name and an
// Instance name derived from the new placement, and stops desiring the old one. Crossplane
// then deletes the old Instance, and the provider deletes what it ran in the old cluster
// (only what it labelled as that Instance's), while the new Instance creates the Memcached
// in the new cluster. Moving here stops desiring every Instance; moving away from here stops
// desiring the Deployment, Service and PodDisruptionBudget, which Crossplane deletes.

// isInstanceKey reports whether a composed resource name is one of the function's Instances.
func isInstanceKey(k string) bool {
	return k == KeyInstance || strings.HasPrefix(k, KeyInstance+"-")
}

// observedInstances reads every observed Instance of the function's, by composed resource
// name: nil when there is none, as for every Memcached that runs here.
func observedInstances(observed map[string]*fnv1.Resource) (map[string]*memcachedv1alpha1.Instance, error) {
	var out map[string]*memcachedv1alpha1.Instance
	for k, o := range observed {
		if !isInstanceKey(k) {
			continue
		}
		i := &memcachedv1alpha1.Instance{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.GetResource().AsMap(), i); err != nil {
			return nil, errors.Wrapf(err, "cannot read the observed Instance %q", str(o.GetResource(), "metadata", "name"))
		}
		if out == nil {
			out = map[string]*memcachedv1alpha1.Instance{}
		}
		out[k] = i
	}
	return out, nil
}

// instanceFor returns the composed resource name and Instance name under which to desire the
// Instance that places a Memcached named name where placement says, and the observed one
// when it exists already. The first Instance of a claim is memcached-instance, named like
// the claim; one made while another is still observed (a move) gets a suffix derived from
// its placement, so that it never takes the old one's place in Crossplane's eyes.
func instanceFor(instances map[string]*memcachedv1alpha1.Instance, placement *cachev1alpha1.ProviderConfigReference, name string) (key, instanceName string, observed *memcachedv1alpha1.Instance) {
	keys := slices.Sorted(maps.Keys(instances))
	for _, k := range keys {
		if ref := instances[k].Spec.ProviderConfigReference; ref != nil && ref.Kind == placement.Kind && ref.Name == placement.Name {
			return k, instances[k].GetName(), instances[k]
		}
	}
	if len(instances) == 0 {
		return KeyInstance, name, nil
	}
	sum := sha256.Sum256([]byte(placement.Kind + "/" + placement.Name))
	suffix := hex.EncodeToString(sum[:])[:8]
	return KeyInstance + "-" + suffix, name + "-" + suffix, nil
}

// anyInstance returns one of instances, the same one every time, or nil.
func anyInstance(instances map[string]*memcachedv1alpha1.Instance) *memcachedv1alpha1.Instance {
	keys := slices.Sorted(maps.Keys(instances))
	if len(keys) == 0 {
		return nil
	}
	return instances[keys[0]]
}
