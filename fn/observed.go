package fn

import (
	"math"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/render"
)

// The function reads observed state straight from the request's protobuf Structs: it needs a
// handful of fields, and converting whole objects (an XR with managed fields, a Deployment
// with its pod template) to maps or typed objects on every reconcile is most of what a
// generic function spends its time on.

// get walks nested Structs along path; nil when any step is missing or not an object.
func get(s *structpb.Struct, path ...string) *structpb.Value {
	var v *structpb.Value
	for i, p := range path {
		v = s.GetFields()[p]
		if i < len(path)-1 {
			s = v.GetStructValue()
		}
	}
	return v
}

// str returns the string at path, or "".
func str(s *structpb.Struct, path ...string) string {
	return get(s, path...).GetStringValue()
}

// condition returns the status, reason and message of the condition of type typ in
// status.conditions ("" for each when it has none).
func condition(s *structpb.Struct, typ string) (status, reason, message string) {
	for _, c := range get(s, "status", "conditions").GetListValue().GetValues() {
		f := c.GetStructValue().GetFields()
		if f["type"].GetStringValue() == typ {
			return f["status"].GetStringValue(), f["reason"].GetStringValue(), f["message"].GetStringValue()
		}
	}
	return "", "", ""
}

// readDeployment reads the fields readiness judges from an observed Deployment. A field of
// the wrong type means the observed object cannot be trusted, which is an error.
func readDeployment(s *structpb.Struct) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	var err error
	integer := func(path ...string) int64 {
		v := get(s, path...)
		if v == nil || err != nil {
			return 0
		}
		n, ok := v.GetKind().(*structpb.Value_NumberValue)
		if !ok || n.NumberValue != math.Trunc(n.NumberValue) || math.Abs(n.NumberValue) > math.MaxInt32 {
			err = errors.Errorf("%s: want an integer, got %v", strings.Join(path, "."), v.AsInterface())
			return 0
		}
		return int64(n.NumberValue)
	}
	d.Name = str(s, "metadata", "name")
	d.Generation = integer("metadata", "generation")
	if spec := str(s, "metadata", "annotations", render.AnnotationSpec); spec != "" {
		d.Annotations = map[string]string{render.AnnotationSpec: spec}
	}
	if get(s, "spec", "replicas") != nil {
		r := int32(integer("spec", "replicas"))
		d.Spec.Replicas = &r
	}
	d.Status.ObservedGeneration = integer("status", "observedGeneration")
	d.Status.Replicas = int32(integer("status", "replicas"))
	d.Status.UpdatedReplicas = int32(integer("status", "updatedReplicas"))
	d.Status.AvailableReplicas = int32(integer("status", "availableReplicas"))
	conditions := get(s, "status", "conditions").GetListValue().GetValues()
	if len(conditions) > 0 {
		d.Status.Conditions = make([]appsv1.DeploymentCondition, 0, len(conditions))
	}
	for _, c := range conditions {
		f := c.GetStructValue().GetFields()
		d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{
			Type:    appsv1.DeploymentConditionType(f["type"].GetStringValue()),
			Status:  corev1.ConditionStatus(f["status"].GetStringValue()),
			Reason:  f["reason"].GetStringValue(),
			Message: f["message"].GetStringValue(),
		})
	}
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read the observed Deployment %q", d.Name)
	}
	return d, nil
}
