package resolve

import (
	"fmt"
	"math"
	"strings"

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
	d := decoder{}
	m := render.Memcached{
		Name:             name,
		Namespace:        namespace,
		Size:             d.integer(spec, "spec", "size", 1, 1, s.MaxSize, "policy.maxSize"),
		MemoryLimitMB:    d.integer(spec, "spec", "memoryLimitMB", s.MemoryLimitMB, MinMemoryLimitMB, s.MaxMemoryLimitMB, "policy.maxMemoryLimitMB"),
		MaxConnections:   d.integer(spec, "spec", "maxConnections", DefaultMaxConnections, 1, MaxConnections, ""),
		Threads:          d.integer(spec, "spec", "threads", DefaultThreads, 1, MaxThreads, ""),
		Image:            d.str(spec, "spec", "image", s.Image),
		HighAvailability: d.boolean(d.object(spec, "spec", "highAvailability"), "spec.highAvailability", "enabled", true),
		Metrics:          d.boolean(d.object(spec, "spec", "metrics"), "spec.metrics", "enabled", false),
		ExporterImage:    s.ExporterImage,
	}
	if m.Image != s.Image {
		// The default was checked with the Input; a user's image is checked here.
		d.errs = append(d.errs, s.checkImage(field.NewPath("spec", "image"), m.Image)...)
	}

	res := d.object(spec, "spec", "resources")
	m.CPURequest = d.cpu(d.object(res, "spec.resources", "requests"), "spec.resources.requests", DefaultCPURequest)
	m.CPULimit = d.cpu(d.object(res, "spec.resources", "limits"), "spec.resources.limits", "")
	if m.CPURequest != nil && m.CPULimit != nil && m.CPULimit.Cmp(*m.CPURequest) < 0 {
		d.errs = append(d.errs, field.Invalid(field.NewPath("spec", "resources", "limits", "cpu"), m.CPULimit.String(),
			"must be at least resources.requests.cpu ("+m.CPURequest.String()+")"))
	}
	if len(d.errs) > 0 {
		return render.Memcached{}, d.errs
	}
	return m, nil
}

// decoder reads typed values out of unstructured data, collecting field errors. Parents are
// dotted paths ("spec.resources"), turned into field paths only when there is an error to
// report: the function resolves a spec on every reconcile, and nearly every spec is valid.
type decoder struct {
	errs field.ErrorList
}

// invalid records that the value at parent.key is invalid.
func (d *decoder) invalid(parent, key string, v any, detail string) {
	parts := strings.Split(parent, ".")
	d.errs = append(d.errs, field.Invalid(field.NewPath(parts[0], append(parts[1:], key)...), v, detail))
}

// integer reads an integer in [lo, hi], returning def when absent. limitName, when set,
// names the policy field behind hi, so that users know whom to ask for more.
func (d *decoder) integer(obj map[string]any, parent, key string, def, lo, hi int64, limitName string) int32 {
	v, ok := obj[key]
	if !ok || v == nil {
		return int32(def)
	}
	n, isInt := asInt(v)
	if !isInt || n < lo || n > hi {
		limit := fmt.Sprintf("must be an integer between %d and %d", lo, hi)
		if limitName != "" {
			limit += " (" + limitName + ")"
		}
		d.invalid(parent, key, v, limit)
		return int32(def)
	}
	return int32(n)
}

// str reads a non-empty string, returning def when absent or empty.
func (d *decoder) str(obj map[string]any, parent, key, def string) string {
	v, ok := obj[key]
	if !ok || v == nil {
		return def
	}
	s, isStr := v.(string)
	if !isStr {
		d.invalid(parent, key, v, "must be a string")
		return def
	}
	if s == "" {
		return def
	}
	return s
}

// boolean reads true or false, returning def when absent.
func (d *decoder) boolean(obj map[string]any, parent, key string, def bool) bool {
	v, ok := obj[key]
	if !ok || v == nil {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		d.invalid(parent, key, v, "must be true or false")
		return def
	}
	return b
}

// object reads a nested object; absent or wrong-typed reads as empty (the latter reported).
func (d *decoder) object(obj map[string]any, parent, key string) map[string]any {
	v, ok := obj[key]
	if !ok || v == nil {
		return nil
	}
	o, isObj := v.(map[string]any)
	if !isObj {
		d.invalid(parent, key, v, "must be an object")
		return nil
	}
	return o
}

// cpu reads a positive CPU quantity, returning def (nil when def is empty) when absent.
func (d *decoder) cpu(obj map[string]any, parent, def string) *resource.Quantity {
	s := d.str(obj, parent, "cpu", def)
	if s == "" {
		return nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		d.invalid(parent, "cpu", s, `must be a positive CPU quantity, like "100m" or "1"`)
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

// Message joins field errors into the one line a user sees on a claim or an Instance: what
// was wrong, field by field with value and limit, and that nothing was changed because of it.
func Message(errs field.ErrorList) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "invalid spec, nothing was changed: " + strings.Join(msgs, "; ")
}
