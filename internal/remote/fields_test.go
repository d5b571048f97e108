package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/render/rendertest"
)

// notCarried are the fields of render.Memcached that an Instance does not carry to another
// cluster, each with the reason docs/api.md's table gives. Carrying one means deleting its
// line here (the test says so when it is carried).
var notCarried = map[string]string{
	"Auth.Username":                     "authentication is not supported in another cluster yet",
	"Auth.Password":                     "authentication is not supported in another cluster yet",
	"Auth.Rotation":                     "authentication is not supported in another cluster yet",
	"Auth.Salt":                         "authentication is not supported in another cluster yet",
	"AuthProxyImage":                    "authentication is not supported in another cluster yet",
	"TLS.SecretName":                    "TLS is not supported in another cluster yet",
	"TLS.Certificate":                   "TLS is not supported in another cluster yet",
	"TLS.PrivateKey":                    "TLS is not supported in another cluster yet",
	"TLS.Digest":                        "TLS is not supported in another cluster yet",
	"TLS.CA":                            "TLS is not supported in another cluster yet",
	"NetworkPolicy.AllowedNamespaces":   "the provider does not manage NetworkPolicies yet",
	"NetworkPolicy.MonitoringNamespace": "the provider does not manage NetworkPolicies yet",
	"ServiceMonitor":                    "a ServiceMonitor belongs to the Prometheus of the cluster the Memcached runs in",
	"ExporterImage":                     "the claim's spec has no field for it: the provider uses its own default exporter image",
}

// TestEverySpecFieldCrossesToAnotherCluster proves that every field of render.Memcached
// survives the trip through an Instance (Instance, then the provider's Memcached), or is
// listed in notCarried with the reason docs/api.md gives.
func TestEverySpecFieldCrossesToAnotherCluster(t *testing.T) {
	ref := xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "edge"}
	api, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	trip := func(t *testing.T, m render.Memcached) render.Memcached {
		t.Helper()
		got, errs := Memcached(Instance(m, ref), defaults(t))
		if len(errs) > 0 {
			t.Fatalf("Memcached(Instance(m)): %v", errs)
		}
		return got
	}
	base := rendertest.Base()
	back := trip(t, base)
	for p, m := range rendertest.Variants(t) {
		t.Run(p, func(t *testing.T) {
			got := trip(t, m)
			// Carried: both values of the field, Base's and the changed one, come back.
			carried := rendertest.Equal(rendertest.Get(m, p), rendertest.Get(got, p)) &&
				rendertest.Equal(rendertest.Get(base, p), rendertest.Get(back, p))
			reason, listed := notCarried[p]
			switch {
			case !listed && !carried:
				t.Errorf("render.Memcached.%s is lost on the way through an Instance (%v, then %v): write it into the Instance's forProvider in remote.Instance, or list it in notCarried (internal/remote/fields_test.go) with the reason, and add that reason to docs/api.md's table",
					p, rendertest.Get(m, p), rendertest.Get(got, p))
			case listed && carried:
				t.Errorf("render.Memcached.%s is carried through an Instance now: delete its line from notCarried and from docs/api.md's table", p)
			case listed && !strings.Contains(string(api), reason):
				t.Errorf("docs/api.md does not give the reason render.Memcached.%s is not carried to another cluster: %q", p, reason)
			}
		})
	}
}
