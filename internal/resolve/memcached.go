package resolve

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// Memcached resolves a Memcached spec, found at root (spec for a claim, spec.forProvider for
// an Instance), into what render needs, for the objects named name in namespace. It reports
// every problem at once, each naming the field, the value and the limit, in the Kubernetes
// field-error format users know from kubectl, for example
//
//	spec.size: Invalid value: 9: must be an integer between 1 and 3 (policy.maxSize)
//
// It is the one way into resolve: the composition function decodes a claim's spec into the
// typed spec first (reporting values of the wrong type with Settings.Rule's words), and the
// provider hands over an Instance's forProvider as it is.
func Memcached(root *field.Path, spec cachev1alpha1.MemcachedSpec, name, namespace string, s Settings) (render.Memcached, field.ErrorList) {
	var errs field.ErrorList
	integer := func(key string, v *int32, def, lo, hi int64) int32 {
		if v == nil {
			return int32(def)
		}
		if n := int64(*v); n < lo || n > hi {
			errs = append(errs, field.Invalid(root.Child(key), n, "must be "+s.Rule(key)))
			return int32(def)
		}
		return *v
	}
	m := render.Memcached{
		Name:             name,
		Namespace:        namespace,
		Size:             integer("size", spec.Size, DefaultSize, 1, s.MaxSize),
		MemoryLimitMB:    integer("memoryLimitMB", spec.MemoryLimitMB, s.MemoryLimitMB, MinMemoryLimitMB, s.MaxMemoryLimitMB),
		MaxConnections:   integer("maxConnections", spec.MaxConnections, DefaultMaxConnections, MinConnections, MaxConnections),
		Threads:          integer("threads", spec.Threads, DefaultThreads, 1, MaxThreads),
		Image:            s.Image,
		HighAvailability: true,
		ExporterImage:    s.ExporterImage,
	}
	valid := func(v *int32, lo, hi int64) bool { return v == nil || int64(*v) >= lo && int64(*v) <= hi }
	if lo := MinConnectionsFor(m.Threads); int64(m.MaxConnections) < lo &&
		valid(spec.MaxConnections, MinConnections, MaxConnections) && valid(spec.Threads, 1, MaxThreads) {
		// Only when both fields are valid: a refused one was replaced by its default.
		errs = append(errs, field.Invalid(root.Child("maxConnections"), int64(m.MaxConnections), fmt.Sprintf(
			"must be at least %d with %d threads (%s): memcached takes its open files, %d per thread, out of this limit, and the pod's own connections need room",
			lo, m.Threads, root.Child("threads"), ConnectionsPerThread)))
	}
	if spec.Image != "" {
		// The default was checked with the Input; a user's image is checked here.
		m.Image = spec.Image
		errs = append(errs, s.checkImage(root.Child("image"), spec.Image)...)
	}
	if ha := spec.HighAvailability; ha != nil {
		m.HighAvailability = ptr.Deref(ha.Enabled, true)
	}
	if mt := spec.Metrics; mt != nil {
		m.Metrics = ptr.Deref(mt.Enabled, false)
	}

	var req, lim *cachev1alpha1.CPU
	if r := spec.Resources; r != nil {
		req, lim = r.Requests, r.Limits
	}
	m.CPURequest = cpu(root, "requests", req, DefaultCPURequest, &errs)
	m.CPULimit = cpu(root, "limits", lim, "", &errs)
	if m.CPURequest != nil && m.CPULimit != nil && m.CPULimit.Cmp(*m.CPURequest) < 0 {
		errs = append(errs, field.Invalid(root.Child("resources", "limits", "cpu"), m.CPULimit.String(),
			"must be at least resources.requests.cpu ("+m.CPURequest.String()+")"))
	}
	if v := spec.MaxItemSizeMB; v != nil {
		// memcached refuses an item size above half of its cache.
		if hi := min(MaxItemSizeMB, int64(m.MemoryLimitMB)/2); int64(*v) < 1 || int64(*v) > hi {
			errs = append(errs, field.Invalid(root.Child("maxItemSizeMB"), int64(*v),
				fmt.Sprintf("must be an integer between 1 and %d (at most %d, and at most half of memoryLimitMB, %d)", hi, MaxItemSizeMB, m.MemoryLimitMB)))
		} else {
			m.MaxItemSizeMB = *v
		}
	}
	if e := spec.ExternalStorage; e != nil {
		errs = append(errs, externalStorage(root, spec, &m, s)...)
	}
	errs = append(errs, security(root, spec, &m, s)...)
	if spec.Scheduling != nil {
		errs = append(errs, scheduling(root.Child("scheduling"), spec.Scheduling, &m, s)...)
	}
	if len(errs) > 0 {
		return render.Memcached{}, errs
	}
	return m, nil
}

// cpu parses a positive CPU quantity at resources.<which>.cpu under root, returning def (nil
// when def is empty) when c names none. The field's path is built only for an error: this runs
// on every call of the function.
func cpu(root *field.Path, which string, c *cachev1alpha1.CPU, def string, errs *field.ErrorList) *resource.Quantity {
	s := def
	if c != nil && c.CPU != "" {
		s = c.CPU
	}
	if s == "" {
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		*errs = append(*errs, field.Invalid(root.Child("resources", which, "cpu"), s, "must be "+ruleCPU))
		return nil
	}
	return &q
}

// The connection limits memcached can start and serve with. memcached (1.6.18, Debian's, as
// measured by test/memcached) sets its open-file limit, soft and hard, to --conn-limit and
// then opens 4 files per worker thread (an eventfd, an epoll and a signal pipe) and 8 more
// (stdin, stdout, stderr, the main epoll and its pipe, and two listening sockets, with TLS
// or without); each connection takes one more. It refuses to start unless the limit is two
// more than the 5 files per thread it reserves plus its listening sockets: the smallest
// limit it starts with is max(4t+8, 5t+4), 12 with 1 thread, 24 with 4, 84 with 16 and
// 324 with 64, and at that limit it serves almost no connection. A claim must ask for more:
// ConnectionsPerThread per thread (one more than memcached reserves, for a newer memcached
// such as the default image's 1.6.39 that opens more per thread) plus ConnectionsHeadroom:
// the pod's own connections (the exporter's, through the auth proxy when authentication is
// on, and the kubelet's two probes, each a TCP connection and, with TLS, a handshake), and
// a dozen clients at least. It is never less than MinConnections, the minimum with the
// default threads, which is the schema's static minimum.
const (
	ConnectionsPerThread = 6
	ConnectionsHeadroom  = 24
	MinConnections       = ConnectionsPerThread*DefaultThreads + ConnectionsHeadroom
)

// MinConnectionsFor is the smallest spec.maxConnections accepted with threads worker
// threads: ConnectionsPerThread per thread plus ConnectionsHeadroom, and at least
// MinConnections.
func MinConnectionsFor(threads int32) int64 {
	return max(MinConnections, ConnectionsPerThread*int64(threads)+ConnectionsHeadroom)
}

const ruleCPU = `a positive CPU quantity, like "100m" or "1"`

// Rule says, in the words of this package's errors, what the spec field at path (relative
// to the spec: "size", "resources.requests.cpu") accepts under these Settings: "an integer
// between 1 and 3 (policy.maxSize)". It is empty for fields whose type says it all. The
// composition function words a value of the wrong type with it, so that "size: three" and
// "size: 9" name the same limit.
func (s Settings) Rule(path string) string {
	between := func(lo, hi int64, limit string) string {
		r := fmt.Sprintf("an integer between %d and %d", lo, hi)
		if limit != "" {
			r += " (" + limit + ")"
		}
		return r
	}
	switch path {
	case "size":
		return between(1, s.MaxSize, "policy.maxSize")
	case "memoryLimitMB":
		return between(MinMemoryLimitMB, s.MaxMemoryLimitMB, "policy.maxMemoryLimitMB")
	case "maxConnections":
		return between(MinConnections, MaxConnections, "") + fmt.Sprintf(", and at least %d per thread plus %d", ConnectionsPerThread, ConnectionsHeadroom)
	case "threads":
		return between(1, MaxThreads, "")
	case "resources.requests.cpu", "resources.limits.cpu":
		return ruleCPU
	case "maxItemSizeMB":
		return between(1, MaxItemSizeMB, "") + ", and at most half of memoryLimitMB"
	case "externalStorage.sizeMB":
		if s.MaxExternalStorageMB == 0 {
			return "unset: the platform allows no external storage (policy.maxExternalStorageMB is 0)"
		}
		return between(MinExternalStorageMB, s.MaxExternalStorageMB, "policy.maxExternalStorageMB")
	}
	return ""
}

// Message joins field errors into the one line a user sees on a claim or an Instance: what
// was wrong, field by field with value and limit, and that nothing was changed because of it.
func Message(errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "invalid spec, nothing was changed: " + strings.Join(msgs, "; ")
}
