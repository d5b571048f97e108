package fn

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/example/function-memcached/internal/ownedfields"
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
// The observed object's managedFields say which fields owner owns (ownedfields). Without an
// entry of owner's that can be read (`crossplane render`, an object Crossplane never
// applied), held falls back to the object as it runs without status and server-set
// metadata, keeping of the metadata only the identity, labels and the function's own
// annotations.
func held(o *structpb.Struct, owner string) *structpb.Struct {
	fields, ok, err := ownedfields.Owned(o.AsMap(), owner)
	if err != nil || !ok {
		return heldAsRunning(o)
	}
	out, err := structpb.NewStruct(fields)
	if err != nil {
		return heldAsRunning(o)
	}
	delete(out.Fields, "status")
	// The API server leaves the identity out of managedFields: put it back.
	for _, k := range []string{"apiVersion", "kind"} {
		if v := o.GetFields()[k]; v != nil {
			out.Fields[k] = v
		}
	}
	md := out.Fields["metadata"].GetStructValue()
	if md == nil {
		md = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		out.Fields["metadata"] = structpb.NewStructValue(md)
	}
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
