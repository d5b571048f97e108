package fn

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/render"
)

// RequirementPods names the function's request for a Memcached's pods, which Crossplane
// answers in the next call's required resources.
const RequirementPods = "memcached-pods"

// explain appends to message why replicas are not available, from the Memcached's own pods.
// It asks Crossplane for the pods (by the Memcached's selector labels, in its namespace) and
// reads those Crossplane sent (see require). The function asks only while everything is
// applied and still not every replica serves, so a healthy Memcached costs nothing extra,
// and a Crossplane that may not read pods never holds back a change the function has yet to
// apply.
func explain(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, m render.Memcached, message string) string {
	items, _ := require(rsp, req, RequirementPods, &fnv1.ResourceSelector{
		ApiVersion: "v1",
		Kind:       "Pod",
		Match:      &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: render.SelectorLabels(m)}},
		Namespace:  &m.Namespace,
	})
	pods := make([]corev1.Pod, 0, len(items))
	for _, r := range items {
		var p corev1.Pod
		// A pod that cannot be read (it never happens with a real API server) explains
		// nothing; it is no reason to fail.
		if runtime.DefaultUnstructuredConverter.FromUnstructured(r.AsMap(), &p) == nil {
			pods = append(pods, p)
		}
	}
	return readiness.Explain(message, pods)
}
