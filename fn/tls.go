package fn

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// KeyTLSSecret is the function's copy of the last TLS pair it accepted from the tenant's
// Secret (render.TLSSecret): the pods mount it, never the tenant's Secret, so a bad renewal
// there reaches no replica, not even one that restarts. While the tenant's Secret is invalid
// the spec is, and the copy is held as it is with everything else that runs.
const KeyTLSSecret = "memcached-tls-active"

// servedTLS checks the tenant's TLS Secret (nil when it does not exist) at the function's
// clock, for the host clients reach m at, and returns the pair to serve. Its Digest, which the
// pod template carries, is the pair's own once the observed copy holds that pair; until
// then it stays what the running replicas carry, so that they roll to a renewed pair only once
// the copy they mount holds it (Crossplane applies the copy and the Deployment in no set
// order). The copy's change is watched, so the roll follows one reconcile later.
func (f *Function) servedTLS(o *observation, m render.Memcached, name string, secret *corev1.Secret) (*render.TLS, field.ErrorList) {
	t, errs := resolve.TLSSecret(tlsPath, name, m.Namespace, render.Host(m), secret, f.now())
	if len(errs) > 0 {
		return nil, errs
	}
	t.Digest = loadedDigest(o, t.Digest)
	return t, nil
}

// loadedDigest is the certificate digest the pod template carries for a pair of digest want:
// want, unless the observed copy holds another pair and the observed replicas carry a digest
// of their own, which they then keep.
func loadedDigest(o *observation, want string) string {
	c, d := o.resources[KeyTLSSecret].GetResource(), o.resources[KeyDeployment].GetResource()
	if c == nil || d == nil || str(c, "metadata", "annotations", render.AnnotationCertificate) == want {
		return want
	}
	if running := str(d, "spec", "template", "metadata", "annotations", render.AnnotationCertificate); running != "" {
		return running
	}
	return want
}

// heldTLS puts the TLS connection details of what runs back into connection, while an
// invalid spec holds it: the observed copy says the replicas serve TLS, with its ca.crt.
func heldTLS(o *observation, connection map[string][]byte) {
	c := o.resources[KeyTLSSecret].GetResource()
	if c == nil {
		return
	}
	connection[render.ConnectionTLS] = []byte("true")
	if ca := secretData(c, corev1.ServiceAccountRootCAKey)[corev1.ServiceAccountRootCAKey]; len(ca) > 0 {
		connection[render.ConnectionCA] = ca
	}
}
