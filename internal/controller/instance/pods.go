package instance

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/clients/kubeconfig"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/render"
)

// MaxPodsRead bounds the pods one explanation lists: a Memcached runs its size plus a
// rollout's surge, and readiness names at most readiness.MaxPodsTold of them, so a hundred
// is room to spare while keeping the answer (a few KiB a pod) far below
// kubeconfig.MaxAnswer, whatever else carries the Memcached's labels there.
const MaxPodsRead = 100

// explained is the Available verdict (see judge) on the Memcached m whose Deployment is d
// (nil when absent), with why replicas are not available from its pods, as the
// composition function words it for a claim here. The pods are read, once, only while
// everything m renders is applied and still not every replica serves: a healthy Instance
// costs no read, and neither does a change on its way. A list that fails (the identity may
// not list pods, the cluster went away) explains nothing and fails nothing: the verdict
// stands with its replica counts, the failure is logged at debug level, and no event is
// recorded for it.
func (e *External) explained(ctx context.Context, cr *v1alpha1.Instance, d *appsv1.Deployment, m render.Memcached) readiness.Condition {
	rendered := render.Deployment(m)
	w := readiness.Wanted(rendered)
	c := e.judge(cr, d, w)
	if c.Available || !readiness.Applied(d, w) {
		return c
	}
	pods, err := e.pods(ctx, rendered)
	if err != nil {
		logging.NewLogrLogger(log.FromContext(ctx)).Debug("Cannot read pods to explain why replicas are not available",
			"instance", instanceKey(cr).String(), "namespace", m.Namespace, "error", kubeconfig.Trim(err).Error())
		return c
	}
	c.Message = readiness.Explain(c.Message, pods)
	return c
}

// pods lists, directly and at most MaxPodsRead, the pods the rendered Deployment d runs in
// the target namespace: those with its selector labels (render.SelectorLabels) that a
// ReplicaSet of that Deployment controls. A pod someone else made there with the same
// labels tells nothing about the Memcached, and may not write into the Instance's status.
func (e *External) pods(ctx context.Context, d *appsv1.Deployment) ([]corev1.Pod, error) {
	l := &corev1.PodList{}
	if err := e.Target.Client().List(ctx, l, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels), client.Limit(MaxPodsRead)); err != nil {
		return nil, err
	}
	pods := make([]corev1.Pod, 0, len(l.Items))
	for _, p := range l.Items {
		if runBy(p, d.Name) {
			pods = append(pods, p)
		}
	}
	return pods, nil
}

// runBy reports whether pod p is one of Deployment deployment's: its controller is the
// ReplicaSet the Deployment made for p's pod template, named after both.
func runBy(p corev1.Pod, deployment string) bool {
	ref := metav1.GetControllerOf(&p)
	return ref != nil && ref.APIVersion == appsv1.SchemeGroupVersion.String() && ref.Kind == "ReplicaSet" &&
		ref.Name == deployment+"-"+p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
}
