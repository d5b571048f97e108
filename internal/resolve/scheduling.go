package resolve

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
)

// NodeRolePrefix begins the label and taint keys that mark control-plane and dedicated nodes
// (node-role.kubernetes.io/control-plane): without the platform's policy.scheduling naming
// one, a claim may neither select nor tolerate them.
const NodeRolePrefix = "node-role.kubernetes.io/"

// scheduling resolves the node selector, tolerations and priority class of sc into m,
// checking each the way the API server would (so that a bad one is reported on the claim
// rather than failing the Deployment's apply), and the keys and the priority class against
// the platform's policy: a tenant's pods must not reach nodes kept for others.
func scheduling(p *field.Path, sc *cachev1alpha1.Scheduling, m *render.Memcached, s Settings) field.ErrorList {
	if sc == nil || (len(sc.NodeSelector) == 0 && len(sc.Tolerations) == 0 && sc.PriorityClassName == "") {
		return nil
	}
	var errs field.ErrorList
	keys := slices.Sorted(maps.Keys(sc.NodeSelector))
	for _, k := range keys {
		kp := p.Child("nodeSelector").Key(k)
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, field.Invalid(kp, k, "must be a label key: "+strings.Join(msgs, "; ")))
		} else if msgs := validation.IsValidLabelValue(sc.NodeSelector[k]); len(msgs) > 0 {
			errs = append(errs, field.Invalid(kp, sc.NodeSelector[k], "must be a label value: "+strings.Join(msgs, "; ")))
		} else if err := allowedKey(kp, k, s.AllowedNodeSelectorKeys, "policy.scheduling.allowedNodeSelectorKeys"); err != nil {
			errs = append(errs, err)
		}
	}
	for i, t := range sc.Tolerations {
		tp := p.Child("tolerations").Index(i)
		errs = append(errs, toleration(tp, t)...)
		// A key that is not one is already reported as such.
		if (t.Key == "" && t.Operator != corev1.TolerationOpExists) || (t.Key != "" && len(validation.IsQualifiedName(t.Key)) > 0) {
			continue
		}
		if err := allowedKey(tp.Child("key"), t.Key, s.AllowedTolerationKeys, "policy.scheduling.allowedTolerationKeys"); err != nil {
			errs = append(errs, err)
		} else if why := systemTaint(t.Key); why != "" && s.AllowedTolerationKeys == nil {
			errs = append(errs, field.Invalid(tp.Child("key"), t.Key, "must not be "+why+" unless policy.scheduling.allowedTolerationKeys names it"))
		}
	}
	if pc := sc.PriorityClassName; pc != "" {
		pp := p.Child("priorityClassName")
		switch {
		case len(validation.IsDNS1123Subdomain(pc)) > 0:
			errs = append(errs, field.Invalid(pp, pc, "must be a PriorityClass name: "+strings.Join(validation.IsDNS1123Subdomain(pc), "; ")))
		case len(s.AllowedPriorityClasses) > 0 && !slices.Contains(s.AllowedPriorityClasses, pc):
			errs = append(errs, field.Invalid(pp, pc, "must be one of "+strings.Join(s.AllowedPriorityClasses, ", ")+" (policy.allowedPriorityClasses)"))
		case len(s.AllowedPriorityClasses) == 0 && strings.HasPrefix(pc, "system-"):
			errs = append(errs, field.Invalid(pp, pc, "must not be a system- PriorityClass, which is for the cluster's own components, unless policy.allowedPriorityClasses names it"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	m.Scheduling = &render.Scheduling{PriorityClassName: sc.PriorityClassName}
	if len(sc.NodeSelector) > 0 {
		m.Scheduling.NodeSelector = make(map[string]string, len(sc.NodeSelector))
		for k, v := range sc.NodeSelector {
			m.Scheduling.NodeSelector[k] = v
		}
	}
	if len(sc.Tolerations) > 0 {
		m.Scheduling.Tolerations = make([]corev1.Toleration, len(sc.Tolerations))
		for i := range sc.Tolerations {
			sc.Tolerations[i].DeepCopyInto(&m.Scheduling.Tolerations[i])
		}
	}
	return nil
}

// allowedKey checks a node selector's or a toleration's key against the platform's list of
// allowed keys (policy names it): when the platform gave none, any key is allowed but the
// node-role.kubernetes.io/ ones, and a toleration without a key (operator Exists), which
// tolerates every taint, never is.
func allowedKey(p *field.Path, key string, allowed []string, policy string) *field.Error {
	switch {
	case allowed != nil && slices.Contains(allowed, key):
		return nil
	case len(allowed) > 0:
		return field.Invalid(p, key, "must be one of "+strings.Join(allowed, ", ")+" ("+policy+")")
	case allowed != nil:
		return field.Invalid(p, key, "must not be set: "+policy+" allows no key")
	case key == "":
		return field.Invalid(p, key, "must be set: a toleration without a key tolerates every taint, the control plane's and dedicated nodes' too ("+policy+" may name the keys claims may tolerate)")
	case strings.HasPrefix(key, NodeRolePrefix):
		return field.Invalid(p, key, "must not be a "+NodeRolePrefix+" key, which marks control-plane and dedicated nodes, unless "+policy+" names it")
	}
	return nil
}

// systemTaintPrefixes begin the taint keys Kubernetes and cloud providers set on nodes
// themselves: tolerating node.kubernetes.io/unschedulable puts pods on cordoned and draining
// nodes, node.kubernetes.io/unreachable keeps them bound to dead ones, and an uninitialized
// cloud node is not ready for anyone's pods. Node labels under these prefixes (the
// well-known node.kubernetes.io/instance-type) stay selectable.
var systemTaintPrefixes = []string{"node.kubernetes.io/", "node.cloudprovider.kubernetes.io/"}

// criticalAddonsOnly is the taint of system node pools (AKS, k3s servers), kept for the
// cluster's add-ons.
const criticalAddonsOnly = "CriticalAddonsOnly"

// systemTaint says what key is when it is a taint the cluster keeps for itself, "" otherwise.
func systemTaint(key string) string {
	if key == criticalAddonsOnly {
		return "CriticalAddonsOnly, the taint of system node pools,"
	}
	for _, p := range systemTaintPrefixes {
		if strings.HasPrefix(key, p) {
			return "a " + p + " taint, which Kubernetes sets on cordoned, unreachable or unready nodes,"
		}
	}
	return ""
}

// toleration checks t as the API server validates a pod's tolerations.
func toleration(p *field.Path, t corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	switch t.Operator {
	case "", corev1.TolerationOpEqual, corev1.TolerationOpExists:
	default:
		errs = append(errs, field.NotSupported(p.Child("operator"), string(t.Operator), []string{string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists)}))
	}
	if t.Key == "" && t.Operator != corev1.TolerationOpExists {
		errs = append(errs, field.Invalid(p.Child("key"), "", "must be set unless operator is Exists"))
	} else if t.Key != "" {
		if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, "must be a taint key: "+strings.Join(msgs, "; ")))
		}
	}
	if t.Operator == corev1.TolerationOpExists && t.Value != "" {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty when operator is Exists"))
	} else if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be a taint value: "+strings.Join(msgs, "; ")))
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, field.NotSupported(p.Child("effect"), string(t.Effect),
			[]string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}))
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		errs = append(errs, field.Invalid(p.Child("tolerationSeconds"), *t.TolerationSeconds, "must be unset unless effect is NoExecute"))
	}
	return errs
}
