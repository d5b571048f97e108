package fn

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/render"
)

// cluster plays Crossplane and the API server around RunFunction: it sends the observed state
// as Crossplane does, answers the function's requirements with another call, and applies the
// last response as Crossplane's server-side apply does when it is the only manager of what it
// composes: the object becomes what was applied, plus Crossplane's metadata, the API server's
// metadata and, for a Deployment, the status of a finished rollout. Composed resources no
// longer desired are deleted.
type cluster struct {
	t testing.TB
	// managedFields is false to observe objects without metadata.managedFields, as
	// `crossplane render` and most fixtures present them.
	managedFields bool
	input         *structpb.Struct
	xr            *structpb.Struct
	objects       map[string]*fnv1.Resource
	// tlsSecrets are the Secrets of the claim's namespace a spec's tls.secretName may name.
	tlsSecrets map[string]*structpb.Struct
	// connection is the XR's connection Secret: every connection detail a response published,
	// merged as Crossplane merges them (a key once published stays).
	connection map[string][]byte
	version    int
}

// newCluster is a cluster with a claim's XR of spec (YAML) and no composed resource.
func newCluster(t testing.TB, managedFields bool) *cluster {
	return &cluster{
		t:             t,
		managedFields: managedFields,
		input: yamlStruct(t, `
apiVersion: memcached.fn.example.com/v1beta1
kind: Input
defaults:
  image: memcached:1.6.39-alpine
  memoryLimitMB: 64
policy:
  maxSize: 3
  maxMemoryLimitMB: 1024
  allowedRegistries: [docker.io]
`),
		xr: yamlStruct(t, `
apiVersion: cache.example.com/v1alpha1
kind: XMemcached
metadata:
  name: sessions-x7k2p
  uid: 5c1a0b7e-4d2f-4e8a-9b3c-000000000019
  labels:
    crossplane.io/claim-name: sessions
    crossplane.io/claim-namespace: team-a
`),
		objects:    map[string]*fnv1.Resource{},
		tlsSecrets: map[string]*structpb.Struct{},
	}
}

// reconcile runs one reconcile of the XR with spec (YAML): RunFunction until its requirements
// are answered, then the apply of the last response. It returns the last request and response.
func (c *cluster) reconcile(f *Function, spec string) (*fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse) {
	c.t.Helper()
	c.xr.Fields["spec"] = structpb.NewStructValue(yamlStruct(c.t, spec))
	req := &fnv1.RunFunctionRequest{
		Meta:     &fnv1.RequestMeta{Tag: "sequence"},
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: proto.Clone(c.xr).(*structpb.Struct), ConnectionDetails: maps.Clone(c.connection)}, Resources: map[string]*fnv1.Resource{}},
		Input:    proto.Clone(c.input).(*structpb.Struct),
	}
	for k, r := range c.objects {
		req.Observed.Resources[k] = proto.Clone(r).(*fnv1.Resource)
	}
	var rsp *fnv1.RunFunctionResponse
	for range 3 {
		var err error
		if rsp, err = f.RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest)); err != nil {
			c.t.Fatalf("RunFunction(...): unexpected gRPC error: %v", err)
		}
		asked := rsp.GetRequirements().GetResources()
		if len(asked) == len(req.GetRequiredResources()) {
			break
		}
		req.RequiredResources = map[string]*fnv1.Resources{}
		for name, sel := range asked {
			rs := &fnv1.Resources{}
			if s, ok := c.tlsSecrets[sel.GetMatchName()]; ok {
				rs.Items = []*fnv1.Resource{{Resource: s}}
			}
			req.RequiredResources[name] = rs
		}
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return req, rsp // Crossplane applies nothing.
		}
	}
	c.apply(rsp)
	return req, rsp
}

// apply applies rsp's desired state.
func (c *cluster) apply(rsp *fnv1.RunFunctionResponse) {
	owner := composedFieldOwner(c.xr)
	objects := map[string]*fnv1.Resource{}
	for _, k := range slices.Sorted(maps.Keys(rsp.GetDesired().GetResources())) { // resourceVersions in order
		o := proto.Clone(rsp.GetDesired().GetResources()[k].GetResource()).(*structpb.Struct)
		delete(o.Fields, "status")
		md := o.Fields["metadata"].GetStructValue()
		if md == nil {
			md = &structpb.Struct{Fields: map[string]*structpb.Value{}}
			o.Fields["metadata"] = structpb.NewStructValue(md)
		}
		// Crossplane's RenderComposedResourceMetadata.
		setPath(md, structpb.NewStringValue("sessions-x7k2p"), "labels", "crossplane.io/composite")
		setPath(md, structpb.NewStringValue("sessions"), "labels", "crossplane.io/claim-name")
		setPath(md, structpb.NewStringValue("team-a"), "labels", "crossplane.io/claim-namespace")
		setPath(md, structpb.NewStringValue(k), "annotations", "crossplane.io/composition-resource-name")
		md.Fields["ownerReferences"] = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStructValue(yamlStruct(c.t, `
{apiVersion: cache.example.com/v1alpha1, kind: XMemcached, name: sessions-x7k2p, uid: 5c1a0b7e-4d2f-4e8a-9b3c-000000000019, controller: true, blockOwnerDeletion: true}`))}})
		applied := proto.Clone(o).(*structpb.Struct)
		// The API server's.
		old := c.objects[k].GetResource()
		generation := get(old, "metadata", "generation").GetNumberValue()
		if old == nil || !proto.Equal(get(old, "spec"), get(o, "spec")) {
			generation++
		}
		c.version++
		md.Fields["generation"] = structpb.NewNumberValue(generation)
		md.Fields["resourceVersion"] = structpb.NewStringValue(strconv.Itoa(c.version))
		md.Fields["uid"] = structpb.NewStringValue("uid-of-" + k)
		md.Fields["creationTimestamp"] = structpb.NewStringValue("2026-12-01T00:00:00Z")
		if c.managedFields {
			md.Fields["managedFields"] = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
				"manager":    structpb.NewStringValue(owner),
				"operation":  structpb.NewStringValue("Apply"),
				"apiVersion": applied.Fields["apiVersion"],
				"fieldsType": structpb.NewStringValue("FieldsV1"),
				"time":       structpb.NewStringValue("2026-12-01T00:00:00Z"),
				"fieldsV1":   structpb.NewStructValue(appliedSet(applied)),
			}})}})
		}
		if str(o, "kind") == "Deployment" {
			n := get(o, "spec", "replicas").GetNumberValue()
			o.Fields["status"] = structpb.NewStructValue(yamlStruct(c.t, `
conditions:
- {type: Available, status: "True", reason: MinimumReplicasAvailable}
- {type: Progressing, status: "True", reason: NewReplicaSetAvailable}`))
			st := o.Fields["status"].GetStructValue()
			st.Fields["observedGeneration"] = structpb.NewNumberValue(generation)
			for _, f := range []string{"replicas", "updatedReplicas", "readyReplicas", "availableReplicas"} {
				st.Fields[f] = structpb.NewNumberValue(n)
			}
		}
		objects[k] = &fnv1.Resource{Resource: o}
	}
	c.objects = objects
	if cd := rsp.GetDesired().GetComposite().GetConnectionDetails(); len(cd) > 0 {
		if c.connection == nil {
			c.connection = map[string][]byte{}
		}
		maps.Copy(c.connection, cd)
	}
	// The XR's status as Crossplane writes it back: the function's conditions.
	var conds []*structpb.Value
	for _, cd := range rsp.GetConditions() {
		status := "False"
		if cd.GetStatus() == fnv1.Status_STATUS_CONDITION_TRUE {
			status = "True"
		}
		conds = append(conds, structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"type": structpb.NewStringValue(cd.GetType()), "status": structpb.NewStringValue(status),
			"reason": structpb.NewStringValue(cd.GetReason()), "message": structpb.NewStringValue(cd.GetMessage()),
			"lastTransitionTime": structpb.NewStringValue("2026-12-01T00:00:00Z"),
		}}))
	}
	c.xr.Fields["status"] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		"conditions": structpb.NewListValue(&structpb.ListValue{Values: conds}),
	}})
}

// appliedSet is the FieldsV1 set an apply of o records for its manager: every field of every
// object, lists as atomic leaves (which is how the API server records a list without merge
// keys), without the identity the API server leaves out.
func appliedSet(o *structpb.Struct) *structpb.Struct {
	var set func(v *structpb.Value) *structpb.Struct
	set = func(v *structpb.Value) *structpb.Struct {
		out := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for k, fv := range v.GetStructValue().GetFields() {
			out.Fields["f:"+k] = structpb.NewStructValue(set(fv))
		}
		return out
	}
	s := set(structpb.NewStructValue(o))
	delete(s.Fields, "f:apiVersion")
	delete(s.Fields, "f:kind")
	md := s.Fields["f:metadata"].GetStructValue()
	delete(md.GetFields(), "f:name")
	delete(md.GetFields(), "f:namespace")
	return s
}

// setPath sets v at path under s, creating objects on the way.
func setPath(s *structpb.Struct, v *structpb.Value, path ...string) {
	for _, p := range path[:len(path)-1] {
		next := s.Fields[p].GetStructValue()
		if next == nil {
			next = &structpb.Struct{Fields: map[string]*structpb.Value{}}
			s.Fields[p] = structpb.NewStructValue(next)
		}
		s = next
	}
	s.Fields[path[len(path)-1]] = v
}

func yamlStruct(t testing.TB, y string) *structpb.Struct {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(j, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// loginSet is the username and password of the observed auth Secret, and the digest the
// pods' template carries: what clients log in with, and what rolls the pods.
type loginSet struct {
	Username, Password, PodDigest string
}

func (c *cluster) credentials() loginSet {
	s := c.objects[KeyAuthSecret].GetResource()
	d := secretData(s, render.ConnectionUsername, render.ConnectionPassword)
	return loginSet{
		Username:  string(d[render.ConnectionUsername]),
		Password:  string(d[render.ConnectionPassword]),
		PodDigest: str(c.objects[KeyDeployment].GetResource(), "spec", "template", "metadata", "annotations", render.AnnotationCredentials),
	}
}

// TestCredentialsSurviveInvalidSpec replays, call by call, an invalid spec later fixed: create
// with auth and rotation r1, one steady reconcile, size 9 over policy.maxSize (InvalidSpec:
// what runs is held), size 3 again. Clients must keep logging in with the same password, and
// the pods must not roll. The last call's request and response are the fixture
// testdata/fixed-after-invalid-keeps-credentials (-update writes both), which TestRunFunction
// runs on a function that never saw the earlier calls: a restarted function.
func TestCredentialsSurviveInvalidSpec(t *testing.T) {
	const (
		valid   = "{size: 3, auth: {enabled: true, rotation: r1}}"
		invalid = "{size: 9, auth: {enabled: true, rotation: r1}}"
	)
	cases := map[string]struct {
		reason        string
		managedFields bool
		fixture       string
	}{
		"ManagedFields": {
			reason:        "Objects as the API server returns them, with Crossplane's managedFields: the held auth Secret is what Crossplane applied, rotation annotation included.",
			managedFields: true,
			fixture:       "fixed-after-invalid-keeps-credentials",
		},
		"NoManagedFields": {
			reason: "Objects without managedFields (crossplane render): the held auth Secret keeps the function's annotations.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := sequenceFunctions()()
			c := newCluster(t, tc.managedFields)
			c.reconcile(f, valid)
			created := c.credentials()
			if created.Password == "" || created.PodDigest == "" {
				t.Fatalf("%s\ncreate: no credentials applied: %+v", tc.reason, created)
			}
			c.reconcile(f, valid)
			if _, rsp := c.reconcile(f, invalid); !hasReason(rsp, "InvalidSpec") {
				t.Fatalf("%s\nsize 9: want InvalidSpec, got %v", tc.reason, rsp.GetConditions())
			}
			if got := c.credentials(); got != created {
				t.Errorf("%s\nsize 9 (held): credentials -created, +now:\n%s", tc.reason, cmp.Diff(created, got))
			}
			req, rsp := c.reconcile(f, valid)
			if got := c.credentials(); got != created {
				t.Errorf("%s\nsize 3 again: credentials -created, +now:\n%s", tc.reason, cmp.Diff(created, got))
			}
			if tc.fixture == "" {
				return
			}
			dir := filepath.Join("testdata", tc.fixture)
			if *update {
				writeProtoYAML(t, filepath.Join(dir, "request.yaml"), req)
				writeProtoYAML(t, filepath.Join(dir, "response.yaml"), rsp)
			}
			wantReq, wantRsp := &fnv1.RunFunctionRequest{}, &fnv1.RunFunctionResponse{}
			readProtoYAML(t, filepath.Join(dir, "request.yaml"), wantReq)
			readProtoYAML(t, filepath.Join(dir, "response.yaml"), wantRsp)
			if diff := cmp.Diff(wantReq, req, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nthe last request: -want (%s), +got:\n%s", tc.reason, dir, diff)
			}
			if diff := cmp.Diff(wantRsp, rsp, protocmp.Transform()); diff != "" {
				t.Errorf("%s\nRunFunction(...): -want (%s), +got:\n%s", tc.reason, dir, diff)
			}
		})
	}
}

// sequenceFunctions returns a constructor of Functions whose every new password differs from
// every earlier one, across Functions too (a fixed source would generate the same password
// again, hiding a replacement), the same in every run.
func sequenceFunctions() func() *Function {
	n := 0
	return func() *Function {
		f := New(logging.NewNopLogger())
		f.credentials.Random = func() io.Reader {
			n++
			return strings.NewReader(strings.Repeat("source "+strconv.Itoa(n)+" of test bytes, ", 8))
		}
		return f
	}
}

func hasReason(rsp *fnv1.RunFunctionResponse, reason string) bool {
	for _, c := range rsp.GetConditions() {
		if c.GetReason() == reason {
			return true
		}
	}
	return false
}

// TestHeldIsWhatWasApplied holds the objects of a steady-state request read back from a real
// API server (testdata/steady-state-realistic: server defaults, status, managedFields of
// Crossplane and of the controllers) and compares each with what the function desires for
// them: holding must apply exactly what the function set, which SSA then leaves as it runs,
// and nothing else (no default, no field another manager owns, which holding would take over
// and the next rendering would remove). A `kubectl rollout restart` annotation on the pod
// template, owned by kubectl, stays out: taking it over would roll the pods when the spec is
// fixed.
func TestHeldIsWhatWasApplied(t *testing.T) {
	req := &fnv1.RunFunctionRequest{}
	readProtoYAML(t, filepath.Join("testdata", "steady-state-realistic", "request.yaml"), req)
	d := req.GetObserved().GetResources()[KeyDeployment].GetResource()
	setPath(d, structpb.NewStringValue("2026-12-01T06:00:00Z"), "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt")
	mf := get(d, "metadata", "managedFields").GetListValue()
	mf.Values = append(mf.Values, structpb.NewStructValue(yamlStruct(t, `
manager: kubectl-rollout
operation: Update
apiVersion: apps/v1
fieldsType: FieldsV1
fieldsV1: {"f:spec": {"f:template": {"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/restartedAt": {}}}}}}`)))

	rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), proto.Clone(req).(*fnv1.RunFunctionRequest))
	if err != nil {
		t.Fatal(err)
	}
	owner := composedFieldOwner(req.GetObserved().GetComposite().GetResource())
	for k, o := range req.GetObserved().GetResources() {
		t.Run(k, func(t *testing.T) {
			got := held(o.GetResource(), owner)
			// Crossplane's own metadata, which it sets on every apply anyway.
			md := got.Fields["metadata"].GetStructValue()
			delete(md.Fields, "ownerReferences")
			for _, m := range []string{"labels", "annotations"} {
				s := md.Fields[m].GetStructValue()
				for l := range s.GetFields() {
					if strings.HasPrefix(l, "crossplane.io/") {
						delete(s.Fields, l)
					}
				}
				if s != nil && len(s.Fields) == 0 {
					delete(md.Fields, m)
				}
			}
			want := rsp.GetDesired().GetResources()[k].GetResource()
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("held(observed %s): -desired, +held:\n%s", k, diff)
			}
		})
	}
}

// crowded holds the request fixtures TestCredentialsWait runs in a crowded namespace, each
// testdata/crowded/<case>/request.yaml with its golden response.yaml beside it.
const crowded = "crowded"

// crowd fills namespace up to credentials.MaxPendingPerNamespace with Memcacheds whose new
// credentials are pending in f's store, as many created or rotated at once would, and returns
// their owners.
func crowd(t testing.TB, f *Function, namespace string) []credentials.Owner {
	t.Helper()
	var owners []credentials.Owner
	for i := range credentials.MaxPendingPerNamespace {
		o := credentials.Owner{Namespace: namespace, UID: "crowd-" + strconv.Itoa(i)}
		_, err := f.credentials.Get(o, credentials.Want{Rotation: "r1"}, nil, nil)
		switch {
		case errors.Is(err, credentials.ErrWaiting):
			return owners
		case err != nil:
			t.Fatalf("crowding namespace %s: %v", namespace, err)
		}
		owners = append(owners, o)
	}
	return owners
}

// TestCredentialsWait runs the fixtures of testdata/crowded on a Function whose store holds
// as many pending credentials of namespace team-a as a namespace may have, and compares each
// whole response with its golden one (-update writes them).
func TestCredentialsWait(t *testing.T) {
	cases := map[string]struct {
		reason string
		// same names the top-level fixture whose golden response desires the same composed
		// resources, when there is one.
		same string
	}{
		"auth-rotation-waits": {
			reason: "A new spec.auth.rotation in a crowded namespace waits: the Memcached is composed with the credentials of the observed auth Secret (its rotation kept, nothing rolls: the composed resources are auth-rotation-kept's), CredentialsRotated is False/Waiting on the XR and claim naming the namespace, the count and the limit, announced once by a Warning, and the function is called again after 15 s.",
			same:   "auth-rotation-kept",
		},
		"auth-rotation-still-waits": {
			reason: "The next call while the rotation still waits repeats the condition without a second Warning.",
		},
		"auth-create-waits": {
			reason: "A new Memcached with auth in a crowded namespace has no credentials to run with: nothing is composed (nothing may run without auth), the XR is not ready, Available says Creating and that its credentials wait, and CredentialsRotated says why.",
		},
	}
	dirs, err := os.ReadDir(filepath.Join("testdata", crowded))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no case directories in testdata/%s (%v)", crowded, err)
	}
	for _, d := range dirs {
		name := d.Name()
		tc, ok := cases[name]
		t.Run(name, func(t *testing.T) {
			if !ok || tc.reason == "" {
				t.Fatalf("testdata/%s/%s is not a case: say why it exists in TestCredentialsWait's cases", crowded, name)
			}
			f := New(logging.NewNopLogger())
			f.credentials.Random = func() io.Reader { return strings.NewReader(strings.Repeat("a fixed source of test bytes, ", 8)) }
			f.now = func() time.Time { return fixtureTime }
			crowd(t, f, "team-a")
			dir := filepath.Join("testdata", crowded, name)
			req := &fnv1.RunFunctionRequest{}
			readProtoYAML(t, filepath.Join(dir, "request.yaml"), req)
			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected gRPC error: %v", tc.reason, err)
			}
			compareGolden(t, tc.reason, filepath.Join(dir, "response.yaml"), rsp)
			if tc.same == "" {
				return
			}
			same := &fnv1.RunFunctionResponse{}
			readProtoYAML(t, filepath.Join("testdata", tc.same, "response.yaml"), same)
			if diff := cmp.Diff(same.GetDesired().GetResources(), rsp.GetDesired().GetResources(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\ndesired composed resources: -%s's, +got:\n%s", tc.reason, tc.same, diff)
			}
		})
	}
	for name := range cases {
		if _, err := os.Stat(filepath.Join("testdata", crowded, name)); err != nil {
			t.Errorf("case %q has no directory testdata/%s/%s", name, crowded, name)
		}
	}
}

// TestCredentialsWaitInACrowdedNamespace replays a rotation in a namespace whose bound of
// pending credentials is reached, call by call: created with rotation r1, steady, the
// namespace crowded, rotation r2 twice (it waits: clients keep logging in with r1's
// credentials, the pods do not roll, one Warning), the crowd's credentials stored, r2 twice
// again (new credentials, once).
func TestCredentialsWaitInACrowdedNamespace(t *testing.T) {
	const (
		r1 = "{size: 3, auth: {enabled: true, rotation: r1}}"
		r2 = "{size: 3, auth: {enabled: true, rotation: r2}}"
	)
	cases := map[string]struct {
		reason        string
		managedFields bool
	}{
		"ManagedFields":   {reason: "Objects with Crossplane's managedFields.", managedFields: true},
		"NoManagedFields": {reason: "Objects without managedFields (crossplane render)."},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := sequenceFunctions()()
			c := newCluster(t, tc.managedFields)
			c.reconcile(f, r1)
			c.reconcile(f, r1)
			created := c.credentials()
			owners := crowd(t, f, "team-a")
			for i := range 2 {
				_, rsp := c.reconcile(f, r2)
				if got := c.credentials(); got != created {
					t.Errorf("%s\nr2 #%d, waiting: credentials -r1's, +now:\n%s", tc.reason, i+1, cmp.Diff(created, got))
				}
				if got := credentialsCondition(rsp); got != "STATUS_CONDITION_FALSE/Waiting" {
					t.Errorf("%s\nr2 #%d, waiting: condition %s = %s, want STATUS_CONDITION_FALSE/Waiting", tc.reason, i+1, credentials.ConditionRotated, got)
				}
				if got, want := warnings(rsp, credentials.ReasonWaiting), 1-i; got != want {
					t.Errorf("%s\nr2 #%d, waiting: %d Warning results, want %d", tc.reason, i+1, got, want)
				}
				if rsp.GetMeta().GetTtl().AsDuration() != ChangingTTL {
					t.Errorf("%s\nr2 #%d, waiting: TTL %v, want %v", tc.reason, i+1, rsp.GetMeta().GetTtl().AsDuration(), ChangingTTL)
				}
			}
			for _, o := range owners {
				f.credentials.Forget(o.UID)
			}
			_, rsp := c.reconcile(f, r2)
			rotated := c.credentials()
			if rotated.Password == created.Password || rotated.PodDigest == created.PodDigest {
				t.Errorf("%s\nr2 once the crowd is gone: want new credentials and a new digest, got the same", tc.reason)
			}
			if got := credentialsCondition(rsp); got != "STATUS_CONDITION_TRUE/Rotated" {
				t.Errorf("%s\nr2 once the crowd is gone: condition %s = %s, want STATUS_CONDITION_TRUE/Rotated", tc.reason, credentials.ConditionRotated, got)
			}
			c.reconcile(f, r2)
			if got := c.credentials(); got != rotated {
				t.Errorf("%s\nr2 again: credentials -rotated, +now:\n%s", tc.reason, cmp.Diff(rotated, got))
			}
		})
	}
}

// credentialsCondition is the status and reason of rsp's CredentialsRotated condition, "" when
// it has none.
func credentialsCondition(rsp *fnv1.RunFunctionResponse) string {
	for _, c := range rsp.GetConditions() {
		if c.GetType() == credentials.ConditionRotated {
			return c.GetStatus().String() + "/" + c.GetReason()
		}
	}
	return ""
}

// warnings counts rsp's Warning results with reason.
func warnings(rsp *fnv1.RunFunctionResponse, reason string) int {
	n := 0
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING && r.GetReason() == reason {
			n++
		}
	}
	return n
}
