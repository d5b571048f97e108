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
		MaxConnections:   integer("maxConnections", spec.MaxConnections, DefaultMaxConnections, 1, MaxConnections),
		Threads:          integer("threads", spec.Threads, DefaultThreads, 1, MaxThreads),
		Image:            s.Image,
		HighAvailability: true,
		ExporterImage:    s.ExporterImage,
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
	res := root.Child("resources")
	m.CPURequest = cpu(res.Child("requests", "cpu"), req, DefaultCPURequest, &errs)
	m.CPULimit = cpu(res.Child("limits", "cpu"), lim, "", &errs)
	if m.CPURequest != nil && m.CPULimit != nil && m.CPULimit.Cmp(*m.CPURequest) < 0 {
		errs = append(errs, field.Invalid(res.Child("limits", "cpu"), m.CPULimit.String(),
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
	errs = append(errs, security(root, spec, &m, s)...)
	if spec.Scheduling != nil {
		errs = append(errs, scheduling(root.Child("scheduling"), spec.Scheduling, &m, s)...)
	}
	if len(errs) > 0 {
		return render.Memcached{}, errs
	}
	return m, nil
}

// cpu parses a positive CPU quantity at p, returning def (nil when def is empty) when c
// names none.
func cpu(p *field.Path, c *cachev1alpha1.CPU, def string, errs *field.ErrorList) *resource.Quantity {
	s := def
	if c != nil && c.CPU != "" {
		s = c.CPU
	}
	if s == "" {
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		*errs = append(*errs, field.Invalid(p, s, "must be "+ruleCPU))
		return nil
	}
	return &q
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
		return between(1, MaxConnections, "")
	case "threads":
		return between(1, MaxThreads, "")
	case "resources.requests.cpu", "resources.limits.cpu":
		return ruleCPU
	case "maxItemSizeMB":
		return between(1, MaxItemSizeMB, "") + ", and at most half of memoryLimitMB"
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
