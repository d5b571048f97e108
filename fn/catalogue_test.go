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
		"SizeString":       {reason: "A wrong type", mutate: setSpec("size", "three"), want: `spec.size: Invalid value: "three": ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeBool":         {reason: "A wrong type", mutate: setSpec("size", true), want: `spec.size: Invalid value: true: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeZero":         {reason: "Below the minimum", mutate: setSpec("size", 0.0), want: `spec.size: Invalid value: 0: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeNegative":     {reason: "Negative", mutate: setSpec("size", -3.0), want: `spec.size: Invalid value: -3: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeOverPolicy":   {reason: "Over policy.maxSize", mutate: setSpec("size", 9.0), want: `spec.size: Invalid value: 9: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeHuge":         {reason: "Beyond int32, shown as written, never in e-notation", mutate: setSpec("size", 1e18), want: `spec.size: Invalid value: 1000000000000000000: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"SizeFraction":     {reason: "Not an integer", mutate: setSpec("size", 2.5), want: `spec.size: Invalid value: 2.5: ` + limits + ` 1 and 3 (policy.maxSize)`},
		"MemoryTooSmall":   {reason: "Below memcached's useful minimum", mutate: setSpec("memoryLimitMB", 8.0), want: `spec.memoryLimitMB: Invalid value: 8: ` + limits + ` 16 and 1024 (policy.maxMemoryLimitMB)`},
		"MemoryTooLarge":   {reason: "Over the policy ceiling", mutate: setSpec("memoryLimitMB", 65536.0), want: `spec.memoryLimitMB: Invalid value: 65536: ` + limits + ` 16 and 1024 (policy.maxMemoryLimitMB)`},
		"MemoryWithUnit":   {reason: "A quantity where megabytes are expected", mutate: setSpec("memoryLimitMB", "64Mi"), want: `spec.memoryLimitMB: Invalid value: "64Mi": ` + limits + ` 16 and 1024 (policy.maxMemoryLimitMB)`},
		"NoConnections":    {reason: "Zero connections", mutate: setSpec("maxConnections", 0.0), want: `spec.maxConnections: Invalid value: 0: ` + limits + ` 48 and 65536, and at least 6 per thread plus 24`},
		"ConnsForThreads":  {reason: "Fewer connections than memcached takes for its threads", mutate: func(xr map[string]any) { setSpec("threads", 64.0)(xr); setSpec("maxConnections", 300.0)(xr) }, want: `spec.maxConnections: Invalid value: 300: must be at least 408 with 64 threads (spec.threads): memcached takes its open files, 6 per thread, out of this limit, and the pod's own connections need room`},
		"TooManyThreads":   {reason: "Over the thread limit", mutate: setSpec("threads", 1000.0), want: `spec.threads: Invalid value: 1000: ` + limits + ` 1 and 64`},
		"ImageWithSpace":   {reason: "Not a reference", mutate: setSpec("image", "memcached latest"), want: `spec.image: Invalid value: "memcached latest": must be a valid image reference, like memcached:1.6.39-alpine`},
		"ImageUnicode":     {reason: "Not a reference", mutate: setSpec("image", "mémcached:1.6"), want: `spec.image: Invalid value: "mémcached:1.6": must be a valid image reference, like memcached:1.6.39-alpine`},
		"ImageRegistry":    {reason: "A registry the policy does not allow", mutate: setSpec("image", "ghcr.io/evil/memcached:1.6"), want: `spec.image: Invalid value: "ghcr.io/evil/memcached:1.6": registry ghcr.io is not allowed; policy.allowedRegistries allows docker.io`},
		"ImageNumber":      {reason: "A wrong type", mutate: setSpec("image", 42.0), want: `spec.image: Invalid value: 42: must be a string`},
		"CPUNotQuantity":   {reason: "Not a quantity", mutate: setSpec("resources", map[string]any{"requests": map[string]any{"cpu": "lots"}}), want: `spec.resources.requests.cpu: Invalid value: "lots": must be a positive CPU quantity, like "100m" or "1"`},
		"CPULimitTooLow":   {reason: "Limit below request", mutate: setSpec("resources", map[string]any{"limits": map[string]any{"cpu": "10m"}}), want: `spec.resources.limits.cpu: Invalid value: "10m": must be at least resources.requests.cpu (100m)`},
		"ResourcesString":  {reason: "A wrong type", mutate: setSpec("resources", "2 cpus"), want: `spec.resources: Invalid value: "2 cpus": must be an object`},
		"HAString":         {reason: "A wrong type", mutate: setSpec("highAvailability", map[string]any{"enabled": "yes"}), want: `spec.highAvailability.enabled: Invalid value: "yes": must be true or false`},
		"MetricsNumber":    {reason: "A wrong type", mutate: setSpec("metrics", map[string]any{"enabled": 1.0}), want: `spec.metrics.enabled: Invalid value: 1: must be true or false`},
		"SpecNotAnObject":  {reason: "A spec that is not an object", mutate: func(xr map[string]any) { xr["spec"] = "size=3" }, want: `spec: Invalid value: "size=3": must be an object`},
		"NoClaimLabels":    {reason: "A claim-less cluster XR", mutate: func(xr map[string]any) { delete(xr["metadata"].(map[string]any), "labels") }, want: `metadata.labels[crossplane.io/claim-namespace]: Required value: a cluster-scoped XMemcached has no namespace for its Deployment: create it through a Memcached claim, or use the namespaced API`},
		"MissingMetadata":  {reason: "No metadata at all", mutate: func(xr map[string]any) { delete(xr, "metadata") }, want: `metadata.labels[crossplane.io/claim-namespace]: Required value: a cluster-scoped XMemcached has no namespace for its Deployment: create it through a Memcached claim, or use the namespaced API`},
		"ItemSizeOverHalf": {reason: "Over half the cache, which memcached refuses", mutate: setSpec("maxItemSizeMB", 40.0), want: `spec.maxItemSizeMB: Invalid value: 40: ` + limits + ` 1 and 32 (at most 128, and at most half of memoryLimitMB, 64)`},
		"ItemSizeZero":     {reason: "Below the minimum", mutate: setSpec("maxItemSizeMB", 0.0), want: `spec.maxItemSizeMB: Invalid value: 0: ` + limits + ` 1 and 32 (at most 128, and at most half of memoryLimitMB, 64)`},
		"ItemSizeWithUnit": {reason: "A quantity where megabytes are expected", mutate: setSpec("maxItemSizeMB", "2m"), want: `spec.maxItemSizeMB: Invalid value: "2m": ` + limits + ` 1 and 128, and at most half of memoryLimitMB`},
		"AuthString":       {reason: "A wrong type", mutate: setSpec("auth", map[string]any{"enabled": "yes"}), want: `spec.auth.enabled: Invalid value: "yes": must be true or false`},
		"AuthNotObject":    {reason: "A wrong type", mutate: setSpec("auth", true), want: `spec.auth: Invalid value: true: must be an object`},
		"RotationNotLabel": {reason: "A rotation that is not a label value", mutate: setSpec("auth", map[string]any{"enabled": true, "rotation": "next week"}), want: `spec.auth.rotation: Invalid value: "next week": must be at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		"ModeUnknown":      {reason: "A mode the API does not have", mutate: setSpec("auth", map[string]any{"enabled": true, "mode": "Kerberos"}), want: `spec.auth.mode: Unsupported value: "Kerberos": supported values: "Password", "ClientCertificate", "SASL"`},
		"ModeNotString":    {reason: "A wrong type", mutate: setSpec("auth", map[string]any{"enabled": true, "mode": 2.0}), want: `spec.auth.mode: Invalid value: 2: must be a string`},
		"ModeWithoutAuth":  {reason: "A mode with authentication off", mutate: setSpec("auth", map[string]any{"mode": "SASL"}), want: `spec.auth.mode: Invalid value: "SASL": chooses how clients authenticate, and authentication is off (spec.auth.enabled, or the platform's defaults.auth.enabled)`},
		"SASLMetricsNoProxy": {reason: "SASL with metrics where the platform set no auth proxy", mutate: func(xr map[string]any) {
			setSpec("auth", map[string]any{"enabled": true, "mode": "SASL"})(xr)
			setSpec("metrics", map[string]any{"enabled": true})(xr)
		}, want: `spec.metrics.enabled: Invalid value: true: cannot be true with auth mode SASL here: the exporter speaks neither SASL nor the binary protocol, which is all memcached speaks with SASL on and reaches memcached through the auth proxy, whose image the platform has not set (defaults.authProxyImage)`},
		"RotationWithoutAuth":  {reason: "A rotation with authentication off", mutate: setSpec("auth", map[string]any{"rotation": "2026-12-01"}), want: `spec.auth.rotation: Invalid value: "2026-12-01": rotates credentials, and authentication is off (spec.auth.enabled, or the platform's defaults.auth.enabled)`},
		"TLSNumber":            {reason: "A wrong type", mutate: setSpec("tls", map[string]any{"secretName": 5.0}), want: `spec.tls.secretName: Invalid value: 5: must be a string`},
		"TLSNotAName":          {reason: "Not a Secret name", mutate: setSpec("tls", map[string]any{"secretName": "My Cert"}), want: `spec.tls.secretName: Invalid value: "My Cert": must be a Secret name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		"TLSSecretMissing":     {reason: "A Secret that does not exist (Crossplane fetched nothing)", mutate: setSpec("tls", map[string]any{"secretName": "sessions-tls"}), want: `spec.tls.secretName: Invalid value: "sessions-tls": Secret team-a/sessions-tls does not exist`},
		"NetworkPolicyBool":    {reason: "A wrong type", mutate: setSpec("networkPolicy", map[string]any{"enabled": "off"}), want: `spec.networkPolicy.enabled: Invalid value: "off": must be true or false`},
		"AllNamespaces":        {reason: "An empty selector admits every namespace", mutate: setSpec("networkPolicy", map[string]any{"allowedNamespaces": map[string]any{}}), want: `spec.networkPolicy.allowedNamespaces: Invalid value: "{}": must name the namespaces it admits: an empty selector admits every namespace`},
		"NamespacesNotIn":      {reason: "NotIn admits namespaces nobody named", mutate: setSpec("networkPolicy", map[string]any{"allowedNamespaces": map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"kube-system"}}}}}), want: `spec.networkPolicy.allowedNamespaces.matchExpressions[0].operator: Invalid value: "NotIn": must be In: a selector names the namespaces it admits`},
		"NamespacesLabelKey":   {reason: "A label key the policy does not allow", mutate: setSpec("networkPolicy", map[string]any{"allowedNamespaces": map[string]any{"matchLabels": map[string]any{"team": "web"}}}), want: `spec.networkPolicy.allowedNamespaces.matchLabels[team]: Invalid value: "team": this label key is not allowed; policy.networkPolicy.allowedNamespaceLabels allows kubernetes.io/metadata.name`},
		"NodeSelectorKey":      {reason: "Not a label key", mutate: setSpec("scheduling", map[string]any{"nodeSelector": map[string]any{"pool/": "cache"}}), want: `spec.scheduling.nodeSelector[pool/]: Invalid value: "pool/": must be a label key: name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		"TolerationOperator":   {reason: "An operator Kubernetes does not have", mutate: setSpec("scheduling", map[string]any{"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Maybe"}}}), want: `spec.scheduling.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"`},
		"TolerationSeconds":    {reason: "A wrong type inside a list names the element", mutate: setSpec("scheduling", map[string]any{"tolerations": []any{map[string]any{"key": "a", "operator": "Exists"}, map[string]any{"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": "30s"}}}), want: `spec.scheduling.tolerations[1].tolerationSeconds: Invalid value: "30s": must be an integer`},
		"TolerateEverything":   {reason: "A key-less Exists toleration tolerates every taint, the control plane's too", mutate: setSpec("scheduling", map[string]any{"tolerations": []any{map[string]any{"operator": "Exists"}}}), want: `spec.scheduling.tolerations[0].key: Invalid value: "": must be set: a toleration without a key tolerates every taint, the control plane's and dedicated nodes' too (policy.scheduling.allowedTolerationKeys may name the keys claims may tolerate)`},
		"ControlPlaneSelector": {reason: "A node-role key the policy does not hand out", mutate: setSpec("scheduling", map[string]any{"nodeSelector": map[string]any{"node-role.kubernetes.io/control-plane": ""}}), want: `spec.scheduling.nodeSelector[node-role.kubernetes.io/control-plane]: Invalid value: "node-role.kubernetes.io/control-plane": must not be a node-role.kubernetes.io/ key, which marks control-plane and dedicated nodes, unless policy.scheduling.allowedNodeSelectorKeys names it`},
		"TolerationsNotList":   {reason: "A wrong type", mutate: setSpec("scheduling", map[string]any{"tolerations": "all"}), want: `spec.scheduling.tolerations: Invalid value: "all": must be a list`},
		"SystemPriority":       {reason: "A PriorityClass for the cluster's own components", mutate: setSpec("scheduling", map[string]any{"priorityClassName": "system-cluster-critical"}), want: `spec.scheduling.priorityClassName: Invalid value: "system-cluster-critical": must not be a system- PriorityClass, which is for the cluster's own components, unless policy.allowedPriorityClasses names it`},
		"SchedulingString":     {reason: "A wrong type", mutate: setSpec("scheduling", "fast nodes"), want: `spec.scheduling: Invalid value: "fast nodes": must be an object`},
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
			// Crossplane answers the function's request for a TLS Secret: here, none exists.
			req.RequiredResources = map[string]*fnv1.Resources{RequirementTLSSecret: {}}

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
