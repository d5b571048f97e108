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

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/pki"
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
	// SASLPasswordsKey is the auth Secret's key holding memcached's SASL password file
	// (MEMCACHED_SASL_PWDB): "username:password", the username with its realm (SASLRealm).
	SASLPasswordsKey = "sasl-pwdb"
	// SASLConfigKey is the auth Secret's key holding Cyrus SASL's configuration for
	// memcached (SASL_CONF_PATH is the directory it is mounted in): PLAIN only.
	SASLConfigKey = "memcached.conf"
	// SASLRealm is the realm of a SASL username. Cyrus SASL appends the host name to a bare
	// username, and each replica's differs; a username with an explicit realm is the same on
	// every replica.
	SASLRealm = "memcached"
	// CAKey, ServerCertKey and ServerKeyKey are the auth Secret's keys, in the
	// ClientCertificate mode, of the CA's private key and of the server certificate the
	// function issues; its ca.crt, tls.crt and tls.key are the CA bundle and the client's
	// certificate and key. Pods never mount the CA's key.
	CAKey         = "ca.key"
	ServerCertKey = "server.crt"
	ServerKeyKey  = "server.key"

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
	// AnnotationAuthMode, on the auth Secret, is the spec.auth.mode its credentials are for,
	// absent for Password (the only mode before modes, whose Secrets carry none): a new mode
	// replaces them, as a new rotation does.
	AnnotationAuthMode = "cache.example.com/auth-mode"

	authVolume = "auth"
	tlsVolume  = "tls"
	// caVolume is the TLS copy's ca.crt alone, for the exporter: never memcached's key.
	caVolume = "tls-ca"
	// ExporterCADir is where the exporter reads the CA that verifies memcached's certificate.
	ExporterCADir = "/etc/memcached/tls-ca"
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
	meta.Annotations = map[string]string{AnnotationCertificate: pairDigest(*m.TLS)}
	if m.TLS.SecretName != "" { // Else the function issued the pair (IssuedTLS).
		meta.Annotations[AnnotationTLSSource] = m.TLS.SecretName
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

// AuthFile is memcached's --auth-file for a: one "username:password" line. It is the SASL
// password file too, whose username carries its realm.
func AuthFile(a Auth) string {
	return a.Username + ":" + a.Password + "\n"
}

// SASLConfig is Cyrus SASL's configuration for memcached: PLAIN, checked against the password
// file, and no other mechanism.
const SASLConfig = "mech_list: plain\n"

// IssuedTLS is what memcached serves TLS with when m's clients present client certificates
// and the claim names no TLS Secret: the server certificate the function issued, with the
// Memcached's CA bundle for clients to verify it with. digest is what the pod template
// carries for it (see TLS.Digest).
func IssuedTLS(c pki.Certificates) *TLS {
	t := &TLS{Certificate: c.Server, PrivateKey: c.ServerKey, CA: c.CA}
	t.Digest = pairDigest(*t)
	return t
}

// Issued reports whether t is the pair the function issued (IssuedTLS), not a tenant's.
func Issued(t *TLS) bool {
	return t != nil && t.SecretName == ""
}

// pairDigest is the digest of the pair t that the TLS copy records: of the certificate and key,
// and, for the pair the function issued, of the CA bundle beside them, from which memcached
// then reads the CAs it admits clients of (the Memcached's own, which a rotation replaces with
// the server certificate): one digest, so that a rotation rolls the replicas once, when the
// copy holds all of it.
func pairDigest(t TLS) string {
	if Issued(&t) {
		return Digest([]byte(t.Certificate), []byte{0}, []byte(t.PrivateKey), []byte{0}, []byte(t.CA))
	}
	return Digest([]byte(t.Certificate), []byte{0}, []byte(t.PrivateKey))
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
//
// In the ClientCertificate mode, what memcached reads at start is the CA bundle it admits
// clients of: a renewed client certificate changes no digest and restarts nothing.
func CredentialsDigest(a Auth) string {
	loaded := AuthFile(a)
	if a.Mode == cachev1alpha1.AuthModeClientCertificate {
		loaded = a.Certificates.CA
	}
	if a.Salt == "" {
		return Digest([]byte(loaded))
	}
	h := hmac.New(sha256.New, []byte(a.Salt))
	h.Write([]byte(loaded))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// AuthSecret holds m's credentials, for the mode they are for: the username and password
// (for clients and the auth proxy) with memcached's auth file or SASL password file and
// configuration; or the CA bundle and its key, the client certificate and key, and the
// server's. The pods mount it read-only (without the CA's key); it is not the connection
// Secret, which Crossplane writes for the claim.
func AuthSecret(m Memcached) *corev1.Secret {
	meta := objectMeta(m, AuthSecretName(m))
	if m.Auth.Rotation != "" || m.Auth.Mode != "" && m.Auth.Mode != cachev1alpha1.AuthModePassword {
		meta.Annotations = map[string]string{}
		if m.Auth.Rotation != "" {
			meta.Annotations[AnnotationRotation] = m.Auth.Rotation
		}
		if m.Auth.Mode != "" && m.Auth.Mode != cachev1alpha1.AuthModePassword {
			meta.Annotations[AnnotationAuthMode] = m.Auth.Mode
		}
	}
	// Each credential m.Auth holds: those of its mode (the only ones generated credentials
	// hold).
	data := map[string][]byte{}
	if a := m.Auth; a.Username != "" || a.Password != "" {
		data[ConnectionUsername], data[ConnectionPassword] = []byte(a.Username), []byte(a.Password)
		if SASL(m) {
			data[SASLPasswordsKey], data[SASLConfigKey] = []byte(AuthFile(*a)), []byte(SASLConfig)
		} else {
			data[AuthFileKey] = []byte(AuthFile(*a))
		}
	}
	for k, v := range map[string]string{
		ConnectionCA: m.Auth.Certificates.CA, CAKey: m.Auth.Certificates.CAKey,
		corev1.TLSCertKey: m.Auth.Certificates.Client, corev1.TLSPrivateKeyKey: m.Auth.Certificates.ClientKey,
		ServerCertKey: m.Auth.Certificates.Server, ServerKeyKey: m.Auth.Certificates.ServerKey,
	} {
		if v != "" {
			data[k] = []byte(v)
		}
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
// reach: the auth proxy, which speaks no TLS to memcached. With client certificates there is
// no plaintext listener: every connection, the exporter's too, presents a certificate the
// Memcached's CA signed (ssl_verify_mode=2 requires one).
func memcachedArgs(m Memcached) []string {
	var args []string
	if m.MaxItemSizeMB > 0 {
		args = append(args, "--max-item-size="+strconv.Itoa(int(m.MaxItemSizeMB))+"m")
	}
	switch {
	case ClientCertificates(m):
	case SASL(m):
		args = append(args, "--enable-sasl")
	case m.Auth != nil:
		args = append(args, "--auth-file="+AuthDir+"/"+AuthFileKey)
	}
	if m.TLS != nil {
		args = append(args,
			"--enable-ssl",
			"--extended=ssl_chain_cert="+TLSDir+"/"+corev1.TLSCertKey,
			"--extended=ssl_key="+TLSDir+"/"+corev1.TLSPrivateKeyKey,
			"--listen=0.0.0.0",
		)
		if ClientCertificates(m) {
			// The CAs of client certificates: with the pair the function issued, from its copy
			// (with the server certificate, which they change with); else the auth Secret's.
			dir := AuthDir
			if Issued(m.TLS) {
				dir = TLSDir
			}
			args = append(args,
				"--extended=ssl_ca_cert="+dir+"/"+ConnectionCA,
				"--extended=ssl_verify_mode=2")
		} else {
			args = append(args, "--listen=notls:127.0.0.1:"+strconv.Itoa(LoopbackPort))
		}
	}
	return args
}

// memcachedEnv is memcached's environment: with SASL, where Cyrus SASL finds its
// configuration and memcached its password file.
func memcachedEnv(m Memcached) []corev1.EnvVar {
	if !SASL(m) {
		return nil
	}
	return []corev1.EnvVar{
		{Name: "MEMCACHED_SASL_PWDB", Value: AuthDir + "/" + SASLPasswordsKey},
		{Name: "SASL_CONF_PATH", Value: AuthDir},
	}
}

// plaintextAddress is where containers of the pod reach memcached without TLS.
func plaintextAddress(m Memcached) string {
	if m.TLS != nil {
		return "127.0.0.1:" + strconv.Itoa(LoopbackPort)
	}
	return "127.0.0.1:" + strconv.Itoa(Port)
}

// exporterArgs are the exporter's flags: what it scrapes, and, with client certificates, the
// client certificate it presents and how it verifies memcached's (with the CA the pods' TLS
// pair carries; a pair without one is the tenant's, from a CA the exporter cannot know, and
// the exporter, which dials 127.0.0.1, then checks no certificate).
func exporterArgs(m Memcached) []string {
	args := []string{"--memcached.address=" + exporterTarget(m)}
	if !ClientCertificates(m) || m.TLS == nil {
		return args
	}
	args = append(args,
		"--memcached.tls.enable",
		"--memcached.tls.cert-file="+AuthDir+"/"+corev1.TLSCertKey,
		"--memcached.tls.key-file="+AuthDir+"/"+corev1.TLSPrivateKeyKey,
		"--memcached.tls.server-name="+Host(m))
	if m.TLS.CA != "" {
		return append(args, "--memcached.tls.ca-file="+ExporterCADir+"/"+ConnectionCA)
	}
	return append(args, "--memcached.tls.insecure-skip-verify")
}

// exporterTarget is what the exporter scrapes: memcached itself, or, with a password or SASL,
// the auth proxy, since the exporter can neither authenticate so nor speak SASL.
func exporterTarget(m Memcached) string {
	switch {
	case ClientCertificates(m):
		return "127.0.0.1:" + strconv.Itoa(Port)
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
		Name:         AuthProxyContainerName,
		Image:        m.AuthProxyImage,
		Args:         authProxyArgs(m),
		VolumeMounts: []corev1.VolumeMount{{Name: authVolume, MountPath: AuthDir, ReadOnly: true}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: mem},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
		},
		SecurityContext: containerSecurityContext(),
		ImagePullPolicy: corev1.PullIfNotPresent,
	}
}

// authProxyArgs are the auth proxy's flags: with SASL, it authenticates over the binary
// protocol and translates the exporter's text-protocol commands.
func authProxyArgs(m Memcached) []string {
	args := []string{
		"--listen=127.0.0.1:" + strconv.Itoa(AuthProxyPort),
		"--upstream=" + plaintextAddress(m),
		"--credentials=" + AuthDir,
	}
	if SASL(m) {
		args = append(args, "--upstream-protocol=sasl")
	}
	return args
}

// volumes are the Secrets m's pods mount (the auth Secret, and the function's copy of the TLS
// pair, never the tenant's TLS Secret itself): mode 0440, so that memcached's group (the pod's
// fsGroup) reads them and nobody writes them; and, with external storage, the replica's own
// volume for it.
func volumes(m Memcached) []corev1.Volume {
	var vs []corev1.Volume
	secret := func(name, secret string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: ptr.To[int32](0o440),
		}}}
	}
	if m.Auth != nil {
		v := secret(authVolume, AuthSecretName(m))
		if ClientCertificates(m) {
			// The CA bundle memcached admits clients of, and the client certificate the
			// exporter presents: never the CA's key or the server's (the TLS copy has it).
			for _, k := range []string{ConnectionCA, corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
				v.Secret.Items = append(v.Secret.Items, corev1.KeyToPath{Key: k, Path: k})
			}
		}
		vs = append(vs, v)
	}
	if m.TLS != nil {
		vs = append(vs, secret(tlsVolume, TLSSecretName(m)))
		if ClientCertificates(m) && m.Metrics && m.TLS.CA != "" {
			v := secret(caVolume, TLSSecretName(m))
			v.Secret.Items = []corev1.KeyToPath{{Key: ConnectionCA, Path: ConnectionCA}}
			vs = append(vs, v)
		}
	}
	if m.ExternalStorage != nil {
		vs = append(vs, extstoreVolume(m))
	}
	return vs
}

// volumeMounts are memcached's mounts of volumes: the Secrets read-only, and its external
// storage, which it writes.
func volumeMounts(m Memcached) []corev1.VolumeMount {
	var vm []corev1.VolumeMount
	if m.Auth != nil {
		vm = append(vm, corev1.VolumeMount{Name: authVolume, MountPath: AuthDir, ReadOnly: true})
	}
	if m.TLS != nil {
		vm = append(vm, corev1.VolumeMount{Name: tlsVolume, MountPath: TLSDir, ReadOnly: true})
	}
	if m.ExternalStorage != nil {
		vm = append(vm, corev1.VolumeMount{Name: ExtstoreVolume, MountPath: ExtstoreDir})
	}
	return vm
}

// exporterVolumeMounts are the exporter's mounts: with client certificates, the client's
// certificate and key (the auth volume) and the CA that verifies memcached's certificate,
// never memcached's key.
func exporterVolumeMounts(m Memcached) []corev1.VolumeMount {
	if !ClientCertificates(m) || m.TLS == nil {
		return nil
	}
	vm := []corev1.VolumeMount{{Name: authVolume, MountPath: AuthDir, ReadOnly: true}}
	if m.TLS.CA != "" {
		vm = append(vm, corev1.VolumeMount{Name: caVolume, MountPath: ExporterCADir, ReadOnly: true})
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
	if m.Auth != nil && !(ClientCertificates(m) && Issued(m.TLS)) {
		// With client certificates and the issued pair, memcached reads nothing of the auth
		// Secret: the copy's digest (AnnotationCertificate) covers all it reads.
		a[AnnotationCredentials] = CredentialsDigest(*m.Auth)
	}
	if m.TLS != nil {
		a[AnnotationCertificate] = m.TLS.Digest
	}
	return a
}
