package ownedfields

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// TestOwned reads managedFields as the API server writes them: lists' items by key
// (containers by name), by value (a set, like finalizers) and by index, leaves that own
// their whole value, and entries of other managers, operations and subresources, which are
// not the manager's applies.
func TestOwned(t *testing.T) {
	type args struct {
		object  string
		manager string
	}
	type want struct {
		owned string
		ok    bool
		err   error
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"Leaf": {
			reason: "A leaf owns the whole value, an atomic object included.",
			args: args{manager: "m", object: `
apiVersion: apps/v1
kind: Deployment
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:selector": {}}}}
spec:
  selector: {matchLabels: {a: b}}
  replicas: 3`},
			want: want{ok: true, owned: `spec: {selector: {matchLabels: {a: b}}}`},
		},
		"LeafOfAnObjectByFields": {
			reason: "A leaf owns the whole value even where the schema reads the value field by field (as the API server never writes, but one entry may and another not).",
			args: args{manager: "m", object: `
apiVersion: v1
kind: Pod
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:containers": {}}}}
spec:
  containers: [{name: memcached, image: "m:1", resources: {limits: {cpu: "1"}}}]`},
			want: want{ok: true, owned: `spec: {containers: [{name: memcached, image: "m:1", resources: {limits: {cpu: "1"}}}]}`},
		},
		"ByKey": {
			reason: "Items of a list with merge keys are named by their keys: an item keeps its key, though its entry does not name it, and not the fields or items another manager set.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: Pod
metadata:
  managedFields:
  - manager: m
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:containers": {"k:{\"name\":\"memcached\"}": {".": {}, "f:image": {}}}}}
spec:
  containers:
  - {name: memcached, image: "m:1", terminationMessagePath: /dev/termination-log}
  - {name: injected, image: "sidecar:1"}`},
			want: want{ok: true, owned: `spec: {containers: [{name: memcached, image: "m:1"}]}`},
		},
		"ByCompositeKey": {
			reason: "A key of several fields names only the item with all of them.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: Pod
metadata:
  managedFields:
  - manager: m
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {"f:ports": {"k:{\"containerPort\":11211,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}}}}}}}
spec:
  containers:
  - name: c
    ports: [{containerPort: 11211, protocol: UDP, name: u}, {containerPort: 11211, protocol: TCP, name: t}]`},
			want: want{ok: true, owned: `spec: {containers: [{name: c, ports: [{containerPort: 11211, protocol: TCP, name: t}]}]}`},
		},
		"ItemLeaf": {
			reason: "An item named by key with no fields of its own owns the whole item: Crossplane's ownerReference.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: Secret
metadata:
  ownerReferences:
  - {apiVersion: v1, kind: X, name: ours, uid: u1, controller: true}
  - {apiVersion: v1, kind: X, name: theirs, uid: u2}
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u1\"}": {}}}}}`},
			want: want{ok: true, owned: `metadata: {ownerReferences: [{apiVersion: v1, kind: X, name: ours, uid: u1, controller: true}]}`},
		},
		"ByValue": {
			reason: "Items of a set are named by value.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: ConfigMap
metadata:
  finalizers: [ours, theirs]
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:finalizers": {"v:\"ours\"": {}}}}}`},
			want: want{ok: true, owned: `metadata: {finalizers: [ours]}`},
		},
		"ByIndexOnAnAtomicList": {
			reason: "A list its schema makes atomic is owned whole, whatever items an entry names in it.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: Pod
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {"f:args": {"i:1": {}}}}}}}
spec:
  containers: [{name: c, args: [a, b, c]}]`},
			want: want{ok: true, owned: `spec: {containers: [{name: c, args: [a, b, c]}]}`},
		},
		"TwoAPIVersions": {
			reason: "A manager that applied under two API versions owns what either entry names; a leaf in one owns the value whole, though the other names fields of it.",
			args: args{manager: "m", object: `
apiVersion: example.com/v2
kind: Widget
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: example.com/v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:a": {}, "f:c": {}}}}
  - {manager: m, operation: Apply, apiVersion: example.com/v2, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:b": {}, "f:c": {"f:x": {}}}}}
spec: {a: 1, b: 2, c: {x: 1, y: 2}, d: 4}`},
			want: want{ok: true, owned: `spec: {a: 1, b: 2, c: {x: 1, y: 2}}`},
		},
		"CustomResource": {
			reason: "A kind client-go does not know has its metadata read by ObjectMeta's schema (ownerReferences by uid) and the rest deduced, its lists atomic as the API server treats a CRD's without a list type.",
			args: args{manager: "m", object: `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  ownerReferences: [{apiVersion: v1, kind: X, name: ours, uid: u1}, {apiVersion: v1, kind: X, name: theirs, uid: u2}]
  managedFields:
  - {manager: m, operation: Apply, apiVersion: monitoring.coreos.com/v1, fieldsType: FieldsV1, fieldsV1: {"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u1\"}": {}}}, "f:spec": {"f:endpoints": {}, "f:selector": {"f:matchLabels": {"f:a": {}}}}}}
spec:
  endpoints: [{port: metrics, interval: 30s}]
  selector: {matchLabels: {a: b, c: d}}
  jobLabel: theirs`},
			want: want{ok: true, owned: `
metadata: {ownerReferences: [{apiVersion: v1, kind: X, name: ours, uid: u1}]}
spec: {endpoints: [{port: metrics, interval: 30s}], selector: {matchLabels: {a: b}}}`},
		},
		"UnknownField": {
			reason: "A field client-go's schema lacks (a newer API server's default) does not fail the object: the rest is still read by its schema.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: Pod
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}
spec:
  fieldOfTomorrow: {enabled: true}
  containers: [{name: c, image: "m:1", defaultOfTomorrow: 3, terminationMessagePath: /dev/termination-log}]`},
			want: want{ok: true, owned: `spec: {containers: [{name: c, image: "m:1"}]}`},
		},
		"Missing": {
			reason: "A field the set names that the object no longer has is not made up.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: ConfigMap
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:a": {}, "f:b": {}}}}
data: {a: "1"}`},
			want: want{ok: true, owned: `data: {a: "1"}`},
		},
		"ShapeMismatch": {
			reason: "A set of an object's fields on a scalar keeps the scalar: what runs.",
			args: args{manager: "m", object: `
apiVersion: apps/v1
kind: Deployment
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: apps/v1, fieldsType: FieldsV1, fieldsV1: {"f:spec": {"f:replicas": {}}}}
spec: 3`},
			want: want{ok: true, owned: `spec: 3`},
		},
		"OwnsNothing": {
			reason: "A manager that applied the object but whose every field another took over owns nothing, not the whole object.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: ConfigMap
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {}}
data: {a: "1"}`},
			want: want{ok: true, owned: `{}`},
		},
		"OtherManager": {
			reason: "Another manager's entry says nothing of what this one applied.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: ConfigMap
metadata:
  managedFields:
  - {manager: kubectl, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:a": {}}}}
data: {a: "1"}`},
		},
		"Update": {
			reason: "An Update (a controller's write, a kubectl edit) is not an apply: what it set is not what the manager applies.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: ConfigMap
metadata:
  managedFields:
  - {manager: m, operation: Update, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"f:a": {}}}}
data: {a: "1"}`},
		},
		"Subresource": {
			reason: "An apply to a subresource (status) is not an apply of the object.",
			args: args{manager: "m", object: `
apiVersion: apps/v1
kind: Deployment
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: apps/v1, subresource: status, fieldsType: FieldsV1, fieldsV1: {"f:status": {"f:replicas": {}}}}
status: {replicas: 1}`},
		},
		"Unreadable": {
			reason: "A field set that is no FieldsV1 is an error, not an empty set.",
			args: args{manager: "m", object: `
apiVersion: v1
kind: ConfigMap
metadata:
  managedFields:
  - {manager: m, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {"f:data": {"k:{not JSON}": {}}}}
data: {a: "1"}`},
			want: want{err: cmpopts.AnyError},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var wantOwned map[string]any
			if tc.want.owned != "" {
				wantOwned = object(t, tc.want.owned)
			}
			got, ok, err := Owned(object(t, tc.args.object), tc.args.manager)
			if diff := cmp.Diff(tc.want.err, err, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("%s\nOwned(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if ok != tc.want.ok {
				t.Errorf("%s\nOwned(...): want ok %t, got %t", tc.reason, tc.want.ok, ok)
			}
			if diff := cmp.Diff(wantOwned, got); diff != "" {
				t.Errorf("%s\nOwned(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// object is the unstructured content of y (YAML), numbers as JSON decodes them.
func object(t *testing.T, y string) map[string]any {
	t.Helper()
	var o map[string]any
	if err := yaml.Unmarshal([]byte(y), &o); err != nil {
		t.Fatal(err)
	}
	if o == nil {
		o = map[string]any{}
	}
	return o
}

// TestKindsReadByTheirSchema checks that every kind the function and the provider apply is
// read by client-go's schema of it, not deduced: deduced, a list of containers would be
// atomic, and a Deployment held after an invalid spec would take over the sidecars another
// controller injected. An upgrade of client-go or structured-merge-diff that renames the
// schemas fails here.
func TestKindsReadByTheirSchema(t *testing.T) {
	cases := map[string]struct {
		reason     string
		apiVersion string
		kind       string
		want       string
	}{
		"Deployment":          {reason: "The function's and the provider's workload.", apiVersion: "apps/v1", kind: "Deployment", want: "io.k8s.api.apps.v1.Deployment"},
		"Service":             {reason: "The headless Service.", apiVersion: "v1", kind: "Service", want: "io.k8s.api.core.v1.Service"},
		"PodDisruptionBudget": {reason: "The PodDisruptionBudget.", apiVersion: "policy/v1", kind: "PodDisruptionBudget", want: "io.k8s.api.policy.v1.PodDisruptionBudget"},
		"NetworkPolicy":       {reason: "The NetworkPolicy.", apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", want: "io.k8s.api.networking.v1.NetworkPolicy"},
		"Secret":              {reason: "The auth, TLS and connection Secrets.", apiVersion: "v1", kind: "Secret", want: "io.k8s.api.core.v1.Secret"},
		"CustomResource":      {reason: "A kind client-go does not know: its metadata by ObjectMeta, the rest deduced.", apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor", want: objectType},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tv, err := typedObject(map[string]any{"apiVersion": tc.apiVersion, "kind": tc.kind, "metadata": map[string]any{"name": "sessions"}})
			if err != nil {
				t.Fatalf("%s\ntypedObject(...): %v", tc.reason, err)
			}
			if got := tv.TypeRef().NamedType; got == nil || *got != tc.want {
				t.Errorf("%s\ntypedObject(%s).TypeRef(): got %v, want %s", tc.reason, tc.kind, got, tc.want)
			}
		})
	}
}
