package render

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
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
}

// Host is the DNS name of the headless Service, which resolves to every ready replica.
func Host(m Memcached) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local", m.Name, m.Namespace)
}

// Endpoint is host:port, what a client library is configured with.
func Endpoint(m Memcached) string {
	return Host(m) + ":" + strconv.Itoa(Port)
}

// ConnectionDetails are the keys an application reads from its connection Secret.
func ConnectionDetails(m Memcached) map[string][]byte {
	return map[string][]byte{
		"endpoint": []byte(Endpoint(m)),
		"host":     []byte(Host(m)),
		"port":     []byte(strconv.Itoa(Port)),
	}
}

// MemoryMiB is the container memory request and limit: the cache itself, plus 10% (at least
// 32 MiB) for memcached's hash table, slab overhead and runtime, plus 1 MiB per 64
// connections for their read and write buffers (about 16 KiB each). Request equals limit so
// that the cache is never the first thing evicted under memory pressure.
func MemoryMiB(m Memcached) int64 {
	mem := int64(m.MemoryLimitMB)
	overhead := max(mem/10, 32)
	conns := (int64(m.MaxConnections) + 63) / 64
	return mem + overhead + conns
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
