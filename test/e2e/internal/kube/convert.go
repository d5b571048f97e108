package kube

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ToUnstructured converts a typed object (with its TypeMeta set) for Apply.
func ToUnstructured(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, errors.Wrap(err, "cannot convert to unstructured")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// FromUnstructured converts u into the typed object out points to.
func FromUnstructured(u *unstructured.Unstructured, out any) error {
	return errors.Wrapf(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out), "cannot convert %s %q", u.GetKind(), u.GetName())
}

// Condition returns the status, reason and message of the condition of type typ in u's
// status.conditions, and whether it was found.
func Condition(u *unstructured.Unstructured, typ string) (status, reason, message string, ok bool) {
	m := condition(u, typ)
	s, _ := m["status"].(string)
	r, _ := m["reason"].(string)
	msg, _ := m["message"].(string)
	return s, r, msg, m != nil
}

// ConditionSince returns the lastTransitionTime of the condition of type typ in u's
// status.conditions: zero when it has none or it cannot be read.
func ConditionSince(u *unstructured.Unstructured, typ string) time.Time {
	s, _ := condition(u, typ)["lastTransitionTime"].(string)
	t, _ := time.Parse(time.RFC3339, s)
	return t
}

// condition is the condition of type typ in u's status.conditions (nil when it has none).
func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func unmarshalJSON(b []byte, out any) error {
	return json.Unmarshal(b, out)
}
