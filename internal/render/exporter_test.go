package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/example/function-memcached/internal/pki"
)

// TestExporterHoldsNoServerKey: with client certificates and metrics, the exporter (a
// third-party image listening on the metrics port) reads only the CA that verifies memcached's
// certificate from the TLS copy <name>-tls-active, never memcached's private key beside it.
func TestExporterHoldsNoServerKey(t *testing.T) {
	certs := pki.Certificates{CA: "ca", CAKey: "ca-key", Client: "client", ClientKey: "client-key", Server: "server", ServerKey: "server-key"}
	for name, tls := range map[string]*TLS{
		"Issued":           IssuedTLS(certs),
		"TenantPairNoCA":   {SecretName: "sessions-tls", Certificate: "crt", PrivateKey: "key", Digest: "d"},
		"TenantPairWithCA": {SecretName: "sessions-tls", Certificate: "crt", PrivateKey: "key", CA: "ca", Digest: "d"},
	} {
		t.Run(name, func(t *testing.T) {
			m := base()
			m.Metrics, m.Auth, m.TLS = true, &Auth{Mode: "ClientCertificate", Certificates: certs, Salt: "0123456789abcdef"}, tls
			d := Deployment(m)
			volumes := map[string]corev1.Volume{}
			for _, v := range d.Spec.Template.Spec.Volumes {
				volumes[v.Name] = v
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if c.Name != ExporterContainerName {
					continue
				}
				for _, vm := range c.VolumeMounts {
					v := volumes[vm.Name]
					if v.Secret == nil || v.Secret.SecretName != TLSSecretName(m) {
						continue
					}
					mounted := len(v.Secret.Items) == 0
					for _, it := range v.Secret.Items {
						mounted = mounted || it.Key == corev1.TLSPrivateKeyKey
					}
					if mounted {
						t.Errorf("the exporter mounts %s at %s with its %s: memcached's private key in the exporter", TLSSecretName(m), vm.MountPath, corev1.TLSPrivateKeyKey)
					}
				}
			}
		})
	}
}
