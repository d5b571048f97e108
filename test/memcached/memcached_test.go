// Package memcached_test runs the real memcached (Debian's package, which `make test`
// installs) with exactly the arguments the renderer gives the memcached container and the
// Secret files the pod mounts, laid out as the kubelet lays them out (group 11211, mode
// 0440, memcached running as 11211), and talks to it as clients do: authentication with
// the right, wrong and missing credentials in each mode (a password, SASL, a client
// certificate, before and after its renewal), TLS verified against the CA a cert-manager
// Secret carries, plaintext against a TLS-only memcached, large items, and the exporter's
// path through the auth proxy or, with client certificates, to memcached itself, and items
// served from external storage (extstore) on the volume the pod mounts. Only two things are
// mapped: the mount directories (into a temporary directory) and the ports (free ones), since
// tests run beside each other.
package memcached_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// pod is a rendered Memcached running for real: memcached's public address (Port) and its
// plaintext loopback address (LoopbackPort, with TLS), and where its files are.
type pod struct {
	public, loopback string
	dir              string
	d                *render.Memcached
	args             func(c corev1.Container) []string
}

// run renders m's Deployment and runs its memcached container's command with the rendered
// arguments and mounted Secrets (the auth Secret the function renders, and tlsSecret).
func run(t testing.TB, m render.Memcached, tlsSecret *corev1.Secret) *pod {
	t.Helper()
	p := &pod{dir: memcachedtest.Dir(t), d: &m}
	publicPort, loopbackPort := memcachedtest.FreePort(t), memcachedtest.FreePort(t)
	p.public = "127.0.0.1:" + strconv.Itoa(publicPort)
	p.loopback = "127.0.0.1:" + strconv.Itoa(loopbackPort)

	secrets := map[string]*corev1.Secret{}
	if m.Auth != nil {
		s := render.AuthSecret(m)
		secrets[s.Name] = s
	}
	if tlsSecret != nil {
		secrets[tlsSecret.Name] = tlsSecret
	}
	if m.TLS != nil { // The pods mount the function's copy of the pair, not tlsSecret.
		s := render.TLSSecret(m)
		secrets[s.Name] = s
	}
	d := render.Deployment(m)
	spec := d.Spec.Template.Spec
	if ptr.Deref(spec.SecurityContext.RunAsUser, 0) != memcachedtest.UID || ptr.Deref(spec.SecurityContext.FSGroup, -1) != memcachedtest.UID && len(spec.Volumes) > 0 {
		t.Fatalf("the rendered pod runs as %v with fsGroup %v, not what this test lays its files out for (%d)",
			spec.SecurityContext.RunAsUser, spec.SecurityContext.FSGroup, memcachedtest.UID)
	}
	// Lay out every mounted Secret as the kubelet does, and external storage's volume as an
	// empty directory memcached's group may write (what fsGroup makes of an emptyDir or a
	// generic ephemeral volume).
	for _, v := range spec.Volumes {
		if v.Name == render.ExtstoreVolume && (v.EmptyDir != nil || v.Ephemeral != nil) {
			dir := filepath.Join(p.dir, v.Name)
			if err := os.MkdirAll(dir, 0o770); err != nil {
				t.Fatal(err)
			}
			if os.Geteuid() == 0 {
				if err := os.Chown(dir, 0, memcachedtest.UID); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(dir, 0o2770); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if v.Secret == nil {
			t.Fatalf("the pod mounts volume %s, which is no Secret and which this test cannot lay out", v.Name)
		}
		s, ok := secrets[v.Secret.SecretName]
		if !ok {
			t.Fatalf("the pod mounts Secret %q, which this test has no data for", v.Secret.SecretName)
		}
		if mode := ptr.Deref(v.Secret.DefaultMode, 0o644); mode != 0o440 {
			t.Fatalf("volume %s has mode %o; this test lays files out as 0440", v.Name, mode)
		}
		// With items, the kubelet projects the listed keys only.
		files := s.Data
		if len(v.Secret.Items) > 0 {
			files = map[string][]byte{}
			for _, it := range v.Secret.Items {
				data, ok := s.Data[it.Key]
				if !ok {
					t.Fatalf("volume %s projects key %q, which Secret %s lacks: the pod would not start", v.Name, it.Key, s.Name)
				}
				files[it.Path] = data
			}
		}
		for k, data := range files {
			memcachedtest.WriteFile(t, filepath.Join(p.dir, v.Name, k), data)
		}
	}
	translate := func(c corev1.Container) func(string) string {
		mounts := map[string]string{}
		for _, vm := range c.VolumeMounts {
			if !vm.ReadOnly && vm.Name != render.ExtstoreVolume {
				t.Fatalf("container %s mounts %s writable", c.Name, vm.MountPath)
			}
			mounts[vm.MountPath] = filepath.Join(p.dir, vm.Name)
		}
		r := strings.NewReplacer(
			"--port="+strconv.Itoa(render.Port), "--port="+strconv.Itoa(publicPort),
			"127.0.0.1:"+strconv.Itoa(render.LoopbackPort), p.loopback,
			"127.0.0.1:"+strconv.Itoa(render.Port), p.public,
		)
		return func(a string) string {
			for from, to := range mounts {
				a = strings.ReplaceAll(a, from, to)
			}
			return r.Replace(a)
		}
	}
	p.args = func(c corev1.Container) []string {
		tr := translate(c)
		var out []string
		for _, a := range c.Args {
			out = append(out, tr(a))
		}
		return out
	}
	mc := spec.Containers[0]
	if mc.Name != render.ContainerName || len(mc.Command) != 1 || mc.Command[0] != "memcached" {
		t.Fatalf("first container is %s running %v, want memcached", mc.Name, mc.Command)
	}
	// memcachedtest.Start runs memcached in the test's environment: the rendered one, with
	// its paths translated as the arguments' are.
	for _, e := range mc.Env {
		if e.ValueFrom != nil {
			t.Fatalf("memcached's environment variable %s comes from %v, which this test cannot lay out", e.Name, e.ValueFrom)
		}
		t.Setenv(e.Name, translate(mc)(e.Value))
	}
	args := p.args(mc)
	wait := []string{p.public}
	if slices.Contains(args, "--listen=notls:"+p.loopback) {
		wait = append(wait, p.loopback)
	}
	memcachedtest.Start(t, args, wait...)
	return p
}

func (p *pod) dial(t testing.TB, addr string) *memcachedtest.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mc := memcachedtest.NewConn(c)
	t.Cleanup(func() { _ = mc.Close() })
	return mc
}

func (p *pod) dialTLS(t testing.TB, ca []byte) *memcachedtest.Conn {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate")
	}
	// The connection Secret's host: the Service's DNS name, which the certificate names.
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", p.public,
		&tls.Config{RootCAs: roots, ServerName: render.Host(*p.d), MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS handshake verifying the server certificate against ca.crt: %v", err)
	}
	mc := memcachedtest.NewConn(c)
	t.Cleanup(func() { _ = mc.Close() })
	return mc
}

func memcached() render.Memcached {
	return render.Memcached{
		Name: "sessions", Namespace: "team-a", Size: 1, Image: resolve.DefaultImage, MemoryLimitMB: 64,
		MaxConnections: 64, Threads: 2, CPURequest: ptr.To(resource.MustParse("100m")),
		ExporterImage: resolve.DefaultExporterImage,
	}
}

func credentials(t testing.TB) *render.Auth {
	t.Helper()
	a, err := resolve.NewCredentials(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &a
}

// wrongPassword is password with its last character changed: always another password.
func wrongPassword(password string) string {
	last := "x"
	if strings.HasSuffix(password, last) {
		last = "y"
	}
	return password[:len(password)-1] + last
}

// expectRefusedUnauthenticated checks what a client without credentials sees.
func expectRefusedUnauthenticated(t *testing.T, c *memcachedtest.Conn) {
	t.Helper()
	if got, err := c.Line("get greeting"); err != nil || got != "CLIENT_ERROR unauthenticated" {
		t.Errorf("get without credentials: %q, %v; want CLIENT_ERROR unauthenticated", got, err)
	}
}

func TestAuth(t *testing.T) {
	m := memcached()
	m.Auth = credentials(t)
	p := run(t, m, nil)

	c := p.dial(t, p.public)
	if got, err := c.Auth(m.Auth.Username, m.Auth.Password); err != nil || got != "STORED" {
		t.Fatalf("authenticating with the connection Secret's username and password: %q, %v", got, err)
	}
	if got, err := c.Set("greeting", "hello"); err != nil || got != "STORED" {
		t.Fatalf("set after authenticating: %q, %v", got, err)
	}
	if got, err := c.Get("greeting"); err != nil || got != "hello" {
		t.Fatalf("get after authenticating: %q, %v", got, err)
	}

	expectRefusedUnauthenticated(t, p.dial(t, p.public))
	for name, creds := range map[string][2]string{
		"WrongPassword": {m.Auth.Username, wrongPassword(m.Auth.Password)},
		"WrongUser":     {"admin", m.Auth.Password},
	} {
		t.Run(name, func(t *testing.T) {
			c := p.dial(t, p.public)
			if got, err := c.Auth(creds[0], creds[1]); err != nil || got != "CLIENT_ERROR authentication failure" {
				t.Errorf("authenticating with %s: %q, %v; want CLIENT_ERROR authentication failure", name, got, err)
			}
			expectRefusedUnauthenticated(t, c)
		})
	}
}

func TestTLS(t *testing.T) {
	m := memcached()
	secret, ca := tlsSecret(t, m)
	served, errs := resolve.TLSSecret(nil, secret.Name, m.Namespace, render.Host(m), secret, time.Now())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m.TLS = served
	p := run(t, m, secret)

	c := p.dialTLS(t, []byte(render.ConnectionDetails(m)[render.ConnectionCA]))
	if got, err := c.Set("greeting", "hello"); err != nil || got != "STORED" {
		t.Fatalf("set over TLS: %q, %v", got, err)
	}
	if got, err := c.Get("greeting"); err != nil || got != "hello" {
		t.Fatalf("get over TLS: %q, %v", got, err)
	}
	if !bytes.Equal([]byte(render.ConnectionDetails(m)[render.ConnectionTLS]), []byte("true")) || len(ca) == 0 {
		t.Error("the connection details do not say tls: true with the CA")
	}

	// A plaintext client on the public port gets no answer: the connection is closed.
	if got, err := p.dial(t, p.public).Line("get greeting"); err == nil {
		t.Errorf("a plaintext client on the TLS port got %q, want the connection closed", got)
	}
	// The pod's own containers (the exporter) read plaintext on the loopback listener.
	if got, err := p.dial(t, p.loopback).Get("greeting"); err != nil || got != "hello" {
		t.Errorf("get on the plaintext loopback listener: %q, %v", got, err)
	}
	// A certificate from another CA is not trusted.
	_, otherCA := tlsSecret(t, m)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(otherCA)
	if c, err := tls.Dial("tcp", p.public, &tls.Config{RootCAs: roots, ServerName: render.Host(m), MinVersion: tls.VersionTLS12}); err == nil {
		_ = c.Close()
		t.Error("a client trusting another CA completed the handshake")
	}
}

func TestAuthAndTLS(t *testing.T) {
	m := memcached()
	m.Auth = credentials(t)
	secret, ca := tlsSecret(t, m)
	served, errs := resolve.TLSSecret(nil, secret.Name, m.Namespace, render.Host(m), secret, time.Now())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m.TLS = served
	p := run(t, m, secret)

	c := p.dialTLS(t, ca)
	if got, err := c.Auth(m.Auth.Username, m.Auth.Password); err != nil || got != "STORED" {
		t.Fatalf("authenticating over TLS: %q, %v", got, err)
	}
	if got, err := c.Set("greeting", "hello"); err != nil || got != "STORED" {
		t.Fatalf("set over TLS, authenticated: %q, %v", got, err)
	}
	expectRefusedUnauthenticated(t, p.dialTLS(t, ca))
	expectRefusedUnauthenticated(t, p.dial(t, p.loopback))
	if got, err := p.dial(t, p.public).Line("version"); err == nil {
		t.Errorf("a plaintext client on the TLS port got %q, want the connection closed", got)
	}
}

func TestMaxItemSize(t *testing.T) {
	m := memcached()
	m.MaxItemSizeMB = 2
	p := run(t, m, nil)
	c := p.dial(t, p.public)
	settings, err := c.Stats("settings")
	if err != nil || settings["item_size_max"] != strconv.Itoa(2<<20) {
		t.Fatalf("item_size_max: %q, %v; want %d", settings["item_size_max"], err, 2<<20)
	}
	big := strings.Repeat("x", 1500<<10)
	if got, err := c.Set("big", big); err != nil || got != "STORED" {
		t.Fatalf("set of a 1.5 MB value: %q, %v", got, err)
	}
	if got, err := c.Get("big"); err != nil || got != big {
		t.Fatalf("get of the 1.5 MB value: %d bytes, %v", len(got), err)
	}

	// Without the setting, memcached's 1 MB limit refuses it: the setting is what made it fit.
	d := run(t, memcached(), nil)
	if got, err := d.dial(t, d.public).Set("big", big); err != nil || got != "SERVER_ERROR object too large for cache" {
		t.Errorf("set of a 1.5 MB value with the default item size: %q, %v; want SERVER_ERROR object too large for cache", got, err)
	}
}

// TestExporterThroughAuthProxy runs the auth proxy as the renderer runs it, beside a memcached
// requiring authentication over TLS, and reads through it what the exporter reads.
func TestExporterThroughAuthProxy(t *testing.T) {
	m := memcached()
	m.Auth, m.Metrics, m.AuthProxyImage = credentials(t), true, "memcached-auth-proxy:test"
	secret, _ := tlsSecret(t, m)
	served, errs := resolve.TLSSecret(nil, secret.Name, m.Namespace, render.Host(m), secret, time.Now())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m.TLS = served
	p := run(t, m, secret)

	var proxy, exporter corev1.Container
	for _, c := range render.Deployment(m).Spec.Template.Spec.Containers {
		switch c.Name {
		case render.AuthProxyContainerName:
			proxy = c
		case render.ExporterContainerName:
			exporter = c
		}
	}
	addr, c := p.startAuthProxy(t, proxy)
	if want := "--memcached.address=127.0.0.1:" + strconv.Itoa(render.AuthProxyPort); exporter.Args[0] != want {
		t.Fatalf("the exporter scrapes %s, want the auth proxy (%s)", exporter.Args[0], want)
	}
	stats, err := memcachedtest.NewConn(c).Stats("")
	_ = c.Close()
	if err != nil || stats["pid"] == "" {
		t.Fatalf("stats through the auth proxy, as the exporter asks: %v, %v", stats, err)
	}
	scrapeExporter(t, exporter, addr, "1")
	// Pointed at memcached itself, the exporter cannot authenticate: that is why the proxy is
	// there.
	scrapeExporter(t, exporter, p.loopback, "0")
}

// startAuthProxy builds cmd/memcached-auth-proxy and runs it until the test ends with the
// rendered container proxy's arguments (mounts and ports translated, listening on a free
// port): its address, and a first connection to it.
func (p *pod) startAuthProxy(t *testing.T, proxy corev1.Container) (string, net.Conn) {
	t.Helper()
	proxyPort := memcachedtest.FreePort(t)
	args := p.args(proxy)
	for i, a := range args {
		args[i] = strings.Replace(a, "127.0.0.1:"+strconv.Itoa(render.AuthProxyPort), "127.0.0.1:"+strconv.Itoa(proxyPort), 1)
	}
	bin := filepath.Join(t.TempDir(), "memcached-auth-proxy")
	if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, "../../cmd/memcached-auth-proxy").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("auth proxy %v:\n%s", args, logs.String())
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(proxyPort)
	var c net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err = net.Dial("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the auth proxy does not listen on %s: %v", addr, err)
	}
	return addr, c
}

// scrapeExporter runs the memcached exporter that the e2e suite's node lane builds (bin/
// memcached_exporter, or $MEMCACHED_EXPORTER), when it is there, with the rendered exporter's arguments pointed at
// addr (the auth proxy), and checks that it reports memcached_up up ("1" or "0").
func scrapeExporter(t *testing.T, c corev1.Container, addr, up string) {
	t.Helper()
	bin := os.Getenv("MEMCACHED_EXPORTER")
	if bin == "" {
		bin, _ = filepath.Abs("../../bin/memcached_exporter")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Logf("no exporter binary at %s (the node lane builds it): stats through the proxy checked, not scraped", bin)
		return
	}
	listen := "127.0.0.1:" + strconv.Itoa(memcachedtest.FreePort(t))
	var args []string
	for _, a := range c.Args {
		args = append(args, strings.Replace(a, "127.0.0.1:"+strconv.Itoa(render.AuthProxyPort), addr, 1))
	}
	cmd := exec.Command(bin, append(args, "--web.listen-address="+listen)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		rsp, err := http.Get("http://" + listen + "/metrics")
		if err != nil {
			continue
		}
		body, _ = io.ReadAll(rsp.Body)
		_ = rsp.Body.Close()
		if bytes.Contains(body, []byte("\nmemcached_up "+up+"\n")) {
			return
		}
	}
	t.Errorf("the exporter, scraping %s, does not report memcached_up %s:\n%s\n%s", addr, up, grep(body, "memcached_up"), logs.String())
}

func grep(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// tlsSecret is what cert-manager writes for m: a kubernetes.io/tls Secret whose certificate,
// signed by a new CA, names the Service's DNS name, and the CA in ca.crt.
func tlsSecret(t testing.TB, m render.Memcached) (*corev1.Secret, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return tlsSecretWithKey(t, m, key)
}
