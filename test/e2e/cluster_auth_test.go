//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/images"
	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/suite"
)

// Each way a Memcached asks its clients to prove who they are (spec.auth.mode), proven with the
// client libraries applications use: application pods in the claim's namespace, configured
// from the claim's connection Secret alone (the only thing startApp mounts), on the lane's real
// nodes, under the example Composition:
//
//   - ClientCertificate, the example Input's default, for a claim exactly like
//     example/claim.yaml (what the README's first claim gets): gomemcache
//     (test/e2e/cmd/memcached-app: a tls.Dialer whose tls.Config holds ca.crt, tls.crt, tls.key
//     and host, no protocol line of its own) and pymemcache 3.5.2 (an ssl context of ca.crt with
//     load_cert_chain(tls.crt, tls.key)) set and get a key; the same applications presenting
//     no client certificate are refused by memcached ("certificate required");
//   - SASL: memjs 1.3.2 (npm, on the machine's Node.js) and pylibmc 1.6.3 (Debian's, on
//     libmemcached) with the Secret's username and password set and get a key; with a wrong
//     password memcached refuses them;
//   - Password: gomemcache, sending memcached's text-protocol credentials from its dialer, sets
//     and gets a key (that pymemcache, which cannot send them, is refused is
//     TestClusterAppUsesConnectionSecret's);
//
// and in each mode the exporter of every replica (the lane's build of the pinned exporter,
// served under the example's tag) reports memcached_up 1: presenting its own client
// certificate, or through the auth proxy speaking the text protocol's authentication or SASL.
// The three claims and their applications run side by side.
func TestClusterAuthModes(t *testing.T) {
	requireCluster(t)
	t.Parallel()
	ns := newNamespace(t, "cluster-auth")
	// The README's first claim, as example/claim.yaml has it, in this scenario's namespace.
	first := exampleObject(t, "claim.yaml", ns)
	apply(t, first)
	size, err := strconv.Atoi(fmt.Sprint(first.Object["spec"].(map[string]any)["size"]))
	if err != nil {
		t.Fatalf("example/claim.yaml's spec.size: %v", err)
	}
	secret, _, _ := unstructured.NestedString(first.Object, "spec", "writeConnectionSecretToRef", "name")
	for name, mode := range map[string]string{"sasl": cachev1alpha1.AuthModeSASL, "password": cachev1alpha1.AuthModePassword} {
		c := newClaim(ns, name, 1)
		_ = unstructured.SetNestedField(c.Object, mode, "spec", "auth", "mode")
		_ = unstructured.SetNestedField(c.Object, true, "spec", "metrics", "enabled")
		apply(t, c)
	}
	applied := time.Now()
	exporter, err := images.Version(filepath.Join(env.BinDir, "memcached_exporter"), "--version")
	if err != nil {
		t.Fatal(err)
	}

	ok := func(claim, mode string) string {
		return fmt.Sprintf("ok: set and got app-key on %s.%s.svc.cluster.local:11211 (%s)", claim, ns, mode)
	}
	pymemcache, pylibmc := suite.PythonApp("pymemcache"), suite.PythonApp("pylibmc")
	cases := []struct {
		mode, claim, secret string
		size                int
		// holds checks what the connection Secret holds in this mode.
		holds func(cd map[string]string) error
		apps  []authApp
	}{
		{
			mode: cachev1alpha1.AuthModeClientCertificate, claim: first.GetName(), secret: secret, size: size,
			holds: func(cd map[string]string) error {
				if cd["tls"] != "true" || cd["ca.crt"] == "" || cd["tls.crt"] == "" || cd["tls.key"] == "" || cd["username"] != "" || cd["password"] != "" {
					return errors.Errorf("keys %v: want tls, ca.crt, tls.crt and tls.key, no username or password", keysOf(cd))
				}
				return nil
			},
			apps: []authApp{
				{name: "go", image: env.ClusterImages.App, want: ok(first.GetName(), "tls+client-certificate")},
				{name: "py", image: env.ClusterImages.Python, args: []string{pymemcache}, want: ok(first.GetName(), "tls+client-certificate") + " with pymemcache 3.5.2"},
				{name: "go-no-cert", image: env.ClusterImages.App, args: []string{"--no-client-certificate"}, refused: noCertificate},
				{name: "py-no-cert", image: env.ClusterImages.Python, args: []string{pymemcache, "--no-client-certificate"}, refused: noCertificate},
			},
		},
		{
			mode: cachev1alpha1.AuthModeSASL, claim: "sasl", secret: "sasl-memcached", size: 1,
			holds: func(cd map[string]string) error {
				if cd["username"] != "memcached@memcached" || len(cd["password"]) != 32 || cd["tls"] != "" {
					return errors.Errorf("username %q, a password of %d characters, tls %q: want memcached@memcached (its SASL realm), 32 characters, no TLS", cd["username"], len(cd["password"]), cd["tls"])
				}
				return nil
			},
			apps: []authApp{
				{name: "memjs", image: env.ClusterImages.Memjs, want: ok("sasl", "sasl") + " with memjs 1.3.2 on Node.js "},
				{name: "pylibmc", image: env.ClusterImages.Python, args: []string{pylibmc}, want: ok("sasl", "sasl") + " with pylibmc 1.6.3"},
				{name: "memjs-wrong", image: env.ClusterImages.Memjs, args: []string{"--wrong-password"}, refused: regexp.MustCompile(`^error: Memcached server authentication failed!$`)},
				{name: "pylibmc-wrong", image: env.ClusterImages.Python, args: []string{pylibmc, "--wrong-password"}, refused: regexp.MustCompile(`AUTHENTICATION FAILURE`)},
			},
		},
		{
			mode: cachev1alpha1.AuthModePassword, claim: "password", secret: "password-memcached", size: 1,
			holds: func(cd map[string]string) error {
				if cd["username"] != "memcached" || len(cd["password"]) != 32 || cd["tls.crt"] != "" {
					return errors.Errorf("username %q, a password of %d characters: want memcached and 32 characters, no client certificate", cd["username"], len(cd["password"]))
				}
				return nil
			},
			apps: []authApp{{name: "go", image: env.ClusterImages.App, want: ok("password", "plain+auth")}},
		},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			m := waitAvailable(t, claimGVK, ns, c.claim, c.size)
			available := time.Now()
			// Composed by the example Composition, the XRD's default, which none of the claims
			// names.
			if ref, _, _ := unstructured.NestedString(m.Object.Object, "spec", "compositionRef", "name"); ref != exampleComposition {
				t.Errorf("%s: the claim was composed by %q, want the example Composition %s", c.mode, ref, exampleComposition)
			}
			waitConnection(t, ns, c.secret, c.holds)
			for _, a := range c.apps {
				startApp(t, ns, c.claim+"-"+a.name, c.secret, a.image, a.args...)
			}
			for _, a := range c.apps {
				msg, succeeded := waitApp(t, ns, c.claim+"-"+a.name)
				switch {
				case a.refused == nil && (!succeeded || !strings.HasPrefix(msg, a.want)):
					t.Errorf("%s: the application %s said %q (succeeded %t), want %q", c.mode, a.name, msg, succeeded, a.want)
				case a.refused != nil && (succeeded || !a.refused.MatchString(msg)):
					t.Errorf("%s: the application %s said %q (succeeded %t), want memcached's refusal (%s)", c.mode, a.name, msg, succeeded, a.refused)
				}
				t.Logf("%s: %s: %s", c.mode, a.name, msg)
			}
			wantExportersUp(t, ns, c.claim, c.size, exporter)
			t.Logf("%s: the claim seen Available %.1fs after it was applied; its applications and exporters checked %.1fs later",
				c.mode, available.Sub(applied).Seconds(), time.Since(available).Seconds())
		})
	}
}

// exampleComposition is example/composition.yaml's name, example/definition.yaml's default.
const exampleComposition = "xmemcacheds.cache.example.com"

// An authApp is an application pod of TestClusterAuthModes: its name (after the claim's), image
// and arguments, and what it must say: want, the start of its line when it succeeds, or refused,
// what its line must match when memcached refuses it.
type authApp struct {
	name, image string
	args        []string
	want        string
	refused     *regexp.Regexp
}

// noCertificate is what an application presenting no client certificate meets, on its first
// request after the handshake (under TLS 1.3 the client's side of the handshake is over before
// memcached has checked its certificate): memcached's alert "certificate required" (Go's
// "remote error: tls: certificate required", OpenSSL's TLSV13_ALERT_CERTIFICATE_REQUIRED), or,
// across the nodes' network, the connection memcached closed right after sending it, when its
// reset to the request overtakes the alert (a reset, a broken pipe, an EOF in the TLS record
// layer). The same application with the certificate succeeds beside it.
var noCertificate = regexp.MustCompile(`certificate required|CERTIFICATE_REQUIRED|connection reset by peer|broken pipe|: EOF$|SSLEOFError|ConnectionResetError|BrokenPipeError`)

// keysOf is the sorted keys of a connection Secret, for a failure message that shows no value.
func keysOf(cd map[string]string) []string { return slices.Sorted(maps.Keys(cd)) }

// wantExportersUp waits until each of the Memcached name's size replicas has an exporter that
// reports memcached_up 1 on its metrics port, read at the pod's address (the host routes the
// lane's pod subnets), and that says it is version exporter (memcached_exporter_build_info):
// the lane's build, whatever tag the pod's image has, which the test logs.
func wantExportersUp(t *testing.T, ns, name string, size int, exporter string) {
	t.Helper()
	var seen []string
	err := kube.Wait(context.Background(), defaultTimeout, fmt.Sprintf("the exporters of %s/%s reporting memcached_up 1", ns, name), func(ctx context.Context) error {
		pods, err := livePods(ctx, ns, name)
		if err != nil {
			return err
		}
		if len(pods) != size {
			return errors.Errorf("%d pods, want %d", len(pods), size)
		}
		seen = nil
		for _, p := range pods {
			up, version, err := exporterUp(ctx, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(render.MetricsPort))+"/metrics")
			if err != nil {
				return errors.Wrapf(err, "pod %s", p.Name)
			}
			if up != "1" || version != exporter {
				return errors.Errorf("pod %s: memcached_up %q from exporter version %q; want 1 from %s", p.Name, up, version, exporter)
			}
			seen = append(seen, fmt.Sprintf("%s: memcached_up 1 from exporter %s as %s", p.Name, version, containerImage(&p, render.ExporterContainerName)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exporters of %s: %s", name, strings.Join(seen, "; "))
}

// exporterBuild matches the exporter's build information and captures its version.
var exporterBuild = regexp.MustCompile(`^memcached_exporter_build_info\{.*version="([^"]+)".*\} 1$`)

// exporterUp reads the exporter's /metrics at url: its memcached_up value and its version.
func exporterUp(ctx context.Context, url string) (up, version string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer rsp.Body.Close() //nolint:errcheck // Read-only.
	if rsp.StatusCode != http.StatusOK {
		return "", "", errors.Errorf("GET %s: %s", url, rsp.Status)
	}
	sc := bufio.NewScanner(rsp.Body)
	for sc.Scan() {
		l := sc.Text()
		if v, ok := strings.CutPrefix(l, "memcached_up "); ok {
			up = v
		}
		if m := exporterBuild.FindStringSubmatch(l); m != nil {
			version = m[1]
		}
	}
	return up, version, sc.Err()
}

// containerImage is the image of pod's container name, as the pod names it.
func containerImage(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}
