package cluster

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/example/function-memcached/internal/clients/kubeconfig"
)

// TestWatchedConcealsTransportErrors proves that what the watches of a namespaced
// ProviderConfig's connection report, which reaches the Instance's Unreachable condition,
// says only that the server cannot be reached: not that its port is closed.
func TestWatchedConcealsTransportErrors(t *testing.T) {
	ca := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(ca.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	data := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Certificate().Raw}))
	kc := `apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster: {server: 'https://` + addr + `', certificate-authority-data: ` + data + `}
users:
- name: u
  user: {token: t}
`
	rc, err := kubeconfig.FromKubeconfig([]byte(kc), true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(rc, Options{Kinds: testKinds, SyncTimeout: 2 * time.Second, RequestTimeout: time.Second, WatchTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	_, err = c.Watched(context.Background(), "team-a", types.NamespacedName{Namespace: "platform", Name: "sessions"}, "")
	got := ""
	if err != nil {
		got = err.Error()
	}
	want := "cannot observe namespace team-a of https://" + addr + ": cannot reach " + addr + ": " + kubeconfig.Unreachable
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Watched(...) of a closed port: -want error, +got:\n%s", diff)
	}
}
