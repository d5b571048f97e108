package render

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Where the pods mount what they read, and the keys of the auth Secret.
const (
	// AuthSecretSuffix is appended to the base name for the Secret holding the credentials.
	AuthSecretSuffix = "-auth"
	// AuthDir is where the auth Secret is mounted, read-only, in memcached and the auth proxy.
	AuthDir = "/etc/memcached/auth"
	// TLSDir is where the TLS Secret's copy (TLSSecret) is mounted, read-only, in memcached.
	TLSDir = "/etc/memcached/tls"
	// TLSSecretSuffix is appended to the base name for the function's copy of the tenant's
	// TLS Secret, which the pods mount.
	TLSSecretSuffix = "-tls-active"
	// AnnotationTLSSource, on the copy, names the tenant's Secret its pair came from.
	AnnotationTLSSource = "cache.example.com/tls-source"
	// AuthFileKey is the auth Secret's key holding memcached's --auth-file: "username:password".
	AuthFileKey = "auth-file"
	// AuthSaltKey is the auth Secret's key holding the salt of the pod template's digest of
	// the credentials (see CredentialsDigest).
	AuthSaltKey = "credentials-salt"

	// AnnotationCredentials and AnnotationCertificate, on the pod template, carry digests of
	// the credentials and of the certificate: memcached reads both only when it starts, so a
	// new password or a renewed certificate must restart the replicas, and changing the pod
	// template is what rolls them. AnnotationCertificate is on the TLS pair's copy too
	// (TLSSecret): the digest of the pair the copy holds.
	AnnotationCredentials = "cache.example.com/credentials"

	// AnnotationRotation, on the auth Secret, is the spec.auth.rotation its credentials were
	// generated for: a new rotation replaces them.
	AnnotationRotation    = "cache.example.com/auth-rotation"
	AnnotationCertificate = "cache.example.com/certificate"

	authVolume = "auth"
	tlsVolume  = "tls"
)

// AuthSecretName is the name of the Secret holding m's credentials.
func AuthSecretName(m Memcached) string {
	return m.Name + AuthSecretSuffix
}

// TLSSecretName is the name of the Secret holding the copy of m's TLS pair that the pods
// mount.
func TLSSecretName(m Memcached) string {
	return m.Name + TLSSecretSuffix
}

// TLSSecret is the copy of the last TLS pair accepted from the tenant's Secret, which the pods
// mount instead of the tenant's: while the tenant's Secret holds a pair no client could use
// (a bad renewal), the function holds this copy as it is, so a replica that restarts loads the
// last good pair. AnnotationCertificate records the digest of the pair it holds, which the
// function compares before rolling the replicas to a new one.
func TLSSecret(m Memcached) *corev1.Secret {
	meta := objectMeta(m, TLSSecretName(m))
	meta.Annotations = map[string]string{
		AnnotationCertificate: Digest([]byte(m.TLS.Certificate), []byte{0}, []byte(m.TLS.PrivateKey)),
		AnnotationTLSSource:   m.TLS.SecretName,
	}
	data := map[string][]byte{
		corev1.TLSCertKey:       []byte(m.TLS.Certificate),
		corev1.TLSPrivateKeyKey: []byte(m.TLS.PrivateKey),
	}
	if m.TLS.CA != "" {
		data[corev1.ServiceAccountRootCAKey] = []byte(m.TLS.CA)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta,
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
}

// AuthFile is memcached's --auth-file for a: one "username:password" line.
func AuthFile(a Auth) string {
	return a.Username + ":" + a.Password + "\n"
}

// Digest is a short SHA-256 digest of b, for pod template annotations that must change when
// a Secret the pods read at start changes: 64 bits identify a version. Unkeyed, it is for
// what is not secret to whoever reads the pod template (a certificate; the key beside it
// has 256 bits or more of entropy); credentials get CredentialsDigest.
func Digest(b ...[]byte) string {
	h := sha256.New()
	for _, p := range b {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// CredentialsDigest is the pod template's digest of credentials a: an HMAC-SHA256 of the
// auth file keyed with a's salt, cut to 64 bits, which identify a version. Anyone who may
// read a Deployment (the view role) reads it, and only who may read the auth Secret has the
// salt: without it, no password, however weak, can be tried against the digest offline.
// Credentials without a salt (an auth Secret from before salts) keep the unsalted Digest
// their pods run with, so that an upgrade neither restarts pods nor touches credentials; the
// function gives them a salt when their pods restart for them anyway (see fn's
// credentialStore).
func CredentialsDigest(a Auth) string {
	if a.Salt == "" {
		return Digest([]byte(AuthFile(a)))
	}
	h := hmac.New(sha256.New, []byte(a.Salt))
	h.Write([]byte(AuthFile(a)))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// AuthSecret holds m's credentials: username and password for clients and the auth proxy, and
// memcached's auth file. The pods mount it read-only; it is not the connection Secret, which
// Crossplane writes for the claim.
func AuthSecret(m Memcached) *corev1.Secret {
	meta := objectMeta(m, AuthSecretName(m))
	if m.Auth.Rotation != "" {
		meta.Annotations = map[string]string{AnnotationRotation: m.Auth.Rotation}
	}
	data := map[string][]byte{
		ConnectionUsername: []byte(m.Auth.Username),
		ConnectionPassword: []byte(m.Auth.Password),
		AuthFileKey:        []byte(AuthFile(*m.Auth)),
	}
	if m.Auth.Salt != "" {
		data[AuthSaltKey] = []byte(m.Auth.Salt)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// NetworkPolicy admits connections to memcached's port from pods of m's own namespace and of
// the namespaces m's policy selects, and to the metrics port from the monitoring namespace
// only. Nothing else reaches the pods: a pod selected by an Ingress policy accepts only what
// some policy admits. And the pods reach nothing: the policy is also of type Egress with no
// egress rule, since memcached, the exporter and the auth proxy talk over loopback only
// (which no NetworkPolicy filters) and need neither DNS nor the API server; otherwise the
// exporter's /scrape?target= would make a pod, with the tenant's TLS Secret mounted,
// connect anywhere a client of the metrics port says. It takes effect only where the
// network plugin enforces NetworkPolicies.
func NetworkPolicy(m Memcached) *networkingv1.NetworkPolicy {
	tcp := ptr.To(corev1.ProtocolTCP)
	clients := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	if sel := m.NetworkPolicy.AllowedNamespaces; sel != nil {
		clients = append(clients, networkingv1.NetworkPolicyPeer{NamespaceSelector: sel.DeepCopy()})
	}
	rules := []networkingv1.NetworkPolicyIngressRule{{
		From:  clients,
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromInt32(Port))}},
	}}
	if ns := m.NetworkPolicy.MonitoringNamespace; m.Metrics && ns != "" {
		rules = append(rules, networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromInt32(MetricsPort))}},
		})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: objectMeta(m, m.Name),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: SelectorLabels(m)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     rules,
		},
	}
}

// NeedsServiceMonitor reports whether m gets a ServiceMonitor: the platform asked for them,
// and m has metrics to scrape.
func NeedsServiceMonitor(m Memcached) bool {
	return m.ServiceMonitor && m.Metrics
}

// ServiceMonitorAPIVersion and ServiceMonitorKind are the Prometheus Operator's kind. It is
// rendered unstructured: its Go types would pull the operator's module in for one object.
const (
	ServiceMonitorAPIVersion = "monitoring.coreos.com/v1"
	ServiceMonitorKind       = "ServiceMonitor"
)

// ServiceMonitor tells a Prometheus Operator to scrape every replica's exporter through the
// Service's metrics port.
func ServiceMonitor(m Memcached) *unstructured.Unstructured {
	return monitoringObject(m, ServiceMonitorKind, map[string]any{
		"selector":  map[string]any{"matchLabels": anyValues(SelectorLabels(m))},
		"endpoints": []any{map[string]any{"port": MetricsPortName}},
	})
}

// monitoringObject is a Prometheus Operator object of kind for m, with m's name, namespace
// and labels, rendered unstructured.
func monitoringObject(m Memcached, kind string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ServiceMonitorAPIVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": m.Name, "namespace": m.Namespace, "labels": anyValues(Labels(m))},
		"spec":       spec,
	}}
}

// anyValues is labels as unstructured content holds them.
func anyValues(labels map[string]string) map[string]any {
	out := make(map[string]any, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// memcachedArgs are memcached's flags beyond size and connections: the item size limit,
// authentication and TLS. With TLS, memcached serves TLS only on Port (on every IPv4
// address) and plaintext on LoopbackPort of 127.0.0.1, which only the pod's own containers
// reach: the exporter and the auth proxy, neither of which speaks TLS to memcached.
func memcachedArgs(m Memcached) []string {
	var args []string
	if m.MaxItemSizeMB > 0 {
		args = append(args, "--max-item-size="+strconv.Itoa(int(m.MaxItemSizeMB))+"m")
	}
	if m.Auth != nil {
		args = append(args, "--auth-file="+AuthDir+"/"+AuthFileKey)
	}
	if m.TLS != nil {
		args = append(args,
			"--enable-ssl",
			"--extended=ssl_chain_cert="+TLSDir+"/"+corev1.TLSCertKey,
			"--extended=ssl_key="+TLSDir+"/"+corev1.TLSPrivateKeyKey,
			"--listen=0.0.0.0",
			"--listen=notls:127.0.0.1:"+strconv.Itoa(LoopbackPort),
		)
	}
	return args
}

// plaintextAddress is where containers of the pod reach memcached without TLS.
func plaintextAddress(m Memcached) string {
	if m.TLS != nil {
		return "127.0.0.1:" + strconv.Itoa(LoopbackPort)
	}
	return "127.0.0.1:" + strconv.Itoa(Port)
}

// exporterTarget is what the exporter scrapes: memcached itself, or, with auth on, the auth
// proxy, since the exporter cannot authenticate.
func exporterTarget(m Memcached) string {
	switch {
	case m.Auth != nil:
		return "127.0.0.1:" + strconv.Itoa(AuthProxyPort)
	case m.TLS != nil:
		return plaintextAddress(m)
	}
	return "localhost:" + strconv.Itoa(Port)
}

// authProxyContainer authenticates each of the exporter's connections to memcached with the
// mounted credentials and then relays it (cmd/memcached-auth-proxy). It listens on 127.0.0.1
// only, so nothing outside the pod can use it.
func authProxyContainer(m Memcached) corev1.Container {
	mem := resource.MustParse("32Mi")
	return corev1.Container{
		Name:  AuthProxyContainerName,
		Image: m.AuthProxyImage,
		Args: []string{
			"--listen=127.0.0.1:" + strconv.Itoa(AuthProxyPort),
			"--upstream=" + plaintextAddress(m),
			"--credentials=" + AuthDir,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: authVolume, MountPath: AuthDir, ReadOnly: true}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: mem},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
		},
		SecurityContext: containerSecurityContext(),
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
}

// volumes are the Secrets m's pods mount (the auth Secret, and the function's copy of the TLS
// pair, never the tenant's TLS Secret itself): mode 0440, so that memcached's group (the pod's
// fsGroup) reads them and nobody writes them.
func volumes(m Memcached) []corev1.Volume {
	var vs []corev1.Volume
	secret := func(name, secret string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: ptr.To[int32](0o440),
		}}}
	}
	if m.Auth != nil {
		vs = append(vs, secret(authVolume, AuthSecretName(m)))
	}
	if m.TLS != nil {
		vs = append(vs, secret(tlsVolume, TLSSecretName(m)))
	}
	return vs
}

// volumeMounts are memcached's mounts of volumes, read-only.
func volumeMounts(m Memcached) []corev1.VolumeMount {
	var vm []corev1.VolumeMount
	if m.Auth != nil {
		vm = append(vm, corev1.VolumeMount{Name: authVolume, MountPath: AuthDir, ReadOnly: true})
	}
	if m.TLS != nil {
		vm = append(vm, corev1.VolumeMount{Name: tlsVolume, MountPath: TLSDir, ReadOnly: true})
	}
	return vm
}

// podAnnotations are the digests of what the pods read at start (nil when they read
// nothing).
func podAnnotations(m Memcached) map[string]string {
	if m.Auth == nil && m.TLS == nil {
		return nil
	}
	a := map[string]string{}
	if m.Auth != nil {
		a[AnnotationCredentials] = CredentialsDigest(*m.Auth)
	}
	if m.TLS != nil {
		a[AnnotationCertificate] = m.TLS.Digest
	}
	return a
}
