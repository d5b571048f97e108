// Package ownedfields reads what one field manager owns of an object: the part of it that the
// manager's server-side applies set and still own, as its metadata.managedFields record it.
// The function holds exactly that of what Crossplane applied (an invalid spec changes nothing
// that runs), and the provider judges drift on exactly that of what it applied (what others
// set is no drift): one reader keeps the two agreeing with each other, and with the API
// server, on what a field set means.
//
// It reads with the API server's own library, structured-merge-diff: field sets as fieldpath
// sets, objects by client-go's schemas of the built-in kinds, a field a schema lacks (one
// newer than this client-go) deduced from its content. An object of another kind (a CRD: a
// ServiceMonitor, an Instance) has its metadata read by ObjectMeta's schema and the rest
// deduced, lists atomic, as the API server reads a CRD's lists without a list type.
//
// It takes and returns unstructured content: map[string]any as JSON decodes it (protobuf's
// Struct.AsMap) or runtime.DefaultUnstructuredConverter makes it, apiVersion and kind
// included.
package ownedfields

import (
	"bytes"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Owned is the part of obj that manager's applies own (Applied, Extract), and whether
// manager applied obj at all: without an Apply entry of its, nothing says what it set.
func Owned(obj map[string]any, manager string) (map[string]any, bool, error) {
	fields, err := Applied(obj, manager)
	if err != nil || fields == nil {
		return nil, false, err
	}
	out, err := Extract(obj, fields)
	return out, err == nil, err
}

// Applied is the set of fields manager's applies own in obj, each owning its whole value: the
// union of its Apply entries of the object itself (a subresource's are not its to apply), one
// per API version it applied in. It is nil when there is none, and empty when manager applied
// obj but others took every field it set over.
func Applied(obj map[string]any, manager string) (*fieldpath.Set, error) {
	md, _ := obj["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	var set *fieldpath.Set
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if str(m, "manager") != manager || str(m, "operation") != "Apply" || str(m, "subresource") != "" ||
			str(m, "fieldsType") != "FieldsV1" || m["fieldsV1"] == nil {
			continue
		}
		b, err := json.Marshal(m["fieldsV1"])
		if err != nil {
			return nil, errors.Wrapf(err, "cannot encode the fields %s applied in %s", manager, str(m, "apiVersion"))
		}
		fs := &fieldpath.Set{}
		if err := fs.FromJSON(bytes.NewReader(b)); err != nil {
			return nil, errors.Wrapf(err, "cannot parse the fields %s applied in %s", manager, str(m, "apiVersion"))
		}
		if set == nil {
			set = fieldpath.NewSet()
		}
		// The leaves: a field a set names with "." and fields of its own is not owned whole.
		set = set.Union(fs.Leaves())
	}
	return set, nil
}

// Extract is the part of obj that fields name. A field owns its whole value (an atomic object
// or list, or one that one entry set whole and another by its fields); an item of a list
// keeps its key, which names it. A field the set names that obj lacks is not made up, and a
// set that does not fit obj's shape (fields of an object on a scalar) keeps what obj has there,
// which is what runs.
func Extract(obj map[string]any, fields *fieldpath.Set) (map[string]any, error) {
	tv, err := typedObject(obj)
	if err != nil {
		return nil, err
	}
	all, err := tv.ToFieldSet()
	if err != nil {
		return nil, errors.Wrap(err, "cannot list the fields of the object")
	}
	// A leaf's value whole, its fields and items too: ExtractItems reads a leaf that obj has
	// fields or items under by the set as a whole, not as all of the value. And every item's
	// key, which names it (typed.WithAppendKeyFields adds it only for a field obj has).
	items := fieldpath.NewSet()
	for p := range fields.All() {
		items.Insert(p)
		under := all
		for i, pe := range p {
			under = under.WithPrefix(pe)
			if pe.Key != nil {
				for _, k := range *pe.Key {
					items.Insert(append(p[:i+1:i+1], fieldpath.PathElement{FieldName: &k.Name}))
				}
			}
		}
		for q := range under.All() {
			items.Insert(append(p.Copy(), q...))
		}
	}
	out, _ := tv.ExtractItems(items.Leaves()).AsValue().Unstructured().(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

// typedObject is obj with its schema: client-go's for a built-in kind, otherwise
// objectType's. An object of neither shape (a scalar where an object belongs) is deduced.
func typedObject(obj map[string]any) (*typed.TypedValue, error) {
	s, err := schemas()
	if err != nil {
		return nil, err
	}
	v := value.NewValueInterface(obj)
	name := objectType
	if n, err := scheme.Scheme.ToOpenAPIDefinitionName((&unstructured.Unstructured{Object: obj}).GroupVersionKind()); err == nil {
		if _, ok := s.FindNamedType(n); ok {
			name = n
		}
	}
	for _, n := range []string{name, objectType} {
		if tv, err := typed.AsTyped(v, s, schema.TypeRef{NamedType: &n}, typed.AllowDuplicates); err == nil {
			return tv, nil
		}
	}
	tv, err := typed.DeducedParseableType.FromUnstructured(obj, typed.AllowDuplicates)
	return tv, errors.Wrap(err, "cannot read the object")
}

// objectType names the type of an object of a kind client-go does not know: ObjectMeta for its
// metadata (ownerReferences by uid, finalizers as a set), the rest deduced.
const objectType = "__ownedfields_object_"

// schemas are client-go's schemas of the built-in kinds, read as the API server reads a CRD
// that preserves unknown fields: a field a schema lacks (one newer than this client-go, which
// the API server defaults) is deduced from its content rather than failing the whole object,
// which would lose what the schema says of the rest. Plus objectType. Parsing client-go's
// schemas takes a while: once, on first use.
var schemas = sync.OnceValues(func() (*schema.Schema, error) {
	// client-go hands its schemas out with what it types, a ConfigMap's say, only.
	cm, err := applyconfigurations.NewTypeConverter(scheme.Scheme).ObjectToTyped(
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}})
	if err != nil {
		return nil, errors.Wrap(err, "cannot read client-go's schemas")
	}
	// The type structured-merge-diff deduces from content, by its own name, and its definition
	// where client-go's schemas lack it.
	deduced, metadata := *typed.DeducedParseableType.TypeRef.NamedType, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	if _, ok := cm.Schema().FindNamedType(metadata); !ok {
		return nil, errors.Errorf("client-go's schemas lack %s", metadata)
	}
	types := make([]schema.TypeDef, 0, len(cm.Schema().Types)+len(typed.DeducedParseableType.Schema.Types)+1)
	if _, ok := cm.Schema().FindNamedType(deduced); !ok {
		types = append(types, typed.DeducedParseableType.Schema.Types...)
	}
	for _, t := range cm.Schema().Types {
		if t.Map != nil && len(t.Map.Fields) > 0 && t.Map.ElementType == (schema.TypeRef{}) {
			m := &schema.Map{}
			t.Map.CopyInto(m)
			m.ElementType = schema.TypeRef{NamedType: &deduced}
			t.Map = m
		}
		types = append(types, t)
	}
	types = append(types, schema.TypeDef{Name: objectType, Atom: schema.Atom{Map: &schema.Map{
		Fields:              []schema.StructField{{Name: "metadata", Type: schema.TypeRef{NamedType: &metadata}}},
		ElementType:         schema.TypeRef{NamedType: &deduced},
		ElementRelationship: schema.Separable,
	}}})
	return &schema.Schema{Types: types}, nil
})

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}
