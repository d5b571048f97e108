package fn

import (
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/instance"
	"github.com/example/function-memcached/render"
)

// maxCachedRenders bounds the render cache. Each entry is a few kilobytes; a control plane
// with more distinct Memcacheds than this re-renders some of them, which is correct, only
// slower.
const maxCachedRenders = 1024

// rendered is what the function desires for one resolved Memcached, converted to the
// protobuf form of the response once. Responses share these Structs read-only: protobuf
// marshals a message concurrently as long as nobody mutates it.
type rendered struct {
	// objects are the rendered objects, each already encoded as the resource field of a
	// fnv1.Resource (see encode).
	objects map[string][]byte
	// endpoint and connection are what the XR reports: status.endpoint and, for claims,
	// connection details.
	endpoint   string
	connection map[string][]byte
}

// renderKey identifies a rendering. render.Memcached is comparable except for its CPU
// quantities, which are pointers; their canonical strings stand in for them.
type renderKey struct {
	m                    render.Memcached
	cpuRequest, cpuLimit string
	namespaced           bool
	placement            cachev1alpha1.ProviderConfigReference
}

// renderCache remembers renderings: a Memcached's spec rarely changes, yet the function
// runs on every reconcile of it.
type renderCache struct {
	mu sync.RWMutex
	m  map[renderKey]*rendered
}

func (c *renderCache) get(m render.Memcached, namespaced bool, placement *cachev1alpha1.ProviderConfigReference) (*rendered, error) {
	k := renderKey{m: m, namespaced: namespaced}
	if placement != nil {
		k.placement = *placement
	}
	if m.CPURequest != nil {
		k.cpuRequest = m.CPURequest.String()
	}
	if m.CPULimit != nil {
		k.cpuLimit = m.CPULimit.String()
	}
	k.m.CPURequest, k.m.CPULimit = nil, nil

	c.mu.RLock()
	r, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return r, nil
	}
	r, err := renderAll(m, namespaced, placement)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedRenders {
		for old := range c.m { // Evict one entry at random.
			delete(c.m, old)
			break
		}
	}
	c.m[k] = r
	c.mu.Unlock()
	return r, nil
}

// renderAll renders every object m needs and converts each to a Struct: the Deployment,
// Service and PodDisruptionBudget here, or an Instance of the Memcached provider that runs
// them in the cluster placement reaches.
func renderAll(m render.Memcached, namespaced bool, placement *cachev1alpha1.ProviderConfigReference) (*rendered, error) {
	objs := map[string]runtime.Object{}
	if placement != nil {
		i := instance.ForMemcached(m, xpv2.ProviderConfigReference{Name: placement.Name, Kind: placement.Kind})
		i.SetName(m.Name)
		i.SetNamespace(m.Namespace)
		i.SetLabels(render.Labels(m))
		objs[KeyInstance] = i
	} else {
		for _, o := range render.Objects(m) {
			objs[keyOf(o)] = o
		}
	}
	if namespaced {
		objs[KeyConnectionSecret] = render.ConnectionSecret(m)
	}
	r := &rendered{
		objects:    make(map[string][]byte, len(objs)),
		endpoint:   render.Endpoint(m),
		connection: render.ConnectionDetails(m),
	}
	for k, o := range objs {
		s, err := toStruct(o)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot render %s", k)
		}
		if r.objects[k], err = encode(s); err != nil {
			return nil, errors.Wrapf(err, "cannot encode %s", k)
		}
	}
	return r, nil
}

// encode returns s encoded on the wire as field 1 (resource) of a fnv1.Resource.
//
// Encoding the rendered objects is most of the cost of a response, and they only change
// when the spec does. So the function encodes each rendering once, and each response
// carries the bytes as the Resource's unknown fields: protobuf writes unknown fields out
// verbatim, and Crossplane, decoding the response, reads them as the resource field they
// are. In this process the desired Resource's Resource field stays nil; see desiredResource.
func encode(s *structpb.Struct) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err != nil {
		return nil, err
	}
	field := protowire.AppendTag(nil, resourceField, protowire.BytesType)
	return protowire.AppendBytes(field, b), nil
}

// resourceField is the field number of fnv1.Resource's resource (a google.protobuf.Struct).
var resourceField = protowire.Number((&fnv1.Resource{}).ProtoReflect().Descriptor().Fields().ByName("resource").Number())

// desiredResource is a desired fnv1.Resource whose resource is an encoded rendering.
func desiredResource(encoded []byte, ready fnv1.Ready) *fnv1.Resource {
	r := &fnv1.Resource{Ready: ready}
	r.ProtoReflect().SetUnknown(encoded)
	return r
}

// keyOf is the composed resource name of a rendered object.
func keyOf(o render.Object) string {
	switch o.(type) {
	case *appsv1.Deployment:
		return KeyDeployment
	case *corev1.Service:
		return KeyService
	case *policyv1.PodDisruptionBudget:
		return KeyPDB
	default:
		return "memcached-" + strings.ToLower(o.GetObjectKind().GroupVersionKind().Kind)
	}
}

// toStruct converts a rendered object into the Struct the response carries, without the
// empty status and null creationTimestamp that typed objects serialize.
func toStruct(o runtime.Object) (*structpb.Struct, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return structpb.NewStruct(m)
}

// held returns the desired form of an observed object that must stay exactly as it runs:
// its identity, labels and content (spec, data, type), without the status and server-set
// metadata (uid, resourceVersion, managedFields, …) that an apply must not carry.
func held(o *structpb.Struct) *structpb.Struct {
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(o.GetFields()))}
	for k, v := range o.GetFields() {
		if k != "status" && k != "metadata" {
			out.Fields[k] = v
		}
	}
	md := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for _, k := range []string{"name", "namespace", "labels"} {
		if v := get(o, "metadata", k); v != nil {
			md.Fields[k] = v
		}
	}
	out.Fields["metadata"] = structpb.NewStructValue(md)
	return out
}
