package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/pki"
)

// Well-known ports and identities of a rendered Memcached.
const (
	// Port is memcached's client port.
	Port = 11211
	// PortName names the memcached port on containers and the Service.
	PortName = "memcached"
	// MetricsPort is the Prometheus exporter's port.
	MetricsPort = 9150
	// MetricsPortName names the exporter's port.
	MetricsPortName = "metrics"
	// UID is the non-root user and group memcached runs as: the memcache user of the
	// official image, so the image and the pod security context agree.
	UID = 11211
	// ContainerName is the memcached container's name.
	ContainerName = "memcached"
	// ExporterContainerName is the exporter sidecar's name.
	ExporterContainerName = "exporter"
	// AuthProxyContainerName is the auth proxy sidecar's name.
	AuthProxyContainerName = "auth-proxy"
	// LoopbackPort is memcached's plaintext listener on 127.0.0.1 when it serves TLS on Port:
	// only containers of the same pod (the exporter, the auth proxy) reach it.
	LoopbackPort = 11212
	// AuthProxyPort is where the auth proxy listens, on 127.0.0.1, for the exporter.
	AuthProxyPort = 11213
)

// Memcached is a fully resolved Memcached: validated, with every default applied. The
// renderer trusts it; resolving and validating a user's spec is package resolve's job.
type Memcached struct {
	// Name is the base name of every rendered object, a DNS-1035 label (see Name).
	Name string
	// Namespace the objects live in.
	Namespace string
	// Size is the number of replicas.
	Size int32
	// Image is the memcached image.
	Image string
	// MemoryLimitMB is memcached's cache size in megabytes.
	MemoryLimitMB int32
	// MaxConnections per replica.
	MaxConnections int32
	// Threads per replica.
	Threads int32
	// CPURequest and CPULimit of the memcached container; nil means unset.
	CPURequest, CPULimit *resource.Quantity
	// HighAvailability spreads replicas and adds a PodDisruptionBudget when Size > 1.
	HighAvailability bool
	// Metrics adds the exporter sidecar, using ExporterImage.
	Metrics       bool
	ExporterImage string
	// MaxItemSizeMB is memcached's largest item in megabytes; 0 leaves memcached's default
	// (1 MB).
	MaxItemSizeMB int32
	// Auth, when set, makes every client authenticate with its credentials.
	Auth *Auth
	// AuthProxyImage is the image of the sidecar that authenticates the exporter's
	// connections, used when Auth and Metrics are both on.
	AuthProxyImage string
	// TLS, when set, makes memcached serve TLS only, with the certificate of a Secret.
	TLS *TLS
	// NetworkPolicy, when set, admits clients from the Memcached's own namespace and the
	// namespaces it selects only.
	NetworkPolicy *NetworkAccess
	// Scheduling, when set, constrains the nodes replicas run on.
	Scheduling *Scheduling
	// ServiceMonitor composes a Prometheus Operator ServiceMonitor when Metrics is on.
	ServiceMonitor bool
	// PrometheusRule composes a Prometheus Operator PrometheusRule with the alerts
	// (Alerts) when Metrics is on.
	PrometheusRule bool
	// ExternalStorage, when set, keeps item values on a volume of each replica's own
	// (memcached's extstore).
	ExternalStorage *ExternalStorage
}

// Auth are the credentials clients authenticate with.
type Auth struct {
	// Mode is how clients authenticate (cachev1alpha1.AuthModes); empty means Password.
	Mode string
	// Username and Password authenticate a client in the Password and SASL modes.
	Username, Password string
	// Certificates are the CA, client and server certificates of the ClientCertificate mode.
	Certificates pki.Certificates
	// Rotation is the claim's spec.auth.rotation these credentials were generated for; the
	// auth Secret records it (AnnotationRotation).
	Rotation string
	// Salt keys the pod template's digest of the credentials (CredentialsDigest), so that
	// the digest, which anyone who may read the Deployment reads, tells nothing about the
	// password; the auth Secret keeps it (AuthSaltKey). Empty for credentials from before
	// salts, whose pods keep the unsalted digest they run with.
	Salt string
}

// TLS is what memcached serves TLS with: the last pair the tenant's Secret held that
// resolve accepted, which the pods read from a copy the function owns (TLSSecret), so that a
// replica restarting after a bad renewal still loads a pair clients can use.
type TLS struct {
	// SecretName is the tenant's kubernetes.io/tls Secret the pair was copied from.
	SecretName string
	// Certificate and PrivateKey are its tls.crt (the chain) and tls.key, which the copy holds.
	Certificate, PrivateKey string
	// Digest identifies the pair the replicas load, on the pod template: a new one rolls them
	// (memcached reads its certificate at start only). It is the digest of the copy's pair
	// once the copy holds it; until then the function keeps the replicas' own, so no replica
	// starts before the copy it mounts holds the pair its digest names.
	Digest string
	// CA is the Secret's ca.crt, copied and handed on to clients in the connection details;
	// empty when the Secret has none.
	CA string
}

// NetworkAccess is who may connect to a Memcached, which NetworkPolicy renders.
type NetworkAccess struct {
	// AllowedNamespaces selects the namespaces whose pods may connect to memcached, beside
	// the Memcached's own; nil admits the own namespace only.
	AllowedNamespaces *metav1.LabelSelector
	// MonitoringNamespace is the namespace whose pods may reach the metrics port; empty
	// admits none.
	MonitoringNamespace string
}

// Scheduling constrains the nodes a Memcached's pods run on.
type Scheduling struct {
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	PriorityClassName string
}

// Host is the DNS name of the headless Service, which resolves to every ready replica.
func Host(m Memcached) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local", m.Name, m.Namespace)
}

// Endpoint is host:port, what a client library is configured with.
func Endpoint(m Memcached) string {
	return Host(m) + ":" + strconv.Itoa(Port)
}

// SRV is the DNS SRV name of the headless Service's memcached port: it answers every ready
// replica's address and port, which is how sharding clients (grafana/dskit's memcached
// client, as Loki and Mimir use it) discover their servers.
func SRV(m Memcached) string {
	return "_" + PortName + "._tcp." + Host(m)
}

// Connection detail keys beside endpoint, host and port.
const (
	// ConnectionSRV is SRV's name, so that a client need not build it.
	ConnectionSRV = "srv"
	// ConnectionUsername and ConnectionPassword are the credentials, with auth on.
	ConnectionUsername = "username"
	ConnectionPassword = "password"
	// ConnectionTLS is "true" when memcached serves TLS only.
	ConnectionTLS = "tls"
	// ConnectionCA is the CA certificate that signed memcached's, when the TLS Secret has one.
	ConnectionCA = "ca.crt"
)

// ConnectionKeys are every key ConnectionDetails writes for some Memcached (one per
// authentication mode, with TLS with a CA), sorted: what the legacy XRD lists as its
// connectionSecretKeys, since Crossplane passes only those on to a claim's Secret.
func ConnectionKeys() []string {
	keys := map[string]bool{}
	for _, mode := range cachev1alpha1.AuthModes {
		for k := range ConnectionDetails(Memcached{Auth: &Auth{Mode: mode}, TLS: &TLS{CA: "-"}}) {
			keys[k] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// ConnectionDetails are the keys an application reads from its connection Secret: endpoint,
// host, port and the SRV name that lists every replica; the username and password in the
// Password and SASL modes, or the client certificate and its key (tls.crt, tls.key) in the
// ClientCertificate mode; and, with TLS, tls: "true" and the CA to verify memcached's
// certificate with (the TLS Secret's, or the Memcached's own CA for the certificate the
// function issues).
func ConnectionDetails(m Memcached) map[string][]byte {
	cd := map[string][]byte{
		"endpoint":    []byte(Endpoint(m)),
		"host":        []byte(Host(m)),
		"port":        []byte(strconv.Itoa(Port)),
		ConnectionSRV: []byte(SRV(m)),
	}
	switch a := m.Auth; {
	case a == nil:
	case a.Mode == cachev1alpha1.AuthModeClientCertificate:
		cd[corev1.TLSCertKey] = []byte(a.Certificates.Client)
		cd[corev1.TLSPrivateKeyKey] = []byte(a.Certificates.ClientKey)
	default:
		cd[ConnectionUsername] = []byte(a.Username)
		cd[ConnectionPassword] = []byte(a.Password)
	}
	if m.TLS != nil {
		cd[ConnectionTLS] = []byte("true")
		if m.TLS.CA != "" {
			cd[ConnectionCA] = []byte(m.TLS.CA)
		}
	}
	return cd
}

// ClientCertificates reports whether m's clients authenticate with client certificates.
func ClientCertificates(m Memcached) bool {
	return m.Auth != nil && m.Auth.Mode == cachev1alpha1.AuthModeClientCertificate
}

// SASL reports whether m's clients authenticate with SASL, over the binary protocol.
func SASL(m Memcached) bool {
	return m.Auth != nil && m.Auth.Mode == cachev1alpha1.AuthModeSASL
}

// NeedsAuthProxy reports whether the exporter reaches m through the auth proxy: it cannot
// authenticate with a password or speak SASL, but presents a client certificate itself.
func NeedsAuthProxy(m Memcached) bool {
	return m.Metrics && m.Auth != nil && !ClientCertificates(m)
}

// MemoryMiB is the container memory request and limit: the cache itself, plus 10% (at least
// 32 MiB) for memcached's hash table, slab overhead and runtime, plus 1 MiB per 64
// connections for their read and write buffers (about 16 KiB each), plus, with external
// storage, what extstore keeps in memory (ExtstoreMemoryMiB). Request equals limit so that the
// cache is never the first thing evicted under memory pressure.
func MemoryMiB(m Memcached) int64 {
	mem := int64(m.MemoryLimitMB)
	overhead := max(mem/10, 32)
	conns := (int64(m.MaxConnections) + 63) / 64
	return mem + overhead + conns + ExtstoreMemoryMiB(m)
}

// Labels are the conventional app.kubernetes.io labels every rendered object carries.
func Labels(m Memcached) map[string]string {
	l := SelectorLabels(m)
	l["app.kubernetes.io/component"] = "cache"
	l["app.kubernetes.io/managed-by"] = "crossplane"
	return l
}

// SelectorLabels select the pods of one Memcached. They never change for the life of a
// Memcached, because a Deployment's selector is immutable.
func SelectorLabels(m Memcached) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":     "memcached",
		"app.kubernetes.io/instance": m.Name,
	}
}
