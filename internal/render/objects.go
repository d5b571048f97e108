package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ConnectionSecretSuffix is appended to the base name for the Secret composed for namespaced
// XRs, which (unlike claims) have no connection secret of their own.
const ConnectionSecretSuffix = "-connection"

// ConnectionSecretType is the type Crossplane gives connection secrets.
const ConnectionSecretType corev1.SecretType = "connection.crossplane.io/v1alpha1"

// How a replica leaves and joins, chosen from the production-shaped lane's rollout
// (docs/operations.md#rollouts): a replica being replaced leaves its Service's endpoints at once,
// but clients learn that from DNS, which caches a headless Service's records for 5 seconds
// (CoreDNS's kubernetes plugin default) and which a sharding client re-reads every second or so.
const (
	// DrainSeconds is how long memcached keeps serving after its pod is marked for deletion:
	// a preStop sleep (Kubernetes' own action, since the images have no shell) that outlasts
	// the DNS TTL and a client's refresh twice over.
	DrainSeconds = 10
	// TerminationGracePeriodSeconds leaves memcached 20 seconds after the drain to close its
	// connections when it gets SIGTERM; it exits at once, so this is a bound, not a wait.
	TerminationGracePeriodSeconds = 30
	// MinReadySeconds counts a new replica available only once it has been Ready this long,
	// so that a rollout takes the next old replica away only after clients can see the new
	// one in DNS.
	MinReadySeconds = 5
)

// How the kubelet asks a replica whether it serves. The kubelet runs a readiness probe the
// moment a container starts, which can be before memcached or the exporter listens: that probe
// fails, records an Unhealthy warning on the pod and, at a 10 s period, keeps a healthy replica
// out of its Service for 10 s. The first probe waits a second instead (memcached listens within
// milliseconds, on a node short of CPU sometimes later: then one probe fails and costs one
// period) and a 2 s period bounds the wait for a replica's readiness and, with three
// failures, for a wedged one to leave its Service.
const (
	// ReadinessDelaySeconds is how long after a container starts its first readiness probe runs.
	ReadinessDelaySeconds = 1
	// ReadinessPeriodSeconds is how often a readiness probe runs.
	ReadinessPeriodSeconds = 2
)

// Deployment runs Size memcached replicas under the Kubernetes "restricted" Pod Security
// Standard: non-root with a fixed UID, no privilege escalation, no capabilities, the runtime's
// seccomp profile and a read-only root filesystem. memcached keeps everything in memory, so
// it needs no writable path but, with external storage, its own volume (extstoreVolume); the
// credentials and certificate it reads are Secrets mounted read-only, readable by its group
// only.
func Deployment(m Memcached) *appsv1.Deployment {
	selector := SelectorLabels(m)
	containers := []corev1.Container{memcachedContainer(m)}
	if m.Metrics {
		containers = append(containers, exporterContainer(m))
		if NeedsAuthProxy(m) {
			containers = append(containers, authProxyContainer(m))
		}
	}
	pod := corev1.PodSpec{
		Containers:                    containers,
		TerminationGracePeriodSeconds: ptr.To[int64](TerminationGracePeriodSeconds),
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](UID),
			RunAsGroup:     ptr.To[int64](UID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Volumes: volumes(m),
	}
	if len(pod.Volumes) > 0 {
		// Secret files are owned by root and this group, mode 0440: memcached's group reads
		// them, no one else does, and no one writes them. A generic ephemeral volume for
		// external storage is made this group's, writable by it, so memcached can write there.
		pod.SecurityContext.FSGroup = ptr.To[int64](UID)
	}
	if m.HighAvailability {
		pod.Affinity = antiAffinity(selector)
		pod.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: selector},
		}}
	}
	if s := m.Scheduling; s != nil {
		pod.NodeSelector = s.NodeSelector
		pod.Tolerations = s.Tolerations
		pod.PriorityClassName = s.PriorityClassName
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(m, m.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas:             ptr.To(m.Size),
			MinReadySeconds:      MinReadySeconds,
			RevisionHistoryLimit: ptr.To[int32](3),
			Selector:             &metav1.LabelSelector{MatchLabels: selector},
			// Surge instead of taking a replica away: each replica holds a share of the
			// keys, so capacity should not dip during a rollout.
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					MaxSurge:       ptr.To(intstr.FromInt32(1)),
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(m), Annotations: podAnnotations(m)},
				Spec:       pod,
			},
		},
	}
	d.Annotations = map[string]string{AnnotationSpec: specHash(d.Spec)}
	return d
}

// AnnotationSpec stamps a rendered Deployment with a digest of its spec. A Deployment that
// runs, fully available, with another stamp has not received the latest spec yet (the apply
// is still to come), which readiness reports as a rollout rather than as available with the
// old settings. It is metadata, so changing it rolls no pod.
const AnnotationSpec = "cache.example.com/spec"

// specHash is a short digest of a Deployment spec. encoding/json writes a typed spec
// deterministically (fields in order, map keys sorted).
func specHash(s appsv1.DeploymentSpec) string {
	b, _ := json.Marshal(s) // A typed spec always encodes.
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Service is headless: memcached clients shard keys themselves, so the name must resolve to
// every replica rather than load-balance across them through one virtual IP.
func Service(m Memcached) *corev1.Service {
	ports := []corev1.ServicePort{{
		Name: PortName, Port: Port, TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP,
	}}
	if m.Metrics {
		ports = append(ports, corev1.ServicePort{
			Name: MetricsPortName, Port: MetricsPort, TargetPort: intstr.FromString(MetricsPortName), Protocol: corev1.ProtocolTCP,
		})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(m, m.Name),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  SelectorLabels(m),
			Ports:     ports,
		},
	}
}

// NeedsPodDisruptionBudget reports whether m gets a PodDisruptionBudget: only with high
// availability on and more than one replica, since a budget over a single replica would
// block every node drain.
func NeedsPodDisruptionBudget(m Memcached) bool {
	return m.HighAvailability && m.Size > 1
}

// PodDisruptionBudget lets voluntary disruptions (node drains, upgrades) take one replica at
// a time, so at most one shard of the cache is cold at once.
func PodDisruptionBudget(m Memcached) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: objectMeta(m, m.Name),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: SelectorLabels(m)},
		},
	}
}

// ConnectionSecret holds the connection details for namespaced XRs, which Crossplane v2 gives
// no connection secret: applications mount it like a claim's.
func ConnectionSecret(m Memcached) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: objectMeta(m, m.Name+ConnectionSecretSuffix),
		Type:       ConnectionSecretType,
		Data:       ConnectionDetails(m),
	}
}

func objectMeta(m Memcached, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: m.Namespace, Labels: Labels(m)}
}

func memcachedContainer(m Memcached) corev1.Container {
	args := []string{
		"--memory-limit=" + strconv.Itoa(int(m.MemoryLimitMB)),
		"--conn-limit=" + strconv.Itoa(int(m.MaxConnections)),
		"--threads=" + strconv.Itoa(int(m.Threads)),
		"--port=" + strconv.Itoa(Port),
	}
	args = append(args, memcachedArgs(m)...)
	args = append(args, extstoreArgs(m)...)
	mem := resource.MustParse(strconv.FormatInt(MemoryMiB(m), 10) + "Mi")
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: mem},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
	}
	extstoreResources(m, &res)
	if m.CPURequest != nil {
		res.Requests[corev1.ResourceCPU] = *m.CPURequest
	}
	if m.CPULimit != nil {
		res.Limits[corev1.ResourceCPU] = *m.CPULimit
	}
	probe := func(delay, period int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortName)}},
			InitialDelaySeconds: delay,
			PeriodSeconds:       period,
			TimeoutSeconds:      1,
			FailureThreshold:    3,
		}
	}
	c := corev1.Container{
		Name:           ContainerName,
		Image:          m.Image,
		Command:        []string{"memcached"},
		Args:           args,
		Env:            memcachedEnv(m),
		Ports:          []corev1.ContainerPort{{Name: PortName, ContainerPort: Port, Protocol: corev1.ProtocolTCP}},
		VolumeMounts:   volumeMounts(m),
		Resources:      res,
		ReadinessProbe: probe(ReadinessDelaySeconds, ReadinessPeriodSeconds),
		LivenessProbe:  probe(10, 10),
		// Keep serving while clients drop this replica from their server lists.
		Lifecycle:       &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: DrainSeconds}}},
		SecurityContext: containerSecurityContext(),
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
	if m.ExternalStorage != nil {
		// memcached says why it cannot open its extstore file on stderr only, and exits: the
		// end of its log becomes the termination message, which the Available condition quotes.
		// Only with external storage, so that no other Memcached's pod template changes.
		c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	}
	return c
}

func exporterContainer(m Memcached) corev1.Container {
	mem := resource.MustParse("32Mi")
	return corev1.Container{
		Name:  ExporterContainerName,
		Image: m.ExporterImage,
		Args:  exporterArgs(m),
		Ports: []corev1.ContainerPort{{Name: MetricsPortName, ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP}},
		// With client certificates, the exporter presents the client's (auth) and verifies
		// memcached's with the pair's CA (tls).
		VolumeMounts: exporterVolumeMounts(m),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: mem},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(MetricsPortName)}},
			InitialDelaySeconds: ReadinessDelaySeconds,
			PeriodSeconds:       ReadinessPeriodSeconds,
		},
		SecurityContext: containerSecurityContext(),
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// antiAffinity prefers, but does not require, one replica per node: a required rule would
// leave replicas Pending on small clusters, which is worse than two shards sharing a node.
func antiAffinity(selector map[string]string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
			},
		}},
	}}
}

// Object is what every renderer returns: a typed Kubernetes object.
type Object interface {
	runtime.Object
	metav1.Object
}

// Objects are the objects that run m, in apply order: the auth Secret and the TLS pair's copy
// the pods mount (with auth and TLS on), the Deployment, the Service and, when m needs them,
// the PodDisruptionBudget, the NetworkPolicy, the ServiceMonitor and the PrometheusRule. The
// function composes them; the provider's list of managed kinds applies the same set but the
// ServiceMonitor and PrometheusRule, which belong to the Prometheus of the cluster it runs in
// (resolve.Remote drops them), and a test there fails when the two differ.
func Objects(m Memcached) []Object {
	var objs []Object
	if m.Auth != nil {
		objs = append(objs, AuthSecret(m))
	}
	if m.TLS != nil {
		objs = append(objs, TLSSecret(m))
	}
	objs = append(objs, Deployment(m), Service(m))
	if NeedsPodDisruptionBudget(m) {
		objs = append(objs, PodDisruptionBudget(m))
	}
	if m.NetworkPolicy != nil {
		objs = append(objs, NetworkPolicy(m))
	}
	if NeedsServiceMonitor(m) {
		objs = append(objs, ServiceMonitor(m))
	}
	if NeedsPrometheusRule(m) {
		objs = append(objs, PrometheusRule(m))
	}
	return objs
}

// ToApply is what to apply for a rendered object: everything the renderer set and nothing
// else, without the empty status that typed objects serialize, which whoever applies it must
// not claim to own. The function composes it, and the provider server-side applies it.
func ToApply(o Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot convert %s %q", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	delete(m, "status")
	return &unstructured.Unstructured{Object: m}, nil
}
