package kubeconfig

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
)

// serverCA is the base64 PEM of srv's certificate, which signs itself.
func serverCA(srv *httptest.Server) string {
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// otherCA is the base64 PEM of a CA that signed nothing the test serves.
func otherCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// testTransportErrorsNameNoPeer: a namespaced ProviderConfig's server that cannot be reached
// over verified TLS fails with Unreachable only, whatever is at its address, so that no
// ProviderConfig probes the provider's network; a ClusterProviderConfig's errors stay whole.
func testTransportErrorsNameNoPeer(t *testing.T) {
	// A TLS service in the provider's network, with its own certificate and CA.
	service := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(service.Close)
	// A plain-http service, and a TCP service that speaks something else.
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(plain.Close)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tcp.Close() })
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6 db.internal\r\n"))
			_ = c.Close()
		}
	}()
	// A closed port.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + l.Addr().String()
	_ = l.Close()
	servicePort := strings.TrimPrefix(service.URL, "https://127.0.0.1")

	type args struct {
		server, ca string
		namespaced bool
	}
	cases := map[string]struct {
		reason string
		args   args
		// want is the error after `Get "<server>/<path>": `.
		want string
	}{
		"OtherNames": {
			reason: "A service whose certificate the tenant's CA signed but for other names is not told by them.",
			args:   args{server: "https://localhost" + servicePort, ca: serverCA(service), namespaced: true},
			want:   Unreachable,
		},
		"OtherAuthority": {
			reason: "A TLS service with another CA is not told apart from a closed port.",
			args:   args{server: service.URL, ca: otherCA(t), namespaced: true},
			want:   Unreachable,
		},
		"PlainHTTP": {
			reason: "Nor is a plain-http service.",
			args:   args{server: strings.Replace(plain.URL, "http:", "https:", 1), ca: serverCA(service), namespaced: true},
			want:   Unreachable,
		},
		"NotTLS": {
			reason: "Nor a TCP service speaking something else, nor what it said.",
			args:   args{server: "https://" + tcp.Addr().String(), ca: serverCA(service), namespaced: true},
			want:   Unreachable,
		},
		"ClosedPort": {
			reason: "A closed port fails the same.",
			args:   args{server: closed, ca: serverCA(service), namespaced: true},
			want:   Unreachable,
		},
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig's error, which the platform's operators read, stays whole.",
			args:   args{server: closed, ca: serverCA(service)},
			want:   "dial tcp " + strings.TrimPrefix(closed, "https://") + ": connect: connection refused",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc, err := FromKubeconfig(namespacedKubeconfig("    server: "+tc.args.server+"\n    certificate-authority-data: "+tc.args.ca+"\n"), tc.args.namespaced)
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(rc)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Get(context.Background(), types.NamespacedName{Namespace: "team-a", Name: "sessions"}, &appsv1.Deployment{})
			want := `Get "` + tc.args.server + `/apis/apps/v1/namespaces/team-a/deployments/sessions": ` + tc.want
			if diff := cmp.Diff(want, errString(err)); diff != "" {
				t.Errorf("\n%s\n-want error, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
