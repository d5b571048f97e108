package fn

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestBadInputCatalogue feeds a running, available size-3 Memcached one bad input at a time
// and checks the two promises of the function: the claim's owner sees exactly the message
// below (as Available=False/InvalidSpec and as one Warning event), and nothing that runs is
// dropped or changed — every observed composed resource is desired exactly as it runs.
func TestBadInputCatalogue(t *testing.T) {
	const limits = "must be an integer between"
	cases := map[string]struct {
		reason string
		mutate func(xr map[string]any)
		want   string
	}{
		"SizeString":      {reason: "A wrong type", mutate: setSpec("size", "three"), want: `spec.size: Invalid value: "three": ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeBool":        {reason: "A wrong type", mutate: setSpec("size", true), want: `spec.size: Invalid value: true: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeZero":        {reason: "Below the minimum", mutate: setSpec("size", 0.0), want: `spec.size: Invalid value: 0: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeNegative":    {reason: "Negative", mutate: setSpec("size", -3.0), want: `spec.size: Invalid value: -3: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeOverPolicy":  {reason: "Over policy.maxSize", mutate: setSpec("size", 9.0), want: `spec.size: Invalid value: 9: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeHuge":        {reason: "Beyond int32, shown as written, never in e-notation", mutate: setSpec("size", 1e18), want: `spec.size: Invalid value: 1000000000000000000: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeFraction":    {reason: "Not an integer", mutate: setSpec("size", 2.5), want: `spec.size: Invalid value: 2.5: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"MemoryTooSmall":  {reason: "Below memcached's useful minimum", mutate: setSpec("memoryLimitMB", 8.0), want: `spec.memoryLimitMB: Invalid value: 8: ` + limits + ` 16 and 1024 (policy.maxMemoryLimitMB)`},
		"MemoryTooLarge":  {reason: "Over the policy ceiling", mutate: setSpec("memoryLimitMB", 65536.0), want: `spec.memoryLimitMB: Invalid value: 65536: ` + limits + ` 16 and 1024 (policy.maxMemoryLimitMB)`},
		"MemoryWithUnit":  {reason: "A quantity where megabytes are expected", mutate: setSpec("memoryLimitMB", "64Mi"), want: `spec.memoryLimitMB: Invalid value: "64Mi": ` + limits + ` 16 and 1024 (policy.maxMemoryLimitMB)`},
		"NoConnections":   {reason: "Zero connections", mutate: setSpec("maxConnections", 0.0), want: `spec.maxConnections: Invalid value: 0: ` + limits + ` 1 and 65536`},
		"TooManyThreads":  {reason: "Over the thread limit", mutate: setSpec("threads", 1000.0), want: `spec.threads: Invalid value: 1000: ` + limits + ` 1 and 64`},
		"ImageWithSpace":  {reason: "Not a reference", mutate: setSpec("image", "memcached latest"), want: `spec.image: Invalid value: "memcached latest": must be a valid image reference, like memcached:1.6.39-alpine`},
		"ImageUnicode":    {reason: "Not a reference", mutate: setSpec("image", "mémcached:1.6"), want: `spec.image: Invalid value: "mémcached:1.6": must be a valid image reference, like memcached:1.6.39-alpine`},
		"ImageRegistry":   {reason: "A registry the policy does not allow", mutate: setSpec("image", "ghcr.io/evil/memcached:1.6"), want: `spec.image: Invalid value: "ghcr.io/evil/memcached:1.6": registry ghcr.io is not allowed; policy.allowedRegistries allows docker.io`},
		"ImageNumber":     {reason: "A wrong type", mutate: setSpec("image", 42.0), want: `spec.image: Invalid value: 42: must be a string`},
		"CPUNotQuantity":  {reason: "Not a quantity", mutate: setSpec("resources", map[string]any{"requests": map[string]any{"cpu": "lots"}}), want: `spec.resources.requests.cpu: Invalid value: "lots": must be a positive CPU quantity, like "100m" or "1"`},
		"CPULimitTooLow":  {reason: "Limit below request", mutate: setSpec("resources", map[string]any{"limits": map[string]any{"cpu": "10m"}}), want: `spec.resources.limits.cpu: Invalid value: "10m": must be at least resources.requests.cpu (100m)`},
		"ResourcesString": {reason: "A wrong type", mutate: setSpec("resources", "2 cpus"), want: `spec.resources: Invalid value: "2 cpus": must be an object`},
		"HAString":        {reason: "A wrong type", mutate: setSpec("highAvailability", map[string]any{"enabled": "yes"}), want: `spec.highAvailability.enabled: Invalid value: "yes": must be true or false`},
		"MetricsNumber":   {reason: "A wrong type", mutate: setSpec("metrics", map[string]any{"enabled": 1.0}), want: `spec.metrics.enabled: Invalid value: 1: must be true or false`},
		"SpecNotAnObject": {reason: "A spec that is not an object", mutate: func(xr map[string]any) { xr["spec"] = "size=3" }, want: `spec: Invalid value: "size=3": must be an object`},
		"NoClaimLabels":   {reason: "A claim-less cluster XR", mutate: func(xr map[string]any) { delete(xr["metadata"].(map[string]any), "labels") }, want: `metadata.labels[crossplane.io/claim-namespace]: Required value: a cluster-scoped XMemcached has no namespace for its Deployment: create it through a Memcached claim, or use the namespaced API`},
		"MissingMetadata": {reason: "No metadata at all", mutate: func(xr map[string]any) { delete(xr, "metadata") }, want: `metadata.labels[crossplane.io/claim-namespace]: Required value: a cluster-scoped XMemcached has no namespace for its Deployment: create it through a Memcached claim, or use the namespaced API`},
		"SeveralAtOnce": {
			reason: "Every problem is reported at once, in field order",
			mutate: func(xr map[string]any) {
				setSpec("size", 7.0)(xr)
				setSpec("threads", -1.0)(xr)
			},
			want: `spec.size: Invalid value: 7: ` + limits + ` 1 and 3 (policy.maxSize); spec.threads: Invalid value: -1: ` + limits + ` 1 and 64`,
		},
	}
	f := New(logging.NewNopLogger())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := running(t)
			xr := req.GetObserved().GetComposite().GetResource().AsMap()
			tc.mutate(xr)
			req.Observed.Composite.Resource = mustStruct(t, xr)

			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: RunFunction returned a gRPC error: %v", tc.reason, err)
			}
			want := "invalid spec, nothing was changed: " + tc.want
			var conds []string
			for _, c := range rsp.GetConditions() {
				conds = append(conds, c.GetType()+"/"+c.GetStatus().String()+"/"+c.GetReason()+"/"+c.GetTarget().String()+": "+c.GetMessage())
			}
			if diff := cmp.Diff([]string{"Available/STATUS_CONDITION_FALSE/InvalidSpec/TARGET_COMPOSITE_AND_CLAIM: " + want}, conds); diff != "" {
				t.Errorf("%s: condition the claim shows: -want, +got:\n%s", tc.reason, diff)
			}
			var results []string
			for _, r := range rsp.GetResults() {
				results = append(results, r.GetSeverity().String()+"/"+r.GetTarget().String()+": "+r.GetMessage())
			}
			if diff := cmp.Diff([]string{"SEVERITY_WARNING/TARGET_COMPOSITE_AND_CLAIM: " + want}, results); diff != "" {
				t.Errorf("%s: event the claim shows: -want, +got:\n%s", tc.reason, diff)
			}
			assertNothingChanged(t, req, rsp)
		})
	}
}

// TestAwkwardButValidNames shows that names at and beyond Kubernetes' limits still produce
// valid, stable objects rather than errors.
func TestAwkwardButValidNames(t *testing.T) {
	cases := map[string]struct {
		claim string
		want  string
	}{
		"63Characters":  {claim: strings.Repeat("m", 63), want: strings.Repeat("m", 63)},
		"253Characters": {claim: strings.Repeat("a", 120) + "." + strings.Repeat("b", 132), want: strings.Repeat("a", 54) + "-a2a43611"},
		"Unicode":       {claim: "café", want: "caf-850f7dc4"},
	}
	f := New(logging.NewNopLogger())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := running(t)
			xr := req.GetObserved().GetComposite().GetResource().AsMap()
			xr["metadata"].(map[string]any)["labels"].(map[string]any)["crossplane.io/claim-name"] = tc.claim
			req.Observed.Composite.Resource = mustStruct(t, xr)
			req.Observed.Resources = nil
			rsp, _ := f.RunFunction(context.Background(), req)
			for _, k := range []string{string(KeyDeployment), string(KeyService), string(KeyPDB)} {
				got := rsp.GetDesired().GetResources()[k].GetResource().GetFields()["metadata"].GetStructValue().GetFields()["name"].GetStringValue()
				if got != tc.want {
					t.Errorf("%s name for claim %q: want %q, got %q", k, tc.claim, tc.want, got)
				}
			}
		})
	}
}

// running is a request for an available size-3 Memcached whose Deployment, Service and
// PodDisruptionBudget all run.
func running(t *testing.T) *fnv1.RunFunctionRequest {
	t.Helper()
	req := &fnv1.RunFunctionRequest{}
	readProtoYAML(t, filepath.Join("testdata", "steady-state-ready", "request.yaml"), req)
	return req
}

// assertNothingChanged checks that every observed composed resource is desired with the same
// identity and content, and that nothing else of the function's is desired.
func assertNothingChanged(t *testing.T, req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	obs := req.GetObserved().GetResources()
	des := rsp.GetDesired().GetResources()
	if len(des) != len(obs) {
		t.Errorf("desired %d composed resources, observed %d: something would be dropped or created", len(des), len(obs))
	}
	for k, o := range obs {
		d, ok := des[k]
		if !ok {
			t.Errorf("observed %s is not desired: Crossplane would delete it", k)
			continue
		}
		for _, field := range []string{"apiVersion", "kind", "spec", "data"} {
			if diff := cmp.Diff(o.GetResource().GetFields()[field], d.GetResource().GetFields()[field], protocmp.Transform()); diff != "" {
				t.Errorf("%s.%s would change: -observed, +desired:\n%s", k, field, diff)
			}
		}
		for _, md := range []string{"name", "namespace", "labels"} {
			om := o.GetResource().GetFields()["metadata"].GetStructValue().GetFields()[md]
			dm := d.GetResource().GetFields()["metadata"].GetStructValue().GetFields()[md]
			if diff := cmp.Diff(om, dm, protocmp.Transform()); diff != "" {
				t.Errorf("%s.metadata.%s would change: -observed, +desired:\n%s", k, md, diff)
			}
		}
	}
}

func setSpec(key string, v any) func(map[string]any) {
	return func(xr map[string]any) { xr["spec"].(map[string]any)[key] = v }
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
