package fn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/ownedfields"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// FuzzRunFunction throws arbitrary XRs, observed Deployments and auth Secrets, TLS Secrets
// (as Crossplane fetches them: "" for not fetched yet, "null" for none) and Inputs at
// RunFunction. Its
// seeds are the request fixtures in testdata/, which `go test` runs; `make fuzz` explores
// beyond them. Whatever the input, the function must not panic or return a gRPC error, and
// its response must be a Fatal result or a desired state that is safe to apply:
//   - with an invalid spec, or before the TLS Secret a spec names is fetched, every observed
//     composed resource desired as it runs: what Crossplane applied of it (its field
//     manager's managedFields) or, without those, all of it, the function's annotations
//     included (see held);
//   - otherwise every Deployment sized within 1..policy.maxSize, with a restricted pod
//     security context, and every object named with a valid DNS name;
//   - an observed auth Secret with usable credentials is desired with the same credentials
//     (no call ever rotates a password by itself), or, not desired, its credentials appear
//     nowhere in the response: auth is off for this Memcached (see credentialsKept).
func FuzzRunFunction(f *testing.F) {
	for _, d := range fixtures(f) {
		req := &fnv1.RunFunctionRequest{}
		readProtoYAML(f, d, req)
		tls := ""
		if r, ok := req.GetRequiredResources()[RequirementTLSSecret]; ok {
			tls = "null"
			if items := r.GetItems(); len(items) > 0 {
				tls = jsonOf(items[0].GetResource())
			}
		}
		f.Add(jsonOf(req.GetObserved().GetComposite().GetResource()),
			jsonOf(req.GetObserved().GetResources()[string(KeyDeployment)].GetResource()),
			jsonOf(req.GetObserved().GetResources()[KeyAuthSecret].GetResource()),
			tls, jsonOf(req.GetInput()))
	}
	fn := New(logging.NewNopLogger())
	f.Fuzz(func(t *testing.T, xrJSON, deploymentJSON, authJSON, tlsJSON, inputJSON string) {
		req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: structOf(xrJSON)}}}
		for k, j := range map[string]string{KeyDeployment: deploymentJSON, KeyAuthSecret: authJSON} {
			if d := structOf(j); d != nil {
				if req.Observed.Resources == nil {
					req.Observed.Resources = map[string]*fnv1.Resource{}
				}
				req.Observed.Resources[k] = &fnv1.Resource{Resource: d}
			}
		}
		switch tlsJSON {
		case "":
		case "null":
			req.RequiredResources = map[string]*fnv1.Resources{RequirementTLSSecret: {}}
		default:
			req.RequiredResources = map[string]*fnv1.Resources{RequirementTLSSecret: {Items: []*fnv1.Resource{{Resource: structOf(tlsJSON)}}}}
		}
		req.Input = structOf(inputJSON)
		orig := proto.Clone(req).(*fnv1.RunFunctionRequest)

		rsp, err := fn.RunFunction(context.Background(), req)
		if err != nil {
			t.Fatalf("RunFunction returned a gRPC error: %v", err)
		}
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				return
			}
		}
		in, err := input(orig)
		if err != nil {
			t.Fatalf("no Fatal result, yet the Input is invalid: %v", err)
		}
		s, err := resolve.NewSettings(in)
		if err != nil {
			t.Fatalf("no Fatal result, yet the Input's policy is invalid: %v", err)
		}
		invalid := false
		for _, c := range rsp.GetConditions() {
			invalid = invalid || c.GetReason() == readiness.ReasonInvalidSpec
		}
		// The first call for a spec naming a TLS Secret decides nothing until Crossplane has
		// fetched it: it must hold what runs exactly as an invalid spec does.
		if _, asked := rsp.GetRequirements().GetResources()[RequirementTLSSecret]; asked && len(rsp.GetConditions()) == 0 {
			invalid = true
		}
		for name, r := range rsp.GetDesired().GetResources() {
			if invalid {
				o, ok := orig.GetObserved().GetResources()[name]
				if !ok {
					t.Fatalf("invalid spec, yet %s is desired without being observed: it would be created", name)
				}
				// What Crossplane applied of it, or all of it: applying that changes nothing.
				os, hs := o.GetResource().GetFields()["spec"], r.GetResource().GetFields()["spec"]
				applied, err := ownedfields.Applied(o.GetResource().AsMap(), composedFieldOwner(orig.GetObserved().GetComposite().GetResource()))
				if err != nil {
					applied = nil // Held as it runs, as when nothing says what was applied.
				}
				if applied == nil && !proto.Equal(os, hs) || !within(hs, os) {
					t.Fatalf("invalid spec, yet the running %s would change", name)
				}
				// The function's annotations that Crossplane applied (all of them, when nothing
				// says what it applied) stay as they are: one that another manager set is not
				// the function's to keep.
				for k, v := range get(o.GetResource(), "metadata", "annotations").GetStructValue().GetFields() {
					if !strings.HasPrefix(k, ownAnnotationPrefix) || applied != nil && !applied.Has(fieldpath.MakePathOrDie("metadata", "annotations", k)) {
						continue
					}
					if !proto.Equal(v, get(r.GetResource(), "metadata", "annotations", k)) {
						t.Fatalf("invalid spec, yet the annotation %s of the running %s would be dropped or changed", k, name)
					}
				}
				continue
			}
			checkSafe(t, name, r.GetResource(), s.MaxSize)
		}
		if err := credentialsKept(orig, rsp); err != nil {
			t.Fatal(err)
		}
		if invalid {
			for name := range orig.GetObserved().GetResources() {
				if _, ok := rsp.GetDesired().GetResources()[name]; !ok {
					t.Fatalf("invalid spec, yet the running %s would be deleted", name)
				}
			}
		}
	})
}

// minTracedPassword is the shortest observed password credentialsKept looks for as text:
// a shorter one, which the fuzzer makes up, could occur in any response by chance.
const minTracedPassword = 12

// credentialsKept says how the response breaks the promise about the credentials of an
// observed auth Secret, if it does:
//   - usable credentials, not to be rotated (spec.auth.rotation is the one the Secret
//     records), are desired unchanged when the auth Secret is desired;
//   - an auth Secret not desired means auth is off for this Memcached, or it moves to another
//     cluster, whose Instance has published nothing in these requests: the connection details
//     carry no username or password (but empty ones, dropping those the claim held), and the
//     observed password appears in no desired object;
//   - the observed password appears in no condition or result (no status or event carries a
//     secret).
func credentialsKept(orig *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) error {
	o := orig.GetObserved().GetResources()[KeyAuthSecret]
	if o == nil {
		return nil
	}
	data := func(r *structpb.Struct) map[string][]byte {
		return secretData(r, render.ConnectionUsername, render.ConnectionPassword)
	}
	observed := data(o.GetResource())
	// The secrets a message must never carry: the password, and the private keys of the
	// client certificates' mode, whose PEM bodies are traced by a line of each.
	var secrets []string
	if password := string(observed[render.ConnectionPassword]); len(password) >= minTracedPassword {
		secrets = append(secrets, password, base64.StdEncoding.EncodeToString([]byte(password)))
	}
	for _, v := range secretData(o.GetResource(), render.CAKey, corev1.TLSPrivateKeyKey, render.ServerKeyKey) {
		if lines := strings.Split(string(v), "\n"); len(lines) > 2 && len(lines[1]) >= minTracedPassword {
			secrets = append(secrets, lines[1])
		}
	}
	leaks := func(text string) bool {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	for _, c := range rsp.GetConditions() {
		if leaks(c.GetMessage()) {
			return errors.Errorf("condition %s/%s carries a credential: %q", c.GetType(), c.GetReason(), c.GetMessage())
		}
	}
	for _, r := range rsp.GetResults() {
		if leaks(r.GetMessage()) {
			return errors.Errorf("result %s carries a credential: %q", r.GetSeverity(), r.GetMessage())
		}
	}

	if d, ok := rsp.GetDesired().GetResources()[KeyAuthSecret]; ok {
		// Only a new spec.auth.rotation or mode replaces them: the Secret records those it
		// holds.
		rotation := str(orig.GetObserved().GetComposite().GetResource(), "spec", "auth", "rotation")
		recorded := str(o.GetResource(), "metadata", "annotations", render.AnnotationRotation)
		sameMode := str(o.GetResource(), "metadata", "annotations", render.AnnotationAuthMode) ==
			str(d.GetResource(), "metadata", "annotations", render.AnnotationAuthMode)
		if _, usable := resolve.Credentials(observed); usable && rotation == recorded && sameMode && !cmp.Equal(observed, data(d.GetResource())) {
			return errors.Errorf("the observed credentials would be replaced: %v, want %v", data(d.GetResource()), observed)
		}
		return nil
	}
	cd := rsp.GetDesired().GetComposite().GetConnectionDetails()
	for _, k := range []string{render.ConnectionUsername, render.ConnectionPassword} {
		// Empty is how a legacy claim's connection Secret, which only gains keys, loses one.
		if len(cd[k]) > 0 {
			return errors.Errorf("the auth Secret is not desired, yet the connection details carry %s", k)
		}
	}
	if leaks(jsonOf(rsp.GetDesired().GetComposite().GetResource())) {
		return errors.New("the auth Secret is not desired, yet the composite carries its password")
	}
	for name, r := range rsp.GetDesired().GetResources() {
		if leaks(jsonOf(r.GetResource())) {
			return errors.Errorf("the auth Secret is not desired, yet %s carries its password", name)
		}
	}
	return nil
}

// checkSafe fails unless a rendered object has a valid name and, for a Deployment, a size
// within policy and a restricted pod.
func checkSafe(t *testing.T, name string, s *structpb.Struct, maxSize int64) {
	t.Helper()
	md := s.GetFields()["metadata"].GetStructValue().GetFields()
	objName := md["name"].GetStringValue()
	if errs := validation.IsDNS1123Subdomain(objName); len(errs) > 0 {
		t.Fatalf("%s has an invalid name %q: %v", name, objName, errs)
	}
	for k, v := range md["labels"].GetStructValue().GetFields() {
		if errs := validation.IsValidLabelValue(v.GetStringValue()); len(errs) > 0 {
			t.Fatalf("%s has an invalid value for label %s: %v", name, k, errs)
		}
	}
	switch s.GetFields()["kind"].GetStringValue() {
	case "Service":
		if errs := validation.IsDNS1035Label(objName); len(errs) > 0 {
			t.Fatalf("Service name %q is not a DNS-1035 label: %v", objName, errs)
		}
	case "Deployment":
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(s.AsMap(), d); err != nil {
			t.Fatalf("rendered Deployment does not decode: %v", err)
		}
		if r := ptr.Deref(d.Spec.Replicas, 0); r < 1 || int64(r) > maxSize {
			t.Fatalf("rendered Deployment has %d replicas, outside 1..%d", r, maxSize)
		}
		pod := d.Spec.Template.Spec
		if pod.SecurityContext == nil || !ptr.Deref(pod.SecurityContext.RunAsNonRoot, false) ||
			pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Fatalf("rendered pod security context is not restricted: %+v", pod.SecurityContext)
		}
		for _, c := range pod.Containers {
			sc := c.SecurityContext
			if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Fatalf("container %s security context is not restricted: %+v", c.Name, sc)
			}
		}
	}
}

// within reports whether every value in a is in b at the same place: a field of an object, or
// an item of a list in the same order.
func within(a, b *structpb.Value) bool {
	if a == nil {
		return true
	}
	switch x := a.GetKind().(type) {
	case *structpb.Value_StructValue:
		bs := b.GetStructValue()
		if bs == nil {
			return false
		}
		for k, v := range x.StructValue.GetFields() {
			bv, ok := bs.GetFields()[k]
			if !ok || !within(v, bv) {
				return false
			}
		}
		return true
	case *structpb.Value_ListValue:
		bl := b.GetListValue()
		if bl == nil {
			return false
		}
		j := 0
		for _, v := range x.ListValue.GetValues() {
			for j < len(bl.GetValues()) && !within(v, bl.GetValues()[j]) {
				j++
			}
			if j == len(bl.GetValues()) {
				return false
			}
			j++
		}
		return true
	}
	return proto.Equal(a, b)
}

func jsonOf(s *structpb.Struct) string {
	if s == nil {
		return ""
	}
	b, _ := protojson.Marshal(s)
	return string(b)
}

func structOf(j string) *structpb.Struct {
	if j == "" {
		return nil
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(j), s); err != nil {
		return nil
	}
	return s
}

// TestCredentialsKept shows that the fuzzer's credentials invariant fails when it should: a
// response that replaces, drops yet uses, or shows the observed credentials.
func TestCredentialsKept(t *testing.T) {
	const password = "Zx81HqP2mVn4Rt6Yw0Lc3Bd5Fg7Jk9As"
	authSecret := func(password string) *fnv1.Resource {
		return &fnv1.Resource{Resource: structOf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sessions-auth"},"data":{` +
			`"username":"` + base64.StdEncoding.EncodeToString([]byte("memcached")) + `",` +
			`"password":"` + base64.StdEncoding.EncodeToString([]byte(password)) + `"}}`)}
	}
	req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{
		Composite: &fnv1.Resource{Resource: structOf(`{"spec":{"auth":{"enabled":true}}}`)},
		Resources: map[string]*fnv1.Resource{KeyAuthSecret: authSecret(password)},
	}}
	response := func(desired map[string]*fnv1.Resource, connection map[string][]byte, message string) *fnv1.RunFunctionResponse {
		return &fnv1.RunFunctionResponse{
			Desired:    &fnv1.State{Composite: &fnv1.Resource{ConnectionDetails: connection}, Resources: desired},
			Conditions: []*fnv1.Condition{{Type: "Available", Reason: "Available", Message: &message}},
		}
	}
	deployment := &fnv1.Resource{Resource: structOf(`{"kind":"Deployment","spec":{"template":{"spec":{"containers":[{"args":["--password=` + password + `"]}]}}}}`)}
	cases := map[string]struct {
		reason string
		rsp    *fnv1.RunFunctionResponse
		want   bool // an error
	}{
		"Kept": {
			reason: "The auth Secret desired with the observed credentials keeps the promise.",
			rsp: response(map[string]*fnv1.Resource{KeyAuthSecret: authSecret(password)},
				map[string][]byte{"username": []byte("memcached"), "password": []byte(password)}, "3/3 replicas available"),
		},
		"Replaced": {
			reason: "New credentials without a new rotation break it.",
			rsp:    response(map[string]*fnv1.Resource{KeyAuthSecret: authSecret("AnotherPassword0123456789")}, nil, ""),
			want:   true,
		},
		"AuthOff": {
			reason: "No auth Secret and no credentials anywhere: auth is off.",
			rsp:    response(map[string]*fnv1.Resource{}, map[string][]byte{"endpoint": []byte("sessions:11211")}, ""),
		},
		"DroppedYetInConnectionDetails": {
			reason: "No auth Secret, yet credentials in the connection details, breaks it.",
			rsp:    response(nil, map[string][]byte{"password": []byte("whatever")}, ""),
			want:   true,
		},
		"DroppedEmpty": {
			reason: "No auth Secret, and the credentials a claim held given empty (a legacy claim's Secret only gains keys), keeps it.",
			rsp:    response(nil, map[string][]byte{"username": {}, "password": {}}, ""),
		},
		"DroppedYetInDeployment": {
			reason: "No auth Secret, yet the password in a desired object, breaks it.",
			rsp:    response(map[string]*fnv1.Resource{KeyDeployment: deployment}, nil, ""),
			want:   true,
		},
		"InMessage": {
			reason: "The password in a condition's message breaks it, auth Secret desired or not.",
			rsp:    response(map[string]*fnv1.Resource{KeyAuthSecret: authSecret(password)}, nil, "cannot log in as memcached:"+password),
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := credentialsKept(req, tc.rsp)
			if got := err != nil; got != tc.want {
				t.Errorf("%s\ncredentialsKept(...): got error %v, want an error: %t", tc.reason, err, tc.want)
			}
		})
	}
}

// FuzzCredentialsSequence replays sequences of specs against one Memcached with auth (the
// platform's default), Crossplane applying every response (see cluster): valid resizes,
// invalid specs of every kind (size over policy.maxSize, an image from another registry, a
// TLS Secret that does not exist, a rotation that is no label value), new rotations, moves to
// another cluster and back, function restarts (a new Function: no credential store, the
// credentials only in the observed auth Secret), objects as a release before salts left them
// (an auth Secret without a salt, pods with the unsalted digest), a password set by hand in
// the auth Secret, and the claim's namespace crowded with other Memcacheds' pending credentials
// (new credentials then wait) or no longer. Each byte of ops is one reconcile. It checks that:
//   - the credentials clients log in with change only on a valid spec asking for a rotation
//     other than the one they were generated for, or when the auth Secret was gone (the
//     Memcached ran elsewhere);
//   - the pods roll (their credentials digest changes) only for credentials other than those
//     they run with: never on an upgrade, an invalid spec or a restart;
//   - the function never puts an unsalted digest on the pods: a password set after salts
//     exist cannot be brute-forced from the pod template;
//   - every response keeps credentialsKept's promises: no password in a condition or result,
//     no credentials anywhere once the auth Secret is not desired;
//   - new credentials wait only in a crowded namespace, saying so (CredentialsRotated False).
func FuzzCredentialsSequence(f *testing.F) {
	f.Add([]byte{4, 0, 1, 0}, true) // The reproduction: create with r1, steady, size 9, size 3.
	f.Add([]byte{4, 0, 1, 0}, false)
	f.Add([]byte{0, 4, 1, 6, 0, 2, 0}, true)
	f.Add([]byte{0, 8, 6, 0, 0}, true)
	f.Add([]byte{0, 3, 5, 0, 7, 1, 0, 6, 0}, true)
	f.Add([]byte{0, 6, 3, 6, 1, 6, 0, 4, 6, 0}, false)
	f.Add([]byte{0, 9, 0, 6, 0, 10, 1, 0, 0}, true) // An upgrade, then a password set by hand.
	f.Add([]byte{0, 10, 9, 1, 6, 0, 4, 0}, false)
	f.Add([]byte{0, 0, 11, 4, 4, 0, 12, 0, 0}, true) // A rotation waits, then happens once.
	f.Add([]byte{11, 0, 0, 12, 0, 11, 7, 0, 12, 0}, false)
	f.Add([]byte{0, 11, 10, 0, 12, 0, 11, 9, 4, 12, 0}, true)
	f.Fuzz(func(t *testing.T, ops []byte, managedFields bool) {
		if len(ops) > 32 {
			ops = ops[:32]
		}
		c := newCluster(t, managedFields)
		c.input.Fields["defaults"].GetStructValue().Fields["auth"] = structpb.NewStructValue(yamlStruct(t, "enabled: true"))
		newFunction := sequenceFunctions()
		fn := newFunction()
		var crowds []credentials.Owner // Of fn's store.
		var (
			rotation, generatedFor string
			remote                 bool
			size                   = 3
			rotations, handSet     int
			podsFor                loginSet // The credentials the pods run with.
		)
		login := func(c loginSet) loginSet { return loginSet{Username: c.Username, Password: c.Password} }
		for i, op := range ops {
			rot, image, tls, sz := rotation, "", "", size
			switch op % 13 {
			case 0: // A valid spec, here.
				remote, size = false, 1+int(op/13)%3
				sz = size
			case 1:
				sz = 9
			case 2:
				image = "evil.example.com/memcached:1.6.39"
			case 3:
				tls = "missing"
			case 4: // A new rotation.
				rotations++
				rotation, remote = "r"+strconv.Itoa(rotations), false
				rot = rotation
			case 5:
				rot = "-not-a-label-value-"
			case 6:
				fn, crowds = newFunction(), nil
				continue
			case 7: // Elsewhere, where auth is off.
				remote = true
			case 8: // A new rotation with an invalid size: the rotation stays for later specs.
				rotations++
				rotation, rot, sz = "r"+strconv.Itoa(rotations), "r"+strconv.Itoa(rotations), 9
			case 9: // As a release before salts left them.
				c.beforeSalts()
			case 10: // A password set by hand.
				handSet++
				c.setPassword("hunter" + strconv.Itoa(handSet))
			case 11: // Other Memcacheds of the namespace created or rotated at once.
				if crowds == nil {
					crowds = crowd(t, fn, "team-a")
				}
				continue
			case 12: // Their credentials stored.
				for _, o := range crowds {
					fn.credentials.Forget(o.UID)
				}
				crowds = nil
				continue
			}
			spec := map[string]any{"size": sz}
			if image != "" {
				spec["image"] = image
			}
			if tls != "" {
				spec["tls"] = map[string]any{"secretName": tls}
			}
			if remote {
				spec["providerConfigRef"] = map[string]any{"name": "workload-eu"}
			} else if rot != "" {
				spec["auth"] = map[string]any{"rotation": rot}
			}
			j, _ := json.Marshal(spec)

			before := c.credentials()
			req, rsp := c.reconcile(fn, string(j))
			after := c.credentials()
			where := fmt.Sprintf("call %d (op %d, spec %s)", i, op%13, j)
			if err := credentialsKept(req, rsp); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			if waits := credentialsCondition(rsp) == "STATUS_CONDITION_FALSE/Waiting"; waits && crowds == nil {
				t.Fatalf("%s: new credentials wait in a namespace nobody crowds", where)
			}
			valid := !hasReason(rsp, readiness.ReasonInvalidSpec) && len(rsp.GetConditions()) > 0
			switch {
			case after.Password == "":
			case before.Password == "":
				generatedFor = rot // New credentials: the Secret was not there.
			case login(before) != login(after):
				if !valid || remote || rot == generatedFor {
					t.Fatalf("%s, valid %t: the credentials changed without a new rotation (they were generated for %q):\n%s",
						where, valid, generatedFor, cmp.Diff(before, after))
				}
				generatedFor = rot
			}
			switch {
			case after.PodDigest == "":
			case before.PodDigest == "":
				podsFor = login(after)
			case before.PodDigest != after.PodDigest:
				if login(after) == podsFor {
					t.Fatalf("%s: the pods roll (digest %q → %q) for the credentials they run with", where, before.PodDigest, after.PodDigest)
				}
				if after.PodDigest == render.Digest([]byte(render.AuthFile(render.Auth{Username: after.Username, Password: after.Password}))) {
					t.Fatalf("%s: the pods get the unsalted digest %q of their new credentials: it can be brute-forced offline", where, after.PodDigest)
				}
				podsFor = login(after)
			}
		}
	})
}

// beforeSalts makes the auth Secret and the Deployment what a release before salts left:
// no salt in the Secret, the unsalted digest of its credentials on the pod template.
func (c *cluster) beforeSalts() {
	s, d := c.objects[KeyAuthSecret].GetResource(), c.objects[KeyDeployment].GetResource()
	if s == nil || d == nil {
		return
	}
	delete(get(s, "data").GetStructValue().GetFields(), render.AuthSaltKey)
	cr := c.credentials()
	setPath(d, structpb.NewStringValue(render.Digest([]byte(render.AuthFile(render.Auth{Username: cr.Username, Password: cr.Password})))),
		"spec", "template", "metadata", "annotations", render.AnnotationCredentials)
}

// setPassword sets the password in the auth Secret, as a person would by hand (auth file too).
func (c *cluster) setPassword(pw string) {
	s := c.objects[KeyAuthSecret].GetResource()
	if s == nil {
		return
	}
	data := get(s, "data").GetStructValue()
	u := secretData(s, render.ConnectionUsername)[render.ConnectionUsername]
	data.Fields[render.ConnectionPassword] = structpb.NewStringValue(base64.StdEncoding.EncodeToString([]byte(pw)))
	data.Fields[render.AuthFileKey] = structpb.NewStringValue(base64.StdEncoding.EncodeToString([]byte(string(u) + ":" + pw + "\n")))
}
