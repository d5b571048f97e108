package fn

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestRemoteStaleKeysReachNoClaim: a provider before this version publishes an Instance's
// connection details with crossplane-runtime's merge patch, which never removes a key. After a
// remote Memcached changes from ClientCertificate (with the issued TLS) to Password, its
// Instance's Secret holds the password and, still, tls: "true", ca.crt, tls.crt and tls.key;
// the claim, whose spec says Password without TLS, gets the password alone.
func TestRemoteStaleKeysReachNoClaim(t *testing.T) {
	req := &fnv1.RunFunctionRequest{}
	readProtoYAML(t, filepath.Join("testdata", "remote-connection-published", "request.yaml"), req)
	inst := req.GetObserved().GetResources()[KeyInstance]
	if inst == nil {
		t.Fatalf("the fixture has no observed %s", KeyInstance)
	}
	// What the Instance's Secret holds after the change: the Password mode's details merged
	// over the ClientCertificate mode's.
	inst.ConnectionDetails["tls"] = []byte("true")
	inst.ConnectionDetails["ca.crt"] = []byte("-----BEGIN CERTIFICATE-----\nstale\n-----END CERTIFICATE-----\n")
	inst.ConnectionDetails["tls.crt"] = []byte("-----BEGIN CERTIFICATE-----\nstale\n-----END CERTIFICATE-----\n")
	inst.ConnectionDetails["tls.key"] = []byte("-----BEGIN EC PRIVATE KEY-----\nstale\n-----END EC PRIVATE KEY-----\n")

	rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	cd := rsp.GetDesired().GetComposite().GetConnectionDetails()
	if len(cd["password"]) == 0 {
		t.Fatalf("the claim gets the published password: %v", cd)
	}
	for _, k := range []string{"tls", "ca.crt", "tls.crt", "tls.key"} {
		if len(cd[k]) > 0 {
			t.Errorf("a Password claim without tls.secretName serves no TLS, yet its connection details carry %s = %q", k, cd[k])
		}
	}
}
