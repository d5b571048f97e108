package fn

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
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
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/remote"
	"github.com/example/function-memcached/internal/render"
)

// maxCachedRenders bounds the render cache. Each entry is a few kilobytes; a control plane
// with more distinct Memcacheds than this re-renders some of them, which is correct, only
// slower.
const maxCachedRenders = 1024

// rendered is what the function desires for one resolved Memcached, converted to the
// protobuf form of the response once. Responses share these Structs read-only: protobuf
// marshals a message concurrently as long as nobody mutates it.
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

// renderKey identifies a rendering: the canonical key of the resolved Memcached
// (render.Key, which holds every field), and what else renderAll renders from: whether the XR
// is namespaced, where the Memcached is placed, and the composed resource name and name of the
// Instance that places it (see instanceFor).
type renderKey string

// appendRenderKey appends the renderKey of a rendering to b.
func appendRenderKey(b []byte, m render.Memcached, namespaced bool, placement *cachev1alpha1.ProviderConfigReference, instanceKey, instanceName string) []byte {
	b = render.AppendKey(b, m)
	b = strconv.AppendBool(append(b, 0), namespaced)
	if placement != nil {
		b = append(append(append(b, 0), placement.Kind...), '/')
		b = append(b, placement.Name...)
	}
	b = append(append(b, 0), instanceKey...)
	return append(append(b, 0), instanceName...)
}

// keyBuffers hold the cache keys being looked up, renderKeys and the Input's (settingsCache): a
// key escapes to the heap (render.AppendKey reflects), and a fresh one on every call would
// cost an allocation per request.
var keyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// renderCache remembers renderings: a Memcached's spec rarely changes, yet the function
// runs on every reconcile of it. Each rendering is also encoded once, for the wire (see
// wire.go).
type renderCache struct {
	mu   sync.RWMutex
	m    map[renderKey]*rendered
	wire *preEncoded
}

func (c *renderCache) get(m render.Memcached, namespaced bool, placement *cachev1alpha1.ProviderConfigReference, instanceKey, instanceName string) (*rendered, error) {
	buf := keyBuffers.Get().(*[]byte)
	defer keyBuffers.Put(buf)
	b := appendRenderKey((*buf)[:0], m, namespaced, placement, instanceKey, instanceName)
	*buf = b
	c.mu.RLock()
	r, ok := c.m[renderKey(b)] // A lookup by a converted []byte copies nothing.
	c.mu.RUnlock()
	if ok {
		return r, nil
	}
	r, err := renderAll(m, namespaced, placement, instanceKey, instanceName)
	if err != nil {
		return nil, err
	}
	if err := c.wire.add(r.objects); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedRenders {
		for old, or := range c.m { // Evict one entry at random.
			delete(c.m, old)
			c.wire.forget(or.objects)
			break
		}
	}
	c.m[renderKey(b)] = r
	c.mu.Unlock()
	return r, nil
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

// composedFieldOwnerPrefix begins the name of the field manager with which Crossplane applies
// composed resources (server-side apply, forcing ownership).
const composedFieldOwnerPrefix = "apiextensions.crossplane.io/composed/"

// ownAnnotationPrefix begins every annotation the function puts on an object's metadata (the
// Deployment's spec stamp, the auth Secret's rotation).
const ownAnnotationPrefix = "cache.example.com/"

// composedFieldOwner is the field manager Crossplane applies xr's composed resources with, as
// Crossplane's ComposedFieldOwnerName derives it: a SHA-256 of the XR's name and GroupKind.
func composedFieldOwner(xr *structpb.Struct) string {
	gk := str(xr, "kind")
	if group, _, ok := strings.Cut(str(xr, "apiVersion"), "/"); ok {
		gk += "." + group
	}
	h := sha256.Sum256([]byte(str(xr, "metadata", "name") + gk))
	return composedFieldOwnerPrefix + hex.EncodeToString(h[:])
}

// held returns the desired form of an observed object that must stay exactly as it runs:
// what Crossplane applied to it last, which is what the function (and Crossplane's own
// metadata) set on it. Crossplane applies a desired object by server-side apply under one
// field manager, owner, and the API server removes every field that manager owned and the
// new apply omits: a held object that lost one of them (the auth Secret's rotation
// annotation, say) would change what runs. A field another manager owns (a `kubectl
// rollout restart` annotation, an autoscaler's replicas) or the API server set (status,
// uid, resourceVersion, managedFields, defaults) is no part of it: applying it would take it
// over, and the next rendering, which omits it, would then remove it.
//
// The observed object's managedFields say which fields owner owns. Without an entry of
// owner's (`crossplane render`, an object Crossplane never applied), held falls back to the
// object as it runs without status and server-set metadata, keeping of the metadata only the
// identity, labels and the function's own annotations.
func held(o *structpb.Struct, owner string) *structpb.Struct {
	fields := appliedFields(o, owner)
	if fields == nil {
		return heldAsRunning(o)
	}
	out := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	if len(fields.GetFields()) > 0 { // An empty set owns nothing, not the whole object.
		out = owned(structpb.NewStructValue(o), fields).GetStructValue()
	}
	delete(out.Fields, "status")
	// The API server leaves the identity out of managedFields: put it back.
	for _, k := range []string{"apiVersion", "kind"} {
		if v := o.GetFields()[k]; v != nil {
			out.Fields[k] = v
		}
	}
	// A copy: a leaf f:metadata would share the observed object's.
	md := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range out.Fields["metadata"].GetStructValue().GetFields() {
		md.Fields[k] = v
	}
	out.Fields["metadata"] = structpb.NewStructValue(md)
	for _, k := range []string{"name", "namespace"} {
		if v := get(o, "metadata", k); v != nil {
			md.Fields[k] = v
		}
	}
	return out
}

// heldAsRunning is held for an object without managedFields of Crossplane's: its content as
// it runs (spec, data, type, …), its identity, labels and the function's annotations, without
// status and server-set metadata.
func heldAsRunning(o *structpb.Struct) *structpb.Struct {
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
	annotations := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for k, v := range get(o, "metadata", "annotations").GetStructValue().GetFields() {
		if strings.HasPrefix(k, ownAnnotationPrefix) {
			annotations.Fields[k] = v
		}
	}
	if len(annotations.Fields) > 0 {
		md.Fields["annotations"] = structpb.NewStructValue(annotations)
	}
	out.Fields["metadata"] = structpb.NewStructValue(md)
	return out
}

// appliedFields is the set of fields (FieldsV1, as a Struct) that owner's applies own in o:
// the union of its Apply entries in metadata.managedFields (one per API version it applied),
// nil when there is none.
func appliedFields(o *structpb.Struct, owner string) *structpb.Struct {
	var set *structpb.Struct
	for _, e := range get(o, "metadata", "managedFields").GetListValue().GetValues() {
		f := e.GetStructValue().GetFields()
		if f["manager"].GetStringValue() != owner || f["operation"].GetStringValue() != "Apply" ||
			f["subresource"].GetStringValue() != "" || f["fieldsType"].GetStringValue() != "FieldsV1" {
			continue
		}
		fs := f["fieldsV1"].GetStructValue()
		if fs == nil {
			continue
		}
		if set == nil {
			set = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		}
		union(set, fs)
	}
	return set
}

// union adds the field set b to a.
func union(a, b *structpb.Struct) {
	for k, bv := range b.GetFields() {
		av, ok := a.Fields[k]
		if !ok || len(av.GetStructValue().GetFields()) == 0 {
			// a leaf of a, which owns the whole value, stays one.
			if !ok {
				a.Fields[k] = structpb.NewStructValue(proto.Clone(bv.GetStructValue()).(*structpb.Struct))
			}
			continue
		}
		if len(bv.GetStructValue().GetFields()) == 0 {
			a.Fields[k] = bv // b owns the whole value.
			continue
		}
		union(av.GetStructValue(), bv.GetStructValue())
	}
}

// owned is the part of v that the field set fs (FieldsV1: "f:<field>" for a field of an
// object, "k:<key fields as JSON>", "v:<value as JSON>" and "i:<index>" for items of a list,
// "." for the node itself) names. A leaf, {}, owns the whole value: a scalar, or an object or
// list its schema makes atomic. A set that does not fit the value's shape (it cannot, for an
// object read back from the API server) keeps the whole value, which is what runs.
func owned(v *structpb.Value, fs *structpb.Struct) *structpb.Value {
	if len(fs.GetFields()) == 0 {
		return v
	}
	switch x := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		out := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for k, sub := range fs.GetFields() {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok {
				continue
			}
			if fv, ok := x.StructValue.GetFields()[name]; ok {
				out.Fields[name] = owned(fv, sub.GetStructValue())
			}
		}
		return structpb.NewStructValue(out)
	case *structpb.Value_ListValue:
		members := listMembers(fs)
		out := &structpb.ListValue{}
		for i, item := range x.ListValue.GetValues() {
			for _, m := range members {
				if m.matches(i, item) {
					out.Values = append(out.Values, m.owned(item))
					break
				}
			}
		}
		return structpb.NewListValue(out)
	}
	return v
}

// listMember is one item of a list a field set names, by key, value or index, and the set of
// its fields.
type listMember struct {
	key    *structpb.Struct
	value  *structpb.Value
	index  int
	fields *structpb.Struct
}

// listMembers parses the items of a list that fs names; those it cannot parse name nothing.
func listMembers(fs *structpb.Struct) []listMember {
	var ms []listMember
	for k, sub := range fs.GetFields() {
		m := listMember{index: -1, fields: sub.GetStructValue()}
		switch {
		case strings.HasPrefix(k, "k:"):
			m.key = &structpb.Struct{}
			if protojson.Unmarshal([]byte(k[2:]), m.key) != nil {
				continue
			}
		case strings.HasPrefix(k, "v:"):
			m.value = &structpb.Value{}
			if protojson.Unmarshal([]byte(k[2:]), m.value) != nil {
				continue
			}
		case strings.HasPrefix(k, "i:"):
			i, err := strconv.Atoi(k[2:])
			if err != nil {
				continue
			}
			m.index = i
		default:
			continue
		}
		ms = append(ms, m)
	}
	return ms
}

// matches reports whether item, at index i of its list, is m.
func (m listMember) matches(i int, item *structpb.Value) bool {
	switch {
	case m.key != nil:
		fields := item.GetStructValue().GetFields()
		for k, want := range m.key.GetFields() {
			if !proto.Equal(fields[k], want) {
				return false
			}
		}
		return len(m.key.GetFields()) > 0
	case m.value != nil:
		return proto.Equal(item, m.value)
	}
	return m.index == i
}

// owned is the part of item that m's fields name; an item named by key keeps its key.
func (m listMember) owned(item *structpb.Value) *structpb.Value {
	out := owned(item, m.fields)
	if m.key != nil && len(m.fields.GetFields()) > 0 {
		if s := out.GetStructValue(); s != nil {
			for k := range m.key.GetFields() {
				s.Fields[k] = item.GetStructValue().GetFields()[k]
			}
		}
	}
	return out
}

// selector is the string form of the selector of m's pods.
func selector(m render.Memcached) string {
	return labels.SelectorFromSet(render.SelectorLabels(m)).String()
}
