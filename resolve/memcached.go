package resolve

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/example/function-memcached/render"
)

// Memcached resolves a Memcached spec (the XR's or claim's spec, as unstructured data) into
// what render needs. It reports every problem at once, each naming the field, the value and
// the limit, in the Kubernetes field-error format users know from kubectl, for example
//
//	spec.size: Invalid value: 9: must be between 1 and 3 (policy.maxSize)
//
// It reads the unstructured data directly rather than through JSON, so that a wrong type or
// an out-of-range number is reported with the value the user wrote.
func Memcached(spec map[string]any, name, namespace string, s Settings) (render.Memcached, field.ErrorList) {
	p := field.NewPath("spec")
	d := decoder{}
	m := render.Memcached{
		Name:             name,
		Namespace:        namespace,
		Size:             d.integer(spec, p, "size", 1, 1, s.MaxSize, "policy.maxSize"),
		MemoryLimitMB:    d.integer(spec, p, "memoryLimitMB", s.MemoryLimitMB, MinMemoryLimitMB, s.MaxMemoryLimitMB, "policy.maxMemoryLimitMB"),
		MaxConnections:   d.integer(spec, p, "maxConnections", DefaultMaxConnections, 1, MaxConnections, ""),
		Threads:          d.integer(spec, p, "threads", DefaultThreads, 1, MaxThreads, ""),
		Image:            d.str(spec, p, "image", s.Image),
		HighAvailability: d.boolean(d.object(spec, p, "highAvailability"), p.Child("highAvailability"), "enabled", true),
		Metrics:          d.boolean(d.object(spec, p, "metrics"), p.Child("metrics"), "enabled", false),
		ExporterImage:    s.ExporterImage,
	}
	if m.Image != s.Image {
		// The default was checked with the Input; a user's image is checked here.
		d.errs = append(d.errs, s.checkImage(p.Child("image"), m.Image)...)
	}

	rp := p.Child("resources")
	res := d.object(spec, p, "resources")
	m.CPURequest = d.cpu(d.object(res, rp, "requests"), rp.Child("requests"), DefaultCPURequest)
	m.CPULimit = d.cpu(d.object(res, rp, "limits"), rp.Child("limits"), "")
	if m.CPURequest != nil && m.CPULimit != nil && m.CPULimit.Cmp(*m.CPURequest) < 0 {
		d.errs = append(d.errs, field.Invalid(rp.Child("limits", "cpu"), m.CPULimit.String(),
			"must be at least resources.requests.cpu ("+m.CPURequest.String()+")"))
	}
	if len(d.errs) > 0 {
		return render.Memcached{}, d.errs
	}
	return m, nil
}

// decoder reads typed values out of unstructured data, collecting field errors.
type decoder struct {
	errs field.ErrorList
}

// integer reads an integer in [lo, hi], returning def when absent. limitName, when set,
// names the policy field behind hi, so that users know whom to ask for more.
func (d *decoder) integer(obj map[string]any, parent *field.Path, key string, def, lo, hi int64, limitName string) int32 {
	p := parent.Child(key)
	v, ok := obj[key]
	if !ok || v == nil {
		return int32(def)
	}
	n, isInt := asInt(v)
	limit := fmt.Sprintf("must be an integer between %d and %d", lo, hi)
	if limitName != "" {
		limit += " (" + limitName + ")"
	}
	if !isInt || n < lo || n > hi {
		d.errs = append(d.errs, field.Invalid(p, v, limit))
		return int32(def)
	}
	return int32(n)
}

// str reads a non-empty string, returning def when absent or empty.
func (d *decoder) str(obj map[string]any, parent *field.Path, key, def string) string {
	p := parent.Child(key)
	v, ok := obj[key]
	if !ok || v == nil {
		return def
	}
	s, isStr := v.(string)
	if !isStr {
		d.errs = append(d.errs, field.Invalid(p, v, "must be a string"))
		return def
	}
	if s == "" {
		return def
	}
	return s
}

// boolean reads true or false, returning def when absent.
func (d *decoder) boolean(obj map[string]any, parent *field.Path, key string, def bool) bool {
	p := parent.Child(key)
	v, ok := obj[key]
	if !ok || v == nil {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		d.errs = append(d.errs, field.Invalid(p, v, "must be true or false"))
		return def
	}
	return b
}

// object reads a nested object; absent or wrong-typed reads as empty (the latter reported).
func (d *decoder) object(obj map[string]any, parent *field.Path, key string) map[string]any {
	p := parent.Child(key)
	v, ok := obj[key]
	if !ok || v == nil {
		return nil
	}
	o, isObj := v.(map[string]any)
	if !isObj {
		d.errs = append(d.errs, field.Invalid(p, v, "must be an object"))
		return nil
	}
	return o
}

// cpu reads a positive CPU quantity, returning def (nil when def is empty) when absent.
func (d *decoder) cpu(obj map[string]any, parent *field.Path, def string) *resource.Quantity {
	p := parent.Child("cpu")
	s := d.str(obj, parent, "cpu", def)
	if s == "" {
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		d.errs = append(d.errs, field.Invalid(p, s, `must be a positive CPU quantity, like "100m" or "1"`))
		return nil
	}
	return &q
}

// asInt accepts the integer representations unstructured data uses: float64 from JSON and
// protobuf Structs, int64 and int from Go code. Fractions and non-numbers are not integers.
func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n != math.Trunc(n) || math.IsInf(n, 0) || n < math.MinInt64 || n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	default:
		return 0, false
	}
}
