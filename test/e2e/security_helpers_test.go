//go:build e2e

// Helpers of the auth and TLS scenarios, on fake and real nodes alike.

package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/function-memcached/test/e2e/internal/kube"
	"github.com/example/function-memcached/test/e2e/internal/pki"
)

// newCA is a CA for the Memcached TLS certificates a scenario writes.
func newCA(t *testing.T) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA("e2e memcached CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// writeTLSSecret writes what cert-manager writes for a Certificate of the Memcached name in
// ns: a kubernetes.io/tls Secret with a new certificate for the Service's DNS name, its key,
// and the CA.
func writeTLSSecret(t *testing.T, ca *pki.CA, ns, secret, name string) {
	t.Helper()
	writeTLSSecretOn(t, env.Kube, ca, ns, secret, name)
}

// writeTLSSecretOn is writeTLSSecret in the cluster c reaches: cert-manager running in a
// workload cluster, for a Memcached placed there.
func writeTLSSecretOn(t *testing.T, c *kube.Client, ca *pki.CA, ns, secret, name string) {
	t.Helper()
	host := name + "." + ns + ".svc.cluster.local"
	kp, err := ca.Issue(pki.Request{CommonName: host, DNSNames: []string{host, "*." + host}})
	if err != nil {
		t.Fatal(err)
	}
	writeTLSPairOn(t, c, ns, secret, kp, ca.CertPEM)
}

// writeTLSPairOn writes the kubernetes.io/tls Secret ns/secret holding kp and the CA caPEM in
// the cluster c reaches.
func writeTLSPairOn(t *testing.T, c *kube.Client, ns, secret string, kp pki.KeyPair, caPEM []byte) {
	t.Helper()
	s := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": secret, "namespace": ns},
		"type":     string(corev1.SecretTypeTLS),
		"stringData": map[string]any{
			corev1.TLSCertKey: string(kp.CertPEM), corev1.TLSPrivateKeyKey: string(kp.KeyPEM), "ca.crt": string(caPEM),
		},
	}}
	if _, err := c.Apply(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// waitConnection waits until check accepts the string data of a connection Secret.
func waitConnection(t *testing.T, ns, secret string, check func(map[string]string) error) map[string]string {
	t.Helper()
	var got map[string]string
	err := kube.Wait(context.Background(), defaultTimeout, "connection Secret "+ns+"/"+secret, func(ctx context.Context) error {
		s, err := env.Kube.Typed.CoreV1().Secrets(ns).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got = map[string]string{}
		for k, v := range s.Data {
			got[k] = string(v)
		}
		return check(got)
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
