package fn

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/render"
)

// maxCachedRenders bounds the render cache: a control plane with more distinct Memcacheds than
// this renders some of them again, which is correct, only slower.
const maxCachedRenders = 1024

// maxCachedRenderBytes is the largest rendering the cache keeps, as encoded. An ordinary one
// takes a few KiB; a tenant's spec can make one far larger (a TLS Secret padded to 1 MiB, which
// the TLS copy and the connection details carry, a list of tolerations), and without this bound
// a tenant rewriting its spec could make the shared function hold a gigabyte. A larger one is
// rendered on every call instead, costing its own tenant the time.
const maxCachedRenderBytes = 64 << 10

// rendered is what the function desires for one resolved Memcached, converted to the
// protobuf form of the response. Responses share it read-only (protobuf encodes a message
// from many goroutines at once as long as nobody changes it); TestRunFunctionConcurrently
// runs under the race detector to hold every call to that.
type rendered struct {
	// objects are the rendered objects by composed resource name.
	objects map[string]*structpb.Struct
	// endpoint and connection are what the XR reports: status.endpoint and, for claims,
	// connection details.
	endpoint   string
	connection map[string][]byte
	// selector is the pods' label selector as a string: the XR's status.selector, which the
	// scale subresource serves.
	selector string
	// want is what the rendered Deployment asks for, which readiness judges the observed one
	// against; empty when the Memcached runs elsewhere.
	want readiness.Want
}

// renderInput is everything renderAll renders from: the resolved Memcached, whether the XR is
// namespaced, where the Memcached is placed, and the composed resource name and name of the
// Instance that places it (see instanceFor). Its lru.KeyOf keys the render cache.
type renderInput struct {
	M                         render.Memcached
	Namespaced                bool
	Placement                 *cachev1alpha1.ProviderConfigReference
	InstanceKey, InstanceName string
}

// rendering returns the rendering of in, from the cache when it was rendered before: a
// Memcached's spec rarely changes, yet the function runs on every reconcile of it, and
// rendering and converting its objects is most of what a call would cost. The rendering is
// shared with every other call of the same Memcached: read it, never change it.
func (f *Function) rendering(in renderInput) (*rendered, error) {
	key, kerr := lru.KeyOf(in)
	if r, ok := f.renders.Get(key); ok && kerr == nil {
		return r, nil
	}
	r, err := renderAll(in.M, in.Namespaced, in.Placement, in.InstanceKey, in.InstanceName)
	if err != nil {
		return nil, err
	}
	if kerr == nil && r.size() <= maxCachedRenderBytes {
		f.renders.Add(key, r)
	}
	return r, nil
}

// size is how many bytes r's objects and connection details take, encoded.
func (r *rendered) size() int {
	n := 0
	for _, o := range r.objects {
		n += proto.Size(o)
	}
	for _, v := range r.connection {
		n += len(v)
	}
	return n
}

// renderAll renders every object m needs and converts each to a Struct: the Deployment,
// Service and PodDisruptionBudget here, or an Instance of the Memcached provider, named
// instanceName under composed resource name instanceKey, that runs them in the cluster
// placement reaches.
func renderAll(m render.Memcached, namespaced bool, placement *cachev1alpha1.ProviderConfigReference, instanceKey, instanceName string) (*rendered, error) {
	var objs []render.Object
	if placement != nil {
		i := remote.Instance(m, xpv2.ProviderConfigReference{Name: placement.Name, Kind: placement.Kind})
		i.SetName(instanceName)
		i.SetNamespace(m.Namespace)
		i.SetLabels(render.Labels(m))
		i.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: InstanceConnectionSecretName(instanceName)}
		objs = append(objs, i)
	} else {
		objs = render.Objects(m)
	}
	if namespaced {
		objs = append(objs, render.ConnectionSecret(m))
	}
	r := &rendered{
		objects:    make(map[string]*structpb.Struct, len(objs)),
		endpoint:   render.Endpoint(m),
		connection: render.ConnectionDetails(m),
		selector:   selector(m),
	}
	if placement != nil {
		// The credentials and the TLS pair are the provider's, in the target cluster: this
		// rendering knows endpoint, host and port only.
		local := m
		local.Auth, local.TLS = nil, nil
		r.connection = render.ConnectionDetails(local)
	}
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			r.want = readiness.Wanted(d)
		}
		u, err := render.ToApply(o)
		if err != nil {
			return nil, err
		}
		k := keyOf(o, m)
		if k == KeyInstance {
			k = instanceKey
		}
		if r.objects[k], err = structpb.NewStruct(u.Object); err != nil {
			return nil, errors.Wrapf(err, "cannot render %s %q", u.GetKind(), u.GetName())
		}
	}
	return r, nil
}

// keyOf is the composed resource name of an object rendered for m.
func keyOf(o render.Object, m render.Memcached) string {
	switch o.(type) {
	case *appsv1.Deployment:
		return KeyDeployment
	case *corev1.Service:
		return KeyService
	case *policyv1.PodDisruptionBudget:
		return KeyPDB
	case *networkingv1.NetworkPolicy:
		return KeyNetworkPolicy
	case *unstructured.Unstructured:
		if o.GetObjectKind().GroupVersionKind().Kind == render.PrometheusRuleKind {
			return KeyPrometheusRule
		}
		return KeyServiceMonitor
	case *corev1.Secret:
		switch o.GetName() {
		case render.AuthSecretName(m):
			return KeyAuthSecret
		case render.TLSSecretName(m):
			return KeyTLSSecret
		}
		return KeyConnectionSecret
	default:
		return KeyInstance
	}
}

// selector is the string form of the selector of m's pods.
func selector(m render.Memcached) string {
	return labels.SelectorFromSet(render.SelectorLabels(m)).String()
}
