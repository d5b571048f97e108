// Package rendertest is what tests in several packages share to prove that every field of a
// render.Memcached is threaded through what they test (what is rendered, the cache keys, the
// trip to another cluster): a Memcached with every field set, and a change of each field. The
// fields are found by reflection, so a field added to render.Memcached without a change here
// fails every test that uses it, with a message saying what to add.
package rendertest

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/internal/pki"
	"github.com/example/function-memcached/internal/render"
)

// Base returns a Memcached with every field set and every feature on (metrics, auth, TLS,
// network policy, scheduling, a ServiceMonitor and a PrometheusRule), so that a change of any one field shows. It
// is valid under resolve's built-in policy, so it also survives the trip through an Instance.
func Base() render.Memcached {
	return render.Memcached{
		Name: "sessions", Namespace: "team-a", Size: 3, Image: "memcached:1.6.39-alpine",
		MemoryLimitMB: 256, MaxConnections: 1024, Threads: 4,
		CPURequest: ptr.To(resource.MustParse("250m")), CPULimit: ptr.To(resource.MustParse("1")),
		HighAvailability: true, Metrics: true, ExporterImage: "prom/memcached-exporter:v0.15.4",
		MaxItemSizeMB: 2,
		Auth: &render.Auth{Mode: "Password", Username: "memcached", Password: "secret-password", Rotation: "2026-12-01", Salt: "0123456789abcdef0123456789abcdef",
			Certificates: pki.Certificates{CA: "-----BEGIN CERTIFICATE----- ca", CAKey: "-----BEGIN EC PRIVATE KEY----- ca"}},
		AuthProxyImage: "registry.example.com/auth-proxy:1",
		TLS: &render.TLS{SecretName: "sessions-tls", Certificate: "-----BEGIN CERTIFICATE----- leaf", PrivateKey: "-----BEGIN PRIVATE KEY-----",
			Digest: "0123456789abcdef", CA: "-----BEGIN CERTIFICATE-----"},
		NetworkPolicy: &render.NetworkAccess{
			AllowedNamespaces:   &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "web"}},
			MonitoringNamespace: "monitoring",
		},
		Scheduling: &render.Scheduling{
			NodeSelector:      map[string]string{"disk": "ssd"},
			Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}},
			PriorityClassName: "cache",
		},
		ServiceMonitor:  true,
		PrometheusRule:  true,
		ExternalStorage: &render.ExternalStorage{SizeMB: 1024},
	}
}

// changes change one field of Base each, to another value resolve's built-in policy accepts.
// A field of render.Memcached needs one here: add it with the field.
var changes = map[string]func(m *render.Memcached){
	"Name":             func(m *render.Memcached) { m.Name = "carts" },
	"Namespace":        func(m *render.Memcached) { m.Namespace = "team-b" },
	"Size":             func(m *render.Memcached) { m.Size = 2 },
	"Image":            func(m *render.Memcached) { m.Image = "memcached:1.6.38-alpine" },
	"MemoryLimitMB":    func(m *render.Memcached) { m.MemoryLimitMB = 512 },
	"MaxConnections":   func(m *render.Memcached) { m.MaxConnections = 4096 },
	"Threads":          func(m *render.Memcached) { m.Threads = 8 },
	"CPURequest":       func(m *render.Memcached) { m.CPURequest = ptr.To(resource.MustParse("500m")) },
	"CPULimit":         func(m *render.Memcached) { m.CPULimit = ptr.To(resource.MustParse("2")) },
	"HighAvailability": func(m *render.Memcached) { m.HighAvailability = false },
	"Metrics":          func(m *render.Memcached) { m.Metrics = false },
	"ExporterImage":    func(m *render.Memcached) { m.ExporterImage = "prom/memcached-exporter:v0.15.3" },
	"MaxItemSizeMB":    func(m *render.Memcached) { m.MaxItemSizeMB = 4 },
	"Auth.Mode":        func(m *render.Memcached) { m.Auth.Mode = "SASL" },
	"Auth.Certificates": func(m *render.Memcached) {
		m.Auth.Certificates.CA = "-----BEGIN CERTIFICATE----- renewed ca"
	},
	"Auth.Username":   func(m *render.Memcached) { m.Auth.Username = "other" },
	"Auth.Password":   func(m *render.Memcached) { m.Auth.Password = "other-password" },
	"Auth.Rotation":   func(m *render.Memcached) { m.Auth.Rotation = "2027-01-01" },
	"Auth.Salt":       func(m *render.Memcached) { m.Auth.Salt = "fedcba9876543210fedcba9876543210" },
	"AuthProxyImage":  func(m *render.Memcached) { m.AuthProxyImage = "registry.example.com/auth-proxy:2" },
	"TLS.SecretName":  func(m *render.Memcached) { m.TLS.SecretName = "renewed-tls" },
	"TLS.Certificate": func(m *render.Memcached) { m.TLS.Certificate = "-----BEGIN CERTIFICATE----- renewed leaf" },
	"TLS.PrivateKey":  func(m *render.Memcached) { m.TLS.PrivateKey = "-----BEGIN PRIVATE KEY----- renewed" },
	"TLS.Digest":      func(m *render.Memcached) { m.TLS.Digest = "fedcba9876543210" },
	"TLS.CA":          func(m *render.Memcached) { m.TLS.CA = "-----BEGIN CERTIFICATE----- renewed" },
	"NetworkPolicy.AllowedNamespaces": func(m *render.Memcached) {
		m.NetworkPolicy.AllowedNamespaces.MatchLabels[corev1.LabelMetadataName] = "api"
	},
	"NetworkPolicy.MonitoringNamespace": func(m *render.Memcached) { m.NetworkPolicy.MonitoringNamespace = "prometheus" },
	"Scheduling.NodeSelector":           func(m *render.Memcached) { m.Scheduling.NodeSelector["disk"] = "hdd" },
	"Scheduling.Tolerations":            func(m *render.Memcached) { m.Scheduling.Tolerations[0].Value = "sessions" },
	"Scheduling.PriorityClassName":      func(m *render.Memcached) { m.Scheduling.PriorityClassName = "batch" },
	"ServiceMonitor":                    func(m *render.Memcached) { m.ServiceMonitor = false },
	"PrometheusRule":                    func(m *render.Memcached) { m.PrometheusRule = false },
	"ExternalStorage.SizeMB":            func(m *render.Memcached) { m.ExternalStorage.SizeMB = 768 },
	// StorageClass is the one a platform's policy must allow (AllowedStorageClass).
	"ExternalStorage.StorageClassName": func(m *render.Memcached) { m.ExternalStorage.StorageClassName = StorageClass },
}

// StorageClass is the StorageClass the changes name, which a policy must allow for them to
// resolve.
const StorageClass = "local-ssd"

// Fields are the paths of every field of render.Memcached, like "Scheduling.Tolerations",
// walked by reflection into the structs of package render (through pointers too); a field of
// any other type (a quantity, a selector, tolerations, a map) is one field.
func Fields() []string {
	var paths []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for f := range t.Fields() {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft.PkgPath() == reflect.TypeFor[render.Memcached]().PkgPath() {
				walk(ft, prefix+f.Name+".")
				continue
			}
			paths = append(paths, prefix+f.Name)
		}
	}
	walk(reflect.TypeFor[render.Memcached](), "")
	return paths
}

// Variants returns, by path, a copy of Base with that one field changed, for every field of
// Fields. It fails t for a field without a change in this package's table, and for a change
// that leaves its field as it was or changes another.
func Variants(t testing.TB) map[string]render.Memcached {
	t.Helper()
	fields := Fields()
	out := make(map[string]render.Memcached, len(fields))
	for _, p := range fields {
		change, ok := changes[p]
		if !ok {
			t.Errorf("render.Memcached field %s has no change in internal/render/rendertest (changes): add one that sets it to another valid value, then thread the field through until every TestEverySpecField… test passes", p)
			continue
		}
		m := Base()
		change(&m)
		base := Base()
		for _, q := range fields {
			if same := Equal(Get(base, q), Get(m, q)); same == (q == p) {
				t.Errorf("rendertest's change of %s changes %s: it must change exactly its own field", p, q)
			}
		}
		out[p] = m
	}
	for p := range changes {
		if !slices.Contains(fields, p) {
			t.Errorf("rendertest has a change of %s, which render.Memcached does not have: remove it", p)
		}
	}
	return out
}

// Get returns the field at path p of m; the zero Value when a pointer on the way is nil.
func Get(m render.Memcached, p string) reflect.Value {
	v := reflect.ValueOf(m)
	for name := range strings.SplitSeq(p, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		v = v.FieldByName(name)
	}
	return v
}

// Equal reports whether two fields (as Get returns them) hold the same value: the same JSON,
// so that quantities compare by value and a missing field equals none but another.
func Equal(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	ja, errA := json.Marshal(a.Interface())
	jb, errB := json.Marshal(b.Interface())
	return errA == nil && errB == nil && string(ja) == string(jb)
}
