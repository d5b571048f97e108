package fn

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

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
