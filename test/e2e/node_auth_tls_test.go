//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/function-memcached/internal/memcachedtest"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/test/e2e/internal/images"
	"github.com/example/function-memcached/test/e2e/internal/kube"
)

// securedComposition is the node lane's Composition for a platform that requires
// authentication: the lane's images, authentication on for every claim, the auth proxy's
// image (built and pushed by the scenario), and Prometheus in namespace monitoring.
const securedComposition = "xmemcacheds-node-secured.cache.example.com"

var securedComposed setUp

func requireSecuredComposition(t *testing.T) {
	t.Helper()
	securedComposed.require(t, applySecuredComposition)
}

func applySecuredComposition(ctx context.Context) error {
	proxy, err := images.AuthProxy(ctx, env.RepoRoot, env.Images.Registry)
	if err != nil {
		return err
	}
	return applyCompositionFromExample(ctx, securedComposition, "", map[string]any{
		"apiVersion": "memcached.fn.example.com/v1beta1",
		"kind":       "Input",
		"defaults": map[string]any{
			"image":          env.Images.Memcached,
			"exporterImage":  env.Images.Exporter,
			"authProxyImage": proxy,
			"memoryLimitMB":  int64(64),
			"auth":           map[string]any{"enabled": true},
		},
		"policy": map[string]any{
			"maxSize":           int64(laneMaxSize),
			"maxMemoryLimitMB":  int64(laneMaxMemoryMB),
			"allowedRegistries": []any{env.Images.Registry},
			"requireAuth":       true,
		},
		"metrics": map[string]any{"monitoringNamespace": "monitoring"},
	})
}

// On the real node, a claim with TLS (a cert-manager-like Secret) under a platform that
// requires authentication runs memcached from Debian's package with the mounted credentials
// and certificate — files of group 11211, mode 0440, which memcached, running as 11211, reads —
// and a client with the connection Secret's details (its CA to verify the certificate against
// the host name, its username and password) stores and reads keys on every replica; a client
// without credentials, with a wrong password, or speaking plaintext is refused. The exporter,
// through the auth proxy, reports memcached up and the items written. An application pod in
// the claim's namespace that mounts the connection Secret connects with what it holds. The
// pods mount the function's copy of the pair (<name>-tls-active), not the tenant's Secret: a
// renewal with an RSA-1024 key, which memcached cannot load, is InvalidSpec on the claim and
// changes nothing that runs, and a replica deleted then comes back serving the last accepted
// certificate, which clients still verify.
func TestNodeAuthAndTLS(t *testing.T) {
	requireNode(t)
	requireSecuredComposition(t)
	t.Parallel()
	ctx := context.Background()
	ns := newNodeNamespace(t, "node-secured")
	const name = "sessions"
	ca := newCA(t)
	writeTLSSecret(t, ca, ns, name+"-tls", name)
	claim := newClaim(ns, name, 2)
	spec := claim.Object["spec"].(map[string]any)
	spec["compositionRef"] = map[string]any{"name": securedComposition}
	spec["tls"] = map[string]any{"secretName": name + "-tls"}
	spec["metrics"] = map[string]any{"enabled": true}
	apply(t, claim)
	waitAvailable(t, claimGVK, ns, name, 2)
	pods := waitPodsReady(t, ns, name, 2)
	cd := waitConnection(t, ns, name+"-memcached", func(cd map[string]string) error {
		if cd["password"] == "" || cd["tls"] != "true" || cd["ca.crt"] == "" {
			return errors.New("want username, password, tls and ca.crt")
		}
		return nil
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(cd["ca.crt"])) {
		t.Fatal("the connection Secret's ca.crt holds no certificate")
	}
	dialTLS := func(t *testing.T, addr string) *memcachedtest.Conn {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: roots, ServerName: cd["host"], MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("TLS to %s, verifying %s against the connection Secret's CA: %v", addr, cd["host"], err)
		}
		mc := memcachedtest.NewConn(c)
		t.Cleanup(func() { _ = mc.Close() })
		return mc
	}

	for i := range pods {
		addr := net.JoinHostPort(pods[i].Status.PodIP, strconv.Itoa(render.Port))
		t.Run("replica "+pods[i].Name, func(t *testing.T) {
			c := dialTLS(t, addr)
			if got, err := c.Auth(cd["username"], cd["password"]); err != nil || got != "STORED" {
				t.Fatalf("authenticating with the connection Secret's credentials: %q, %v", got, err)
			}
			key := fmt.Sprintf("key-%d", i)
			if got, err := c.Set(key, "value"); err != nil || got != "STORED" {
				t.Fatalf("set: %q, %v", got, err)
			}
			if got, err := c.Get(key); err != nil || got != "value" {
				t.Fatalf("get: %q, %v", got, err)
			}
			if got, err := dialTLS(t, addr).Line("get " + key); err != nil || got != "CLIENT_ERROR unauthenticated" {
				t.Errorf("get without credentials: %q, %v; want CLIENT_ERROR unauthenticated", got, err)
			}
			if got, err := dialTLS(t, addr).Auth(cd["username"], cd["password"]+"x"); err != nil || got != "CLIENT_ERROR authentication failure" {
				t.Errorf("a wrong password: %q, %v; want CLIENT_ERROR authentication failure", got, err)
			}
			plain, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := memcachedtest.NewConn(plain).Line("version"); err == nil {
				t.Errorf("a plaintext client got %q, want the connection closed", got)
			}
			_ = plain.Close()
		})
	}

	t.Run("memcached, as 11211, reads Secret files only its group may read", func(t *testing.T) {
		p := mainProcess(t, container(t, &pods[0], render.ContainerName))
		wantConfined(t, "memcached", p, render.UID)
		for _, f := range []string{render.AuthDir + "/" + render.AuthFileKey, render.TLSDir + "/tls.key"} {
			st, err := os.Stat(filepath.Join("/proc", strconv.Itoa(p.PID), "root", f))
			if err != nil {
				t.Fatal(err)
			}
			if sys, ok := st.Sys().(*syscall.Stat_t); !ok || st.Mode().Perm() != 0o440 || sys.Gid != render.UID || sys.Uid != 0 {
				t.Errorf("%s: mode %o, owner %v; want 0440, root:%d", f, st.Mode().Perm(), st.Sys(), render.UID)
			}
		}
		proxy := mainProcess(t, container(t, &pods[0], render.AuthProxyContainerName))
		wantConfined(t, "auth proxy", proxy, render.UID)
	})

	t.Run("the exporter reaches memcached through the auth proxy", func(t *testing.T) {
		err := kube.Wait(ctx, defaultTimeout, "exporters reporting memcached_up 1 and an item each", func(ctx context.Context) error {
			for _, p := range pods {
				m, err := scrape(ctx, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(render.MetricsPort))+"/metrics")
				if err != nil {
					return err
				}
				if m["memcached_up"] != 1 || m["memcached_current_items"] != 1 {
					return errors.Errorf("pod %s: memcached_up %v, items %v", p.Name, m["memcached_up"], m["memcached_current_items"])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the pods mount the function's copy of the pair, not the tenant's Secret", func(t *testing.T) {
		var mounted []string
		for _, v := range deployment(t, ns, name).Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				mounted = append(mounted, v.Secret.SecretName)
			}
		}
		if !slices.Contains(mounted, name+render.TLSSecretSuffix) || slices.Contains(mounted, name+"-tls") {
			t.Errorf("the pods mount Secrets %v: want %s, not the tenant's %s", mounted, name+render.TLSSecretSuffix, name+"-tls")
		}
	})

	// Last: its key would change the exporter's item count.
	t.Run("a pod in the claim's namespace connects with the connection Secret; one without it is refused", func(t *testing.T) {
		addr := net.JoinHostPort(pods[0].Status.PodIP, strconv.Itoa(render.Port))
		runReach(t, []reachCheck{
			{what: "an application mounting " + name + "-memcached", ns: ns, proto: "memcached", addr: addr, want: true, secret: name + "-memcached"},
			{what: "a client without the connection Secret", ns: ns, proto: "memcached", addr: addr},
		})
	})

	// After every other check: it replaces a replica.
	t.Run("a renewal with an RSA-1024 key is refused and a restarted replica serves the last good pair", func(t *testing.T) {
		_, _, generation := replicasAndGeneration(t, ns, name)
		// The tenant, with the example role, writes its own Secret: a renewal gone wrong.
		writeWeakTLSSecret(t, newTenant(t, ns), ns, name+"-tls", cd["host"])
		waitMemcached(t, claimGVK, ns, name, "InvalidSpec naming the TLS Secret's weak key", func(m memcached) error {
			if m.AvailableReason != "InvalidSpec" || !strings.Contains(m.Message, "spec.tls.secretName") ||
				!strings.Contains(m.Message, "1024-bit RSA key, under 2048 bits") {
				return errors.Errorf("want InvalidSpec naming spec.tls.secretName and the 1024-bit key, got %s: %s", m.AvailableReason, m.Message)
			}
			return nil
		})
		if _, _, g := replicasAndGeneration(t, ns, name); g != generation {
			t.Errorf("the Deployment changed (generation %d → %d) under a refused certificate", generation, g)
		}
		if err := env.Kube.Typed.CoreV1().Pods(ns).Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		again := waitPodsReady(t, ns, name, 2)
		for i := range again {
			if again[i].Name == pods[0].Name {
				continue
			}
			addr := net.JoinHostPort(again[i].Status.PodIP, strconv.Itoa(render.Port))
			c := dialTLS(t, addr) // Verified against the connection Secret's CA and host.
			if got, err := c.Auth(cd["username"], cd["password"]); err != nil || got != "STORED" {
				t.Errorf("the replacement replica %s: authenticating: %q, %v", again[i].Name, got, err)
			}
		}
		// A good renewal makes the claim valid again.
		writeTLSSecret(t, ca, ns, name+"-tls", name)
		waitAvailable(t, claimGVK, ns, name, 2)
	})
}

// writeWeakTLSSecret writes a kubernetes.io/tls Secret for host that is right in every way but
// its key's size: an RSA-1024 key, which memcached's OpenSSL refuses to load, signed by a new
// CA that the Secret's ca.crt holds, as client c.
func writeWeakTLSSecret(t *testing.T, c *kube.Client, ns, secret, host string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "weak renewal CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), DNSNames: []string{host}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Apply(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": secret, "namespace": ns},
		"type":     string(corev1.SecretTypeTLS),
		"stringData": map[string]any{
			corev1.TLSCertKey:       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			corev1.TLSPrivateKeyKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})),
			"ca.crt":                string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})),
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
}
