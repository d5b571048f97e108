package fn

import (
	"context"
	"flag"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// update regenerates the golden responses: go test ./fn -update. Review the diff like code.
var update = flag.Bool("update", false, "write the golden response files in testdata/")

// TestRunFunction drives RunFunction with the request fixture of every directory under
// testdata, testdata/<case>/request.yaml, and compares the whole response with
// testdata/<case>/response.yaml. The cases are the directories; the table below only says
// why each one exists: a directory without its reason here, or a reason without its
// directory, fails.
func TestRunFunction(t *testing.T) {
	cases := map[string]struct {
		reason string
	}{
		"create-claim-size-3": {
			reason: "A new size-3 claim gets a 3-replica Deployment, a headless Service and a PodDisruptionBudget in the claim's namespace, none ready yet, Available=False/Creating, the endpoint in status and connection details, and no event.",
		},
		"input-default-memory": {
			reason: "A claim that names no cache size gets the Input's defaults.memoryLimitMB (here 32 MB under a policy maximum of 32), not a schema default.",
		},
		"create-no-input": {
			reason: "Without an Input every default applies: pinned image, 64 MB cache, size 1 without a PodDisruptionBudget.",
		},
		"steady-state-ready": {
			reason: "A running Deployment with every replica updated and available makes every composed resource ready and Available=True, with no event because nothing changed.",
		},
		"watch-circuit-open": {
			reason: "An available Memcached whose XR Crossplane says is not Responsive (its circuit breaker drops the XR's watch events, a spec change's among them) is called again after 15 s, not a minute.",
		},
		"steady-state-realistic": {
			reason: "A steady-state request as a real API server and Crossplane produce it (managed fields, defaulted fields, Crossplane's own spec fields) is read correctly: every resource ready, Available=True, no event.",
		},
		"steady-state-realistic-tls": {
			reason: "The realistic steady state of a Memcached serving TLS (the tenant's Secret required, the observed copy holding its pair, the pods rolled to it) is read correctly: every resource ready, Available=True, no event, the TLS connection details reported.",
		},
		"steady-state-shared": {
			reason: "In an XR another pipeline step composes too, that step's observed and desired resources neither change this function's answer nor are dropped: the realistic steady state's response, with the step's 20 ConfigMaps passed through.",
		},
		"became-available": {
			reason: "The first time every replica is available, Available turns True and one Normal event says so.",
		},
		"still-creating": {
			reason: "A created Deployment whose pods are starting stays Creating with the replica count in the message, and is not ready.",
		},
		"resize-3-to-1": {
			reason: "Resizing an available size-3 Memcached to 1 renders 1 replica, drops the PodDisruptionBudget, reports Resizing and emits one Normal event.",
		},
		"rolling-out": {
			reason: "A Deployment whose new generation is not yet observed is Progressing and not ready.",
		},
		"degraded": {
			reason: "Losing a replica without any change of spec is Degraded, announced once with a Warning event.",
		},
		"resize-echoed-condition": {
			reason: "A resize from 1 to 3 under way (status.availableReason Resizing, the new replica starting) stays Resizing with no event, though the XR's condition " +
				"is the Available \"1/1\" Crossplane wrote back from before the resize (crossplane/crossplane#7062): not Degraded, and no Warning.",
		},
		"available-echoed-condition": {
			reason: "An available Memcached (status.availableReason Available) whose XR's condition is the Creating Crossplane wrote back from before (crossplane/crossplane#7062) " +
				"stays Available with no second Normal event.",
		},
		"degraded-repeated": {
			reason: "A Degraded Memcached that stays degraded emits no further event (no event spam).",
		},
		"invalid-size-keeps-running": {
			reason: "An invalid resize (size 9 over maxSize 3) keeps the running Deployment, Service and PDB exactly as observed, and tells the claim owner the field, value and limit in a Warning and Available=False/InvalidSpec.",
		},
		"scheduling-control-plane-refused": {
			reason: "A claim tolerating every taint and selecting the control plane, without a policy.scheduling allowing it, is InvalidSpec naming both fields and the policy; the running Deployment, Service and PDB are held as observed.",
		},
		"invalid-repeated-no-event": {
			reason: "The same invalid spec on the next reconcile repeats the condition but not the Warning event.",
		},
		"invalid-on-create": {
			reason: "An invalid spec on first create creates nothing and reports every bad field at once.",
		},
		"invalid-image-registry": {
			reason: "An image from a registry the policy does not allow is rejected, naming the allowed registries.",
		},
		"invalid-image-digest-required": {
			reason: "With policy.requireImageDigests, an image named by its tag alone is InvalidSpec naming spec.image, the image and the rule; nothing is composed.",
		},
		"image-digest-required": {
			reason: "With policy.requireImageDigests, an image named by tag and digest from an allowed registry runs as written.",
		},
		"invalid-input": {
			reason: "An Input field of the wrong type is a Fatal result naming the field.",
		},
		"invalid-input-unknown-field": {
			reason: "A misspelt Input field is a Fatal result naming it, rather than a policy silently not applied.",
		},
		"invalid-input-policy": {
			reason: "An Input whose policy is impossible (maxSize 0) is a Fatal result naming the Input field.",
		},
		"namespaced-xr": {
			reason: "A v2 namespaced XR gets its objects in its own namespace and a composed connection Secret instead of connection details.",
		},
		"cluster-xr-without-claim": {
			reason: "A cluster-scoped XR without a claim has no namespace for its objects: InvalidSpec, nothing created.",
		},
		"pass-through-earlier-steps": {
			reason: "Resources desired by earlier pipeline steps pass through untouched beside the function's own.",
		},
		"long-claim-name": {
			reason: "A claim name longer than a DNS label gets a stable, valid, hashed base name.",
		},
		"ha-off-metrics-on": {
			reason: "With highAvailability off, size 3 gets no PodDisruptionBudget and no anti-affinity; metrics on adds the exporter and the Service's metrics port.",
		},
		"remote-create": {
			reason: "A claim naming a ProviderConfig composes one Instance of the Memcached provider instead of local objects, not ready, Creating until the provider reports.",
		},
		"schemas-servicemonitor-missing": {
			reason: "The Input asks for a ServiceMonitor but Crossplane's answer for monitoring.coreos.com/v1 ServiceMonitor is an empty schema (its CRD is not installed): everything else is composed, the PrometheusRule too, and the Available message names the kind, its CRD and the Input's metrics.serviceMonitor, rather than a Synced error from an apply that cannot succeed.",
		},
		"schemas-servicemonitor-missing-settled": {
			reason: "A claim serving all its replicas without its ServiceMonitor (the CRD not installed) is settled: Available, the message naming the CRD, and the settled TTL (ten minutes), so that a platform without the Prometheus Operator does not make every claim reconcile every minute.",
		},
		"schemas-servicemonitor-missing-observed-kept": {
			reason: "An observed ServiceMonitor while Crossplane answers its kind's schema empty (a stale answer: a CRD's deletion deletes its objects): the ServiceMonitor is kept as rendered, never dropped, and the message names nothing missing.",
		},
		"schemas-prometheusrule-missing": {
			reason: "The same for a PrometheusRule whose CRD is not installed: the ServiceMonitor and the rest composed, the message names prometheusrules.monitoring.coreos.com and metrics.prometheusRule.",
		},
		"schemas-instance-not-served": {
			reason: "A claim naming a ProviderConfig while the kind Instance is not served (provider-memcached not installed or not activated): InvalidSpec naming spec.providerConfigRef, the kind and what the platform installs, nothing composed, and called again after a minute (the fix is the platform's, which Crossplane does not watch).",
		},
		"schemas-instance-gone-keeps-running": {
			reason: "A claim running in another cluster whose Instance schema comes back empty while its Instance is observed: the observed Instance proves the kind served (a stale answer), so the claim is composed and reported as before, its Instance kept.",
		},
		"schemas-instance-not-served-keeps-local": {
			reason: "A claim running here moved to another cluster while the kind Instance is not served: InvalidSpec naming spec.providerConfigRef, and its Deployment, Service and PodDisruptionBudget held as they run.",
		},
		"schemas-asked": {
			reason: "Crossplane advertises required schemas but the Composition declared none: the function asks for the Instance schema in its response under instance.asked (Crossplane calls again with it) and composes as it always did meanwhile.",
		},
		"schemas-asked-answered": {
			reason: "The second call, with the asked-for schema empty: InvalidSpec, and the same requirement asked again, so that Crossplane sees the function's requirements settle.",
		},
		"schemas-not-advertised": {
			reason: "A request that does not advertise CAPABILITY_REQUIRED_SCHEMAS (a Crossplane before v2.2): the Instance composed as before, never Fatal, and the Available message naming the capability and the oldest Crossplane that has it; no event (it would be one on every call).",
		},
		"schemas-not-advertised-metrics": {
			reason: "The same for the ServiceMonitor and PrometheusRule: both composed as before, the Available message naming both kinds, the capability and Crossplane v2.2.",
		},
		"remote-ready": {
			reason: "An Instance the provider reports Ready with 3/3 replicas makes the claim Available, with the counts in status, and one Normal event.",
		},
		"remote-platform-default": {
			reason: "The Input's defaults.providerConfigRef places a claim that names none.",
		},
		"remote-pod-reasons": {
			reason: "The reasons the provider found in a remote Memcached's pods reach the claim: its Available message is the Instance's, word for word, announced once as Degraded.",
		},
		"remote-invalid-keeps-instance": {
			reason: "An invalid resize of a remote Memcached keeps its Instance exactly as it runs and reports InvalidSpec.",
		},
		"remote-cannot-connect": {
			reason: "When the provider cannot reach the cluster, the claim's Available message says why.",
		},
		"move-here-to-remote": {
			reason: "Naming a ProviderConfig for a local Memcached composes the Instance and no longer desires the local objects, which Crossplane then deletes.",
		},
		"move-remote-to-remote": {
			reason: "Naming another ClusterProviderConfig composes a new Instance, under a name and key derived from the new placement, and no longer desires the old one, which Crossplane deletes (and with it what ran in the old cluster); the claim is Creating until the new one reports.",
		},
		"move-remote-to-here": {
			reason: "Dropping the providerConfigRef composes the local objects and no longer desires the Instance, which Crossplane deletes.",
		},
		"remote-connection-published": {
			reason: "A remote claim whose Instance has published its connection details (the provider's credentials) gets them as the claim's connection details, and the Instance names its connection Secret sessions.instance-connection.",
		},
		"remote-connection-not-published": {
			reason: "An Instance observed without connection details (its Secret not read yet) blanks out nothing: the claim keeps the username and password it holds.",
		},
		"remote-connection-move": {
			reason: "The first call of a move to another cluster gives the username and password the claim holds, the old Instance's, empty: the old Memcached is being deleted, and the new Instance has published nothing yet.",
		},
		"remote-connection-moved": {
			reason: "Once the new Instance of a move has published, the claim's connection details are its credentials, not the old ones the claim held.",
		},
		"namespaced-xr-remote-connection": {
			reason: "A namespaced XR placed in another cluster gets its Instance's connection details in its composed connection Secret.",
		},
		"namespaced-xr-remote-not-published": {
			reason: "A namespaced XR whose Instance has published nothing keeps the credentials its composed connection Secret holds.",
		},
		"remote-not-allowed": {
			reason: "A ProviderConfig that policy.allowedProviderConfigs does not list is an invalid spec naming what is allowed; nothing is composed.",
		},
		"invalid-move-keeps-local": {
			reason: "An invalid spec that also names a ProviderConfig moves nothing: the local objects stay as they run and status counts their replicas.",
		},
		"fixed-after-invalid": {
			reason: "A claim that was invalid on create and is fixed while its pods start never served: Creating, with no Degraded warning.",
		},
		"change-not-applied": {
			reason: "After memoryLimitMB 64→128, the old Deployment (3/3, its generation observed) is not ready and the claim reads rolling out, never available with the old settings, until the apply reaches it.",
		},
		"stalled": {
			reason: "A rollout past its progress deadline is Available=False/Stalled with the Deployment's own message, announced by one Warning.",
		},
		"stalled-repeated": {
			reason: "A rollout that stays stalled is not announced again.",
		},
		"invalid-input-wrong-kind": {
			reason: "A step pointing at another function's Input kind is a Fatal result naming what it found, rather than every default silently applying.",
		},
		"pods-image-pull": {
			reason: "Pods that cannot pull their image explain, in the claim's message, why no replica is available.",
		},
		"pods-crash-loop": {
			reason: "A crash-looping pod is named with how it last exited and how often it restarted.",
		},
		"pods-sidecar-crash-loop": {
			reason: "A pod whose exporter crash-loops is out of its Service (a container that is not running is not Ready, whatever its probes): the claim names the sidecar, so that no one blames memcached, which runs.",
		},
		"pods-oom-killed": {
			reason: "Containers the kernel killed for memory are named OOMKilled with their restart counts.",
		},
		"pods-unschedulable": {
			reason: "Pods no node fits are Pending with the scheduler's reason.",
		},
		"pods-probe-failing": {
			reason: "Running pods whose readiness probe fails are named; liveness restarts are counted.",
		},
		"pods-diagnostics-off": {
			reason: "A platform that turned pod diagnostics off (Crossplane may not read pods) gets no pod requirement: the message carries the counts only.",
		},
		"corrupted-observed-deployment": {
			reason: "An observed Deployment that cannot be read is a Fatal result, so Crossplane applies nothing and what runs stays.",
		},
		"auth-create": {
			reason: "With the Input's defaults.auth.enabled, a new claim gets generated credentials: an auth Secret (username, password, auth file) mounted read-only into memcached, which runs with --auth-file, fsGroup 11211, a digest of the credentials on the pod template, and username and password in the connection details.",
		},
		"auth-steady": {
			reason: "Once the auth Secret is observed, its credentials are read back, not generated again: the Deployment stays as it runs and everything is ready.",
		},
		"auth-rotated": {
			reason: "An auth Secret deleted (rotation) gets new credentials: the pod template's digest changes, so the replicas roll, and the claim reads rolling out until the apply reaches the Deployment.",
		},
		"auth-rotation": {
			reason: "A new spec.auth.rotation replaces credentials the observed auth Secret holds for no rotation, even though that Secret is still there: new credentials in the auth Secret, which records the rotation, and a new digest on the pod template, so the replicas roll.",
		},
		"auth-rotation-kept": {
			reason: "An auth Secret that records the spec's rotation keeps its credentials: nothing is generated and nothing rolls.",
		},
		"auth-metrics-proxy": {
			reason: "Auth with metrics runs the exporter through the auth proxy the Input names (three containers, the proxy on loopback); the NetworkPolicy admits the metrics port from the monitoring namespace only; the Input's metrics.serviceMonitor composes a ServiceMonitor and metrics.prometheusRule a PrometheusRule with the alerts, labelled with the claim's name and namespace.",
		},
		"auth-metrics-no-proxy": {
			reason: "Auth with metrics on a platform that names no auth proxy image is an invalid spec naming the Input field, and nothing is created.",
		},
		"auth-required-refused": {
			reason: "policy.requireAuth refuses a claim turning auth off, naming both fields, and keeps what runs.",
		},
		"tls-first-call": {
			reason: "The first call for a spec naming a TLS Secret asks Crossplane for the Secret and decides nothing: every running object is held as it is.",
		},
		"tls-auth-create": {
			reason: "With the TLS Secret fetched, memcached serves TLS only (the chain and key mounted read-only, a plaintext listener on loopback only), a digest of the certificate on the pod template, and the connection details say tls and carry ca.crt beside the credentials.",
		},
		"tls-secret-missing": {
			reason: "A TLS Secret that does not exist is reported on the claim naming spec.tls.secretName, and nothing that runs changes.",
		},
		"tls-secret-not-tls": {
			reason: "A Secret of the wrong type is reported the same way.",
		},
		"tls-steady": {
			reason: "A Memcached serving the pair its TLS Secret holds desires the function's copy of that pair (sessions-tls-active, which the pods mount) as it is, and nothing rolls.",
		},
		"tls-renewal-weak-key": {
			reason: "A TLS Secret renewed with an RSA-1024 key (memcached exits \"ee key too small\") is InvalidSpec naming spec.tls.secretName and why; the Deployment and the copy of the last good pair the pods mount are held as they run, so a replica that restarts still loads it, and the connection details keep tls and ca.crt.",
		},
		"tls-renewal-expired": {
			reason: "A TLS Secret holding an expired certificate is InvalidSpec naming when it expired, with what runs held.",
		},
		"tls-renewal-other-host": {
			reason: "A TLS Secret whose certificate does not name the Service's host (sessions.team-a.svc.cluster.local, the connection Secret's) is InvalidSpec naming what it names, with what runs held.",
		},
		"tls-renewal-copy-first": {
			reason: "A valid renewal is copied first: the copy is desired with the new pair, while the pod template keeps the digest the replicas run with, so no replica starts before the copy it mounts holds the new pair.",
		},
		"tls-renewal-rolls": {
			reason: "Once the observed copy holds the renewed pair, the pod template takes its digest and the replicas roll to it.",
		},
		"network-policy-namespaces": {
			reason: "allowedNamespaces naming namespaces by kubernetes.io/metadata.name admits them beside the claim's own, and the monitoring namespace reaches the metrics port.",
		},
		"network-policy-off": {
			reason: "A claim may turn the NetworkPolicy off unless the platform requires it: none is desired.",
		},
		"network-policy-forbidden": {
			reason: "A namespace selector on a label key the policy does not allow is an invalid spec naming the key and the policy field.",
		},
		"extstore-create": {
			reason: "External storage of 1024 MB without a StorageClass is an emptyDir of 1024Mi per replica (sizeLimit, and an ephemeral-storage request of as much), memcached started with extstore on 896 MB of it (90%, whole 64 MB pages) and its settings, the memory request and limit grown by what extstore keeps in memory, the pod still restricted.",
		},
		"extstore-ephemeral-storage-class": {
			reason: "External storage from a StorageClass the platform allows is a generic ephemeral volume (a PersistentVolumeClaim of 4096Mi per pod, labelled like the Memcached), no ephemeral-storage request; with metrics and a PrometheusRule the alerts include MemcachedExtstoreNearlyFull.",
		},
		"extstore-invalid-over-policy": {
			reason: "External storage over policy.maxExternalStorageMB keeps the running Deployment, Service and PDB exactly as observed and says the field, value and limit in a Warning and Available=False/InvalidSpec.",
		},
		"extstore-storage-class-forbidden": {
			reason: "A StorageClass the platform does not list keeps what runs and names the StorageClasses it allows.",
		},
		"scheduling": {
			reason: "Node selector, tolerations and an allowed priority class reach the pod beside the anti-affinity and zone spread; maxItemSizeMB becomes --max-item-size.",
		},
		"namespaced-xr-auth": {
			reason: "A namespaced XR with auth gets the credentials in its composed connection Secret.",
		},
		"remote-auth-default": {
			reason: "A Memcached in another cluster gets the platform's default auth and NetworkPolicy as one here does: the Instance says both are on, and the function generates no credentials (the provider does, there).",
		},
		"remote-auth": {
			reason: "Auth a claim asks for explicitly in another cluster is carried by the Instance; the connection details are endpoint, host and port, since the credentials are the provider's.",
		},
		"fixed-after-invalid-keeps-credentials": {
			reason: "Size 3 again after size 9 was held, with auth and rotation r1 (the last call of TestCredentialsSurviveInvalidSpec, objects as Crossplane applied them, managedFields and all): the held auth Secret kept its rotation annotation, so its credentials are read back, nothing is generated and the pods do not roll; a function that never saw the earlier calls answers the same.",
		},
		"auth-legacy-no-roll": {
			reason: "An auth Secret from before salts, whose pods run with the unsalted digest of its credentials, stays as it is (no salt added) and so do the pods: an upgrade rolls nothing and changes no credential.",
		},
		"auth-legacy-password-by-hand": {
			reason: "A password set by hand in an auth Secret from before salts is kept, and since the pods restart for it anyway, the Secret gets a salt and the pod template a digest keyed with it, never the unsalted digest of the new password, which the view role could brute-force offline.",
		},
		"auth-rotation-after-wait": {
			reason: "A rotation that waited (CredentialsRotated False/Waiting on the XR) and no longer has to gets its new credentials, and the condition turns True/Rotated.",
		},
		"remote-credentials-wait": {
			reason: "A remote Memcached whose Instance says its new credentials wait (CredentialsRotated False/Waiting) tells the claim the same, announced once by a Warning.",
		},
		"auth-client-certificate-create": {
			reason: "A claim under a platform whose default mode is ClientCertificate gets a CA, a client certificate and a server certificate the function issues (no TLS Secret named): memcached requires client certificates on every connection, the exporter presents one, no auth proxy runs, and the connection details carry tls.crt, tls.key and ca.crt.",
		},
		"auth-sasl-create": {
			reason: "A claim choosing SASL over the platform's default mode runs memcached with SASL and its password file, the username with its realm, and the exporter through the auth proxy speaking SASL; the connection details carry the username and password.",
		},
		"auth-client-certificate-steady": {
			reason: "Certificates the function issued, observed in the auth Secret and served, are read back as they are: nothing is issued again, nothing rolls, and the response asks to be called again no later than the client certificate's renewal.",
		},
		"auth-client-certificate-renewal": {
			reason: "Certificates issued 61 days ago: the client certificate, past two thirds of its 90 days, is renewed for the same key by the same CA, and the connection details carry it; the server certificate (a year) and the CA stay, so the pod template does not change and nothing rolls.",
		},
		"auth-mode-change": {
			reason: "A running claim changing from the password to client certificates gets new credentials once (certificates instead of the password) and its pods roll once for them; its connection Secret gains tls.crt, tls.key and ca.crt and gives the username and password it no longer has empty, since a claim's Secret only ever gains keys.",
		},
		"invalid-keeps-credentials": {
			reason: "An invalid resize of a Memcached with auth holds the auth Secret as it runs and keeps the credentials in the connection details.",
		},
	}
	f := New(logging.NewNopLogger())
	// Tests generate the same credentials every time (certificates and their keys too, each
	// case from its own fixedRandom),
	f.credentials.Random = func() io.Reader { return strings.NewReader(strings.Repeat("a fixed source of test bytes, ", 8)) }
	// and judge TLS certificates at one time, which the fixtures' certificates are made for.
	f.now = func() time.Time { return fixtureTime }
	dirs, err := os.ReadDir("testdata")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no case directories in testdata (%v)", err)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		name := d.Name()
		if name == "fuzz" && d.IsDir() { // Go's corpus of the fuzz targets' failures, run as their seeds.
			continue
		}
		if name == crowded && d.IsDir() { // TestCredentialsWait's, run in a crowded namespace.
			continue
		}
		if name == filepath.Base(podTemplates) && !d.IsDir() { // TestPodTemplatesUnchanged's golden list.
			continue
		}
		seen[name] = true
		tc, ok := cases[name]
		t.Run(name, func(t *testing.T) {
			fixedRandom(t, name)
			switch {
			case !d.IsDir():
				t.Fatalf("testdata/%s: testdata holds one directory per case and nothing else", name)
			case !ok || tc.reason == "":
				t.Fatalf("testdata/%s is not a case: say why it exists in TestRunFunction's cases", name)
			}
			req := &fnv1.RunFunctionRequest{}
			readProtoYAML(t, filepath.Join("testdata", name, "request.yaml"), req)

			rsp, err := f.RunFunction(context.Background(), req)
			if err != nil {
				t.Fatalf("%s\nRunFunction(...): unexpected gRPC error: %v", tc.reason, err)
			}
			got := rsp

			compareGolden(t, tc.reason, filepath.Join("testdata", name, "response.yaml"), got)
		})
	}
	for name := range cases {
		if !seen[name] {
			t.Errorf("case %q has no directory testdata/%s", name, name)
		}
	}
}

// fixtureTime is when TestRunFunction runs: the fixtures' certificates are valid then (and,
// but for those made to be invalid, until 2126).
var fixtureTime = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// fixedRandom makes crypto/rand, which certificates and their keys come from, repeat the
// same bytes for the case name for the rest of t: each case's certificates are the same
// whatever the other cases generated before it.
func fixedRandom(t *testing.T, name string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	cryptotest.SetGlobalRandom(t, h.Sum64())
}

// fixtures are the request fixtures, testdata/<case>/request.yaml. A test that runs every
// fixture fails rather than passes when there is none.
func fixtures(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*", "request.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no request fixtures in testdata/*/request.yaml (%v)", err)
	}
	return files
}

func readProtoYAML(t testing.TB, path string, m proto.Message) {
	t.Helper()
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := protojson.Unmarshal(j, m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// compareGolden compares rsp, whole, with the golden response at path, which -update
// rewrites.
func compareGolden(t *testing.T, reason, path string, rsp *fnv1.RunFunctionResponse) {
	t.Helper()
	if *update {
		writeProtoYAML(t, path, rsp)
	}
	want := &fnv1.RunFunctionResponse{}
	readProtoYAML(t, path, want)
	if diff := cmp.Diff(want, rsp, protocmp.Transform()); diff != "" {
		t.Errorf("%s\nRunFunction(...): -want (%s), +got:\n%s", reason, path, diff)
	}
}

func writeProtoYAML(t testing.TB, path string, m proto.Message) {
	t.Helper()
	j, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
}
