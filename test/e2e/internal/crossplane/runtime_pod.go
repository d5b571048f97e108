package crossplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/node"
	"github.com/example/function-memcached/test/e2e/internal/proc"
)

// What Crossplane's Default runtime names and mounts (internal/controller/pkg/runtime in
// crossplane/crossplane): the container, its ports, where the TLS server Secret goes and the
// variable that says so, the labels of its pods, and the field manager of its applies.
const (
	RuntimeContainer  = "package-runtime"
	grpcPortName      = "grpc"
	grpcPort          = 9443
	metricsPortName   = "metrics"
	metricsPort       = 8080
	tlsServerVolume   = "tls-server-certs"
	TLSServerCertsDir = "/tls/server"
	tlsServerCertsEnv = "TLS_SERVER_CERTS_DIR"
	labelRevision     = "pkg.crossplane.io/revision"
	labelFunction     = "pkg.crossplane.io/function"
	fieldOwnerRuntime = "pkg.crossplane.io/runtime"
)

// PodRuntimeOptions configure a function run as a pod on the real node.
type PodRuntimeOptions struct {
	// Name is the Function's name; Package its package reference (by digest), which is also
	// the image the pod runs: the package embeds the function's runtime image.
	Name, Package string
	// ServerCertsDir holds the function's ca.crt, tls.crt and tls.key, for its TLS Secret.
	ServerCertsDir string
	// LogDir receives <name>-proxy.log.
	LogDir string
}

// A PodRuntime runs one function the way Crossplane's Default package runtime does — a
// Deployment of the package's own image in Crossplane's namespace, with the revision's TLS
// server Secret mounted and TLS_SERVER_CERTS_DIR naming it, a ServiceAccount and a headless
// Service — and acts as the runtime for its revisions: RuntimeHealthy follows the
// Deployment's Available condition, as in the Default runtime.
//
// The Deployment is what the Default runtime builds from a DeploymentRuntimeConfig that
// hardens it for the restricted Pod Security Standard without naming a user (runAsNonRoot,
// RuntimeDefault seccomp, no privilege escalation, no capabilities, a read-only root file
// system): the image's own entrypoint and user run. The namespace lets its pods onto the real
// node (node.OptIn).
//
// Crossplane runs on the host, where the Service's DNS name does not resolve, so the
// revision's endpoint is a node.ServiceProxy on 127.0.0.1 in front of the Service's ready
// endpoints: the function's certificate names 127.0.0.1, and each call goes to the pod.
type PodRuntime struct {
	opts  PodRuntimeOptions
	c     *kube.Client
	log   *os.File
	Proxy *node.ServiceProxy
	// Endpoint is the proxy's 127.0.0.1:<port>, what the revisions' status says.
	Endpoint string
}

// StartPodRuntime starts the proxy in front of the function's Service. Install then makes the
// Function, its Deployment and Service.
func StartPodRuntime(ctx context.Context, c *kube.Client, o PodRuntimeOptions) (*PodRuntime, error) {
	log, err := os.Create(filepath.Join(o.LogDir, o.Name+"-proxy.log"))
	if err != nil {
		return nil, errors.Wrap(err, "cannot create the proxy's log")
	}
	p, err := node.ProxyService(ctx, c, Namespace, o.Name, grpcPortName, log)
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	return &PodRuntime{opts: o, c: c, log: log, Proxy: p, Endpoint: p.Addr}, nil
}

// Install applies the Function and runs its revisions until it is Installed and Healthy: the
// pod started from the package's image and the Deployment is Available. Serve must run for
// Crossplane to keep finding the function.
func (rt *PodRuntime) Install(ctx context.Context) error {
	return installFunction(ctx, rt.c, rt.opts.Name, rt.opts.Package, rt.reconcile)
}

// Serve reconciles the function's revisions every second until ctx ends.
func (rt *PodRuntime) Serve(ctx context.Context) {
	serveRevisions(ctx, rt.reconcile)
}

// reconcile gives every revision its TLS server Secret and the active one its ServiceAccount,
// Service and Deployment, and sets the status a runtime owns.
func (rt *PodRuntime) reconcile(ctx context.Context) error {
	r, revs, err := revisions(ctx, rt.c, rt.opts.Name)
	if err != nil {
		return err
	}
	for _, rev := range revs {
		secret := revisionSecret(&rev, rt.opts.Name)
		if err := ensureTLSServerSecret(ctx, rt.c, secret, rt.opts.ServerCertsDir); err != nil {
			return err
		}
		if s, _, _ := unstructured.NestedString(rev.Object, "spec", "desiredState"); s != "Active" {
			continue
		}
		unhealthy, err := rt.run(ctx, &rev, secret)
		if err != nil {
			return err
		}
		ep, _, _ := unstructured.NestedString(rev.Object, "status", "endpoint")
		healthy, _, _, _ := kube.Condition(&rev, "RuntimeHealthy")
		if ep == rt.Endpoint && (healthy == "True") == (unhealthy == nil) {
			continue
		}
		if err := applyRuntimeStatus(ctx, r, rev.GetName(), rt.Endpoint, secret, unhealthy); err != nil {
			return err
		}
	}
	return nil
}

// run makes sure the revision's ServiceAccount, Service and Deployment exist, and returns
// why the Deployment is not Available (nil when it is).
func (rt *PodRuntime) run(ctx context.Context, rev *unstructured.Unstructured, secret string) (unhealthy error, err error) {
	d, err := rt.c.Typed.AppsV1().Deployments(Namespace).Get(ctx, rev.GetName(), metav1.GetOptions{})
	if kerrors.IsNotFound(err) {
		if err := rt.create(ctx, rev, secret); err != nil {
			return nil, err
		}
		return errors.New("the function's Deployment has no condition of type \"Available\" yet"), nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "cannot get the function's Deployment")
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			if c.Status == corev1.ConditionTrue {
				return nil, nil
			}
			return errors.Errorf("function package deployment is unavailable with message: %s", c.Message), nil
		}
	}
	return errors.New("the function's Deployment has no condition of type \"Available\" yet"), nil
}

// create applies the revision's ServiceAccount, Service and Deployment, each controlled by the
// revision (so they go with it), as the Default runtime's hooks do.
func (rt *PodRuntime) create(ctx context.Context, rev *unstructured.Unstructured, secret string) error {
	owner := []metav1.OwnerReference{{
		APIVersion: FunctionRevisionGVK.GroupVersion().String(), Kind: FunctionRevisionGVK.Kind,
		Name: rev.GetName(), UID: rev.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	selector := map[string]string{labelRevision: rev.GetName(), labelFunction: rt.opts.Name}
	objs := []any{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: rev.GetName(), Namespace: Namespace, OwnerReferences: owner},
		},
		&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: rt.opts.Name, Namespace: Namespace, OwnerReferences: owner},
			Spec: corev1.ServiceSpec{
				// Headless, so that a gRPC client balances over the endpoints itself.
				ClusterIP: corev1.ClusterIPNone,
				Selector:  selector,
				Ports: []corev1.ServicePort{{
					Name: grpcPortName, Protocol: corev1.ProtocolTCP, Port: grpcPort,
					TargetPort: intstr.FromString(grpcPortName), AppProtocol: ptr.To("tls"),
				}},
			},
		},
		FunctionDeployment(rev.GetName(), string(rev.GetUID()), rt.opts.Name, rt.opts.Package, secret, owner),
	}
	for _, o := range objs {
		u, err := kube.ToUnstructured(o)
		if err != nil {
			return err
		}
		r, err := rt.c.Resource(u.GroupVersionKind(), Namespace)
		if err != nil {
			return err
		}
		if _, err := r.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: fieldOwnerRuntime, Force: true}); err != nil {
			return errors.Wrapf(err, "cannot apply the function's %s", u.GetKind())
		}
	}
	return nil
}

// FunctionDeployment is the Deployment Crossplane's Default runtime makes for the active
// revision revision (uid revisionUID) of function, running image, from a DeploymentRuntimeConfig
// that sets the restricted standard's security contexts and no user.
func FunctionDeployment(revision, revisionUID, function, image, secret string, owner []metav1.OwnerReference) *appsv1.Deployment {
	labels := map[string]string{labelRevision: revision, labelFunction: function}
	fromLabel := func(l string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", l)}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: revision, Namespace: Namespace, OwnerReferences: owner},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: revision,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            RuntimeContainer,
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							Privileged:               ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						Ports: []corev1.ContainerPort{
							{Name: metricsPortName, ContainerPort: metricsPort},
							{Name: grpcPortName, ContainerPort: grpcPort},
						},
						Env: []corev1.EnvVar{
							{Name: "FUNCTION_NAME", ValueFrom: fromLabel(labelFunction)},
							{Name: "REVISION_NAME", ValueFrom: fromLabel(labelRevision)},
							{Name: "REVISION_UID", Value: revisionUID},
							{Name: tlsServerCertsEnv, Value: TLSServerCertsDir},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: tlsServerVolume, ReadOnly: true, MountPath: TLSServerCertsDir}},
					}},
					Volumes: []corev1.Volume{{
						Name: tlsServerVolume,
						VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: secret,
							Items: []corev1.KeyToPath{
								{Key: corev1.TLSCertKey, Path: corev1.TLSCertKey},
								{Key: corev1.TLSPrivateKeyKey, Path: corev1.TLSPrivateKeyKey},
								{Key: "ca.crt", Path: "ca.crt"},
							},
						}},
					}},
				},
			},
		},
	}
}

// Pod returns the function's pod: the newest one not being deleted.
func (rt *PodRuntime) Pod(ctx context.Context) (*corev1.Pod, error) {
	list, err := rt.c.Typed.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: labelFunction + "=" + rt.opts.Name})
	if err != nil {
		return nil, errors.Wrap(err, "cannot list the function's pods")
	}
	var pod *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && (pod == nil || p.CreationTimestamp.After(pod.CreationTimestamp.Time)) {
			pod = p
		}
	}
	if pod == nil {
		return nil, errors.Errorf("no pod of function %s", rt.opts.Name)
	}
	return pod, nil
}

// status returns the pod and its runtime container's status.
func (rt *PodRuntime) status(ctx context.Context) (*corev1.Pod, corev1.ContainerStatus, error) {
	pod, err := rt.Pod(ctx)
	if err != nil {
		return nil, corev1.ContainerStatus{}, err
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == RuntimeContainer {
			return pod, s, nil
		}
	}
	return pod, corev1.ContainerStatus{}, errors.Errorf("pod %s has no status for container %s yet", pod.Name, RuntimeContainer)
}

// Running reports whether the function's container runs and is ready.
func (rt *PodRuntime) Running() bool {
	_, s, err := rt.status(context.Background())
	return err == nil && s.State.Running != nil && s.Ready
}

// backOffTimeout bounds Kill and Start: the kubelet's first back-off is 10 s.
const backOffTimeout = time.Minute

// Kill crashes the function the way a process dies in a pod: SIGKILL to its process, from
// the host. The kubelet restarts a crashed container at once the first time, so Kill kills
// the new one as soon as it has a process too; the kubelet then holds the container in
// CrashLoopBackOff for its first back-off, ten seconds after the first restart. Kill returns
// once the kubelet reports the container down (not running, not ready): the function stays
// down for several more seconds and comes back on its own (Start waits for it).
func (rt *PodRuntime) Kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), backOffTimeout)
	defer cancel()
	pod, err := rt.Pod(ctx)
	if err != nil {
		return err
	}
	c, err := node.FindContainer(pod, RuntimeContainer)
	if err != nil {
		return err
	}
	podCgroup := filepath.Dir(filepath.Join("/sys/fs/cgroup/memory", c.Path))
	before := map[string]bool{}
	for _, e := range dirs(podCgroup) {
		before[e] = true
	}
	if err := killContainer(c); err != nil {
		return err
	}
	// The restarted container: a new cgroup beside the sandbox's and the killed one's, killed
	// the moment it holds a process, before it can serve.
	for restarted := false; !restarted; {
		select {
		case <-ctx.Done():
			return errors.New("the kubelet did not restart the killed function")
		case <-time.After(5 * time.Millisecond):
		}
		for _, e := range dirs(podCgroup) {
			if !before[e] && killContainer(node.Container{ID: e, Path: filepath.Join(filepath.Dir(c.Path), e)}) == nil {
				restarted = true
			}
		}
	}
	return kube.Wait(ctx, backOffTimeout, "the kubelet to report the function's container down", func(ctx context.Context) error {
		_, s, err := rt.status(ctx)
		if err != nil {
			return err
		}
		if s.State.Running != nil || s.Ready || s.RestartCount < 1 {
			return errors.Errorf("container state %+v, ready %v, restarts %d", s.State, s.Ready, s.RestartCount)
		}
		return nil
	})
}

func killContainer(c node.Container) error {
	pids, err := c.PIDs()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return errors.Wrapf(err, "cannot kill process %d of the function's container", pid)
		}
	}
	return nil
}

func dirs(dir string) []string {
	es, _ := os.ReadDir(dir)
	var out []string
	for _, e := range es {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Start waits until the kubelet has restarted the function and the proxy forwards to it.
func (rt *PodRuntime) Start(ctx context.Context) error {
	return kube.Wait(ctx, backOffTimeout, "the function's container running and ready again", func(ctx context.Context) error {
		pod, s, err := rt.status(ctx)
		if err != nil {
			return err
		}
		if s.State.Running == nil || !s.Ready {
			return errors.Errorf("container state %+v, ready %v", s.State, s.Ready)
		}
		want := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(grpcPort))
		for _, ep := range rt.Proxy.Endpoints() {
			if ep == want {
				return nil
			}
		}
		return errors.Errorf("the proxy forwards to %v, not yet to %s", rt.Proxy.Endpoints(), want)
	})
}

// CPUTime is the CPU time of the function's container (since its last restart).
func (rt *PodRuntime) CPUTime() (time.Duration, error) {
	c, err := rt.container()
	if err != nil {
		return 0, err
	}
	return c.CPUTime()
}

// PeakRSS is the most resident memory the function's process (in its container) has had.
func (rt *PodRuntime) PeakRSS() (int64, error) {
	c, err := rt.container()
	if err != nil {
		return 0, err
	}
	pids, err := c.PIDs()
	if err != nil {
		return 0, err
	}
	return proc.PeakRSSOf(pids[0])
}

// container is the function's container in its current pod, as the node runs it.
func (rt *PodRuntime) container() (node.Container, error) {
	pod, err := rt.Pod(context.Background())
	if err != nil {
		return node.Container{}, err
	}
	return node.FindContainer(pod, RuntimeContainer)
}

// MetricsURL is the function's Prometheus endpoint on its pod's address.
func (rt *PodRuntime) MetricsURL(ctx context.Context) (string, error) {
	pod, err := rt.Pod(ctx)
	if err != nil {
		return "", err
	}
	if pod.Status.PodIP == "" {
		return "", errors.Errorf("pod %s has no address yet", pod.Name)
	}
	return "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(metricsPort)) + "/metrics", nil
}

// RunFunctionCalls reads how many RunFunction calls the function answered since its container
// started, from its metrics.
func (rt *PodRuntime) RunFunctionCalls(ctx context.Context) (int64, error) {
	url, err := rt.MetricsURL(ctx)
	if err != nil {
		return 0, err
	}
	return runFunctionCalls(ctx, url)
}

// Stop closes the proxy. The pod goes with the node.
func (rt *PodRuntime) Stop() error {
	err := rt.Proxy.Close()
	_ = rt.log.Close()
	return err
}
