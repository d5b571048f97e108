// Package example_test proves that the bundled examples do what the README says: the claim
// and the XR that `make render` renders agree, and `crossplane composition render` of them, with this
// function running locally, prints a Memcached that is sized and reported as promised.
package example_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/example/function-memcached/internal/render"
)

// TestClaimMatchesXR keeps xr.yaml, which `make render` renders, equal to what Crossplane
// would make of claim.yaml: the same user-facing spec, and the claim's name and namespace in
// the labels the function reads.
func TestClaimMatchesXR(t *testing.T) {
	claim, xr := readOne(t, "claim.yaml"), readOne(t, "xr.yaml")
	userSpec := func(u *unstructured.Unstructured) map[string]any {
		s := map[string]any{}
		for k, v := range u.Object["spec"].(map[string]any) {
			switch k {
			case "writeConnectionSecretToRef", "claimRef", "compositionRef", "resourceRefs":
			default:
				s[k] = v
			}
		}
		return s
	}
	if diff := cmp.Diff(userSpec(claim), userSpec(xr)); diff != "" {
		t.Errorf("xr.yaml spec differs from claim.yaml spec: -claim, +xr:\n%s", diff)
	}
	wantLabels := map[string]string{
		"crossplane.io/claim-name":      claim.GetName(),
		"crossplane.io/claim-namespace": claim.GetNamespace(),
	}
	if diff := cmp.Diff(wantLabels, xr.GetLabels()); diff != "" {
		t.Errorf("xr.yaml claim labels: -want, +got:\n%s", diff)
	}
}

// TestRender runs `crossplane composition render` against the function, exactly as `make render` does.
func TestRender(t *testing.T) {
	cli := crossplaneCLI(t)
	core := crossplaneCore(t)
	addr := startFunction(t)

	type want struct {
		status     map[string]any
		available  string
		reason     string
		objects    []string
		replicas   int64
		secretData []string
		// keepObserved: the auth Secret keeps observed.yaml's certificates and keys; otherwise
		// it is only checked to hold certificates a client can use.
		keepObserved bool
	}
	cases := map[string]struct {
		reason string
		args   []string
		want   want
	}{
		"ClaimWithObservedReadyDeployment": {
			reason: "The size-3 example claim, with a ready Deployment observed, renders 3 replicas and Available=True.",
			args:   []string{"xr.yaml", "composition.yaml", "functions.yaml", "--xrd=definition.yaml", "--observed-resources=observed.yaml"},
			want: want{
				status:    map[string]any{"replicas": int64(3), "availableReplicas": int64(3), "endpoint": "sessions.team-a.svc.cluster.local:11211"},
				available: "True", reason: "Available",
				objects: []string{"Deployment/team-a/sessions", "NetworkPolicy/team-a/sessions", "PodDisruptionBudget/team-a/sessions",
					"Secret/team-a/sessions-auth", "Secret/team-a/sessions-tls-active", "Service/team-a/sessions"},
				replicas:     3,
				keepObserved: true,
			},
		},
		"ClaimFirstCreate": {
			reason: "Before anything is observed the same claim renders the same objects and reports Creating.",
			args:   []string{"xr.yaml", "composition.yaml", "functions.yaml", "--xrd=definition.yaml"},
			want: want{
				status:    map[string]any{"replicas": int64(0), "availableReplicas": int64(0), "endpoint": "sessions.team-a.svc.cluster.local:11211"},
				available: "False", reason: "Creating",
				objects: []string{"Deployment/team-a/sessions", "NetworkPolicy/team-a/sessions", "PodDisruptionBudget/team-a/sessions",
					"Secret/team-a/sessions-auth", "Secret/team-a/sessions-tls-active", "Service/team-a/sessions"},
				replicas: 3,
			},
		},
		"NamespacedXR": {
			reason: "A v2 namespaced XR gets its objects and a connection Secret in its own namespace.",
			args:   []string{"namespaced/xr.yaml", "namespaced/composition.yaml", "functions.yaml", "--xrd=namespaced/definition.yaml"},
			want: want{
				status:    map[string]any{"replicas": int64(0), "availableReplicas": int64(0), "endpoint": "orders.team-b.svc.cluster.local:11211"},
				available: "False", reason: "Creating",
				objects: []string{"Deployment/team-b/orders", "NetworkPolicy/team-b/orders", "PodDisruptionBudget/team-b/orders",
					"Secret/team-b/orders-connection", "Service/team-b/orders"},
				replicas:   2,
				secretData: []string{"endpoint", "host", "port"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"composition", "render"}, tc.args...)
			args = append(args, "--function-annotations=render.crossplane.io/runtime-development-target="+addr, "--timeout=30s",
				"--crossplane-binary="+core)
			cmd := exec.Command(cli, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("crossplane %v: %v\n%s", args, err, stderr.String())
			}
			docs := splitYAML(t, out)
			xr := docs[0]
			status := map[string]any{}
			for _, k := range []string{"replicas", "availableReplicas", "endpoint"} {
				status[k] = xr.Object["status"].(map[string]any)[k]
			}
			if diff := cmp.Diff(tc.want.status, status); diff != "" {
				t.Errorf("%s\nXR status: -want, +got:\n%s", tc.reason, diff)
			}
			gotStatus, gotReason := condition(xr, "Available")
			if gotStatus != tc.want.available || gotReason != tc.want.reason {
				t.Errorf("%s\nAvailable condition: want %s/%s, got %s/%s", tc.reason, tc.want.available, tc.want.reason, gotStatus, gotReason)
			}
			var objects []string
			for _, d := range docs[1:] {
				if d.GetKind() == "Result" {
					continue
				}
				objects = append(objects, d.GetKind()+"/"+d.GetNamespace()+"/"+d.GetName())
				switch d.GetKind() {
				case "Deployment":
					if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != tc.want.replicas {
						t.Errorf("%s\nDeployment replicas: want %d, got %d", tc.reason, tc.want.replicas, r)
					}
					if stamp := d.GetAnnotations()[render.AnnotationSpec]; slices.Contains(tc.args, "--observed-resources=observed.yaml") && stamp != observedStamp(t) {
						t.Errorf("observed.yaml stamps its Deployment %s=%q, but the function renders %q: the renderer changed, so update observed.yaml",
							render.AnnotationSpec, observedStamp(t), stamp)
					}
				case "Secret":
					data, _, _ := unstructured.NestedMap(d.Object, "data")
					switch d.GetName() {
					case "sessions-auth":
						wantClientCertificates(t, tc.reason, d, tc.want.keepObserved)
						continue
					case "sessions-tls-active": // The server certificate the pods mount.
						continue
					}
					var keys []string
					for _, k := range []string{"endpoint", "host", "port"} {
						if _, ok := data[k]; ok {
							keys = append(keys, k)
						}
					}
					if diff := cmp.Diff(tc.want.secretData, keys); diff != "" {
						t.Errorf("%s\nconnection Secret keys: -want, +got:\n%s", tc.reason, diff)
					}
				}
			}
			sort.Strings(objects)
			if diff := cmp.Diff(tc.want.objects, objects); diff != "" {
				t.Errorf("%s\nrendered objects: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// crossplaneCLI finds the Crossplane CLI that `make` installs into bin/.
func crossplaneCLI(t *testing.T) string {
	t.Helper()
	return pinnedBinary(t, "CROSSPLANE_CLI", "crossplane")
}

// crossplaneCore finds the Crossplane core binary whose composition engine the CLI runs.
func crossplaneCore(t *testing.T) string {
	t.Helper()
	return pinnedBinary(t, "CROSSPLANE_CORE", "crossplane-core")
}

// pinnedBinary is the binary the environment variable env names, or bin/<name>. Missing, it
// skips the test, but fails it under CI, where `make test` must have installed it.
func pinnedBinary(t *testing.T, env, name string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p, _ = filepath.Abs(filepath.Join("..", "bin", name))
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found at %s: run the tests with `make test`, which installs it", name, p)
		}
		t.Skipf("%s not found at %s: run `make test` to install it and run this test", name, p)
	}
	return p
}

// startFunction builds the function and serves it insecurely on a free loopback port for
// the duration of the test.
func startFunction(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "function-memcached")
	if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, "../cmd/function-memcached").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--insecure", "--address="+addr, "--metrics-address=")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("function logs:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("function did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func condition(u *unstructured.Unstructured, typ string) (status, reason string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"])
		}
	}
	return "", ""
}

func readOne(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return unmarshal(t, b)
}

// unmarshal decodes YAML the way the API machinery does, with integers as int64.
func unmarshal(t *testing.T, b []byte) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if string(bytes.TrimSpace(j)) == "null" {
		return u
	}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func splitYAML(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufioReader(b))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		u := unmarshal(t, doc)
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// wantClientCertificates checks the auth Secret the example Composition's Input renders for
// the example claim (auth mode ClientCertificate): a CA, a client certificate it signed for
// client authentication, and a server certificate it signed for the claim's host, each with
// its key, so that an application given ca.crt, tls.crt and tls.key connects; with
// keepObserved, the very certificates and keys observed.yaml holds, so that `make render`
// shows the same Deployment each time.
func wantClientCertificates(t *testing.T, reason string, auth *unstructured.Unstructured, keepObserved bool) {
	t.Helper()
	if mode := auth.GetAnnotations()[render.AnnotationAuthMode]; mode != "ClientCertificate" {
		t.Errorf("%s\nauth Secret: mode %q, want ClientCertificate, the example Input's", reason, mode)
	}
	data := map[string][]byte{}
	raw, _, _ := unstructured.NestedStringMap(auth.Object, "data")
	for k, v := range raw {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatalf("auth Secret key %s: %v", k, err)
		}
		data[k] = b
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data["ca.crt"]) {
		t.Fatalf("%s\nauth Secret: no CA in ca.crt", reason)
	}
	for _, c := range []struct {
		cert, key string
		usage     x509.ExtKeyUsage
		host      string
	}{
		{"tls.crt", "tls.key", x509.ExtKeyUsageClientAuth, ""},
		{render.ServerCertKey, render.ServerKeyKey, x509.ExtKeyUsageServerAuth, "sessions.team-a.svc.cluster.local"},
	} {
		pair, err := tls.X509KeyPair(data[c.cert], data[c.key])
		if err != nil {
			t.Errorf("%s\nauth Secret: %s and %s are not a certificate and its key: %v", reason, c.cert, c.key, err)
			continue
		}
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: c.host, KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
			t.Errorf("%s\nauth Secret: %s does not verify against ca.crt for %v: %v", reason, c.cert, c.usage, err)
		}
	}
	if !keepObserved {
		return
	}
	b, err := os.ReadFile("observed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range splitYAML(t, b) {
		if o.GetKind() != "Secret" || o.GetName() != auth.GetName() {
			continue
		}
		observed, _, _ := unstructured.NestedStringMap(o.Object, "data")
		if diff := cmp.Diff(observed, raw); diff != "" {
			t.Errorf("%s\nauth Secret: want observed.yaml's certificates, keys and salt kept: -observed, +rendered:\n%s", reason, diff)
		}
		return
	}
	t.Errorf("observed.yaml holds no Secret %s", auth.GetName())
}

// observedStamp is the spec stamp observed.yaml gives its Deployment.
func observedStamp(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("observed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range splitYAML(t, b) {
		if o.GetKind() == "Deployment" {
			return o.GetAnnotations()[render.AnnotationSpec]
		}
	}
	return ""
}
