package fn

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/example/function-memcached/internal/lru"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// KeyTLSSecret is the function's copy of the last TLS pair it accepted from the tenant's
// Secret (render.TLSSecret): the pods mount it, never the tenant's Secret, so a bad renewal
// there reaches no replica, not even one that restarts. While the tenant's Secret is invalid
// the spec is, and the copy is held as it is with everything else that runs.
const KeyTLSSecret = "memcached-tls-active"

// servedTLS checks the tenant's TLS Secret (nil when it does not exist) at the function's
// clock, for the host clients reach m at, and returns the pair to serve and when the first of
// its certificates expires. Its Digest, which the
// pod template carries, is the pair's own once the observed copy holds that pair; until
// then it stays what the running replicas carry, so that they roll to a renewed pair only once
// the copy they mount holds it (Crossplane applies the copy and the Deployment in no set
// order). The copy's change is watched, so the roll follows one reconcile later.
func (f *Function) servedTLS(o *observation, m render.Memcached, name string, secret *corev1.Secret) (*render.TLS, time.Time, field.ErrorList) {
	now, host := f.now(), render.Host(m)
	if secret == nil { // Nothing to remember a verdict of.
		_, errs := resolve.TLSSecret(tlsPath, name, m.Namespace, host, nil, now)
		return nil, time.Time{}, errs
	}
	k, err := lru.KeyOf(tlsVerdictInput{Name: name, Namespace: m.Namespace, Host: host, Type: secret.Type, Data: secret.Data})
	v, ok := f.tlsVerdicts.Get(k)
	if !ok || err != nil || now.After(v.until) {
		t, errs := resolve.TLSSecret(tlsPath, name, m.Namespace, host, secret, now)
		if len(errs) > 0 {
			return nil, time.Time{}, errs
		}
		v = tlsVerdict{tls: t, until: resolve.TLSSecretExpiry(secret)}
		if err == nil && v.size() <= maxRememberedTLSBytes {
			f.tlsVerdicts.Add(k, v)
		}
	}
	served := *v.tls // The remembered verdict is shared: the digest is this call's.
	served.Digest = loadedDigest(o, v.tls.Digest)
	return &served, v.until, nil
}

// maxTLSVerdicts bounds the remembered TLS verdicts (tlsVerdict): one per distinct TLS
// Secret content.
const maxTLSVerdicts = 1024

// maxRememberedTLSBytes is the largest TLS Secret (tls.crt, tls.key and ca.crt together)
// whose acceptance is remembered. A verdict keeps the pair it accepted, and a Secret may hold
// up to 1 MiB: without this bound, one tenant rewriting its Secret with padded, valid chains
// could make the shared function hold a gigabyte. A real chain and key take a few KiB; a
// larger Secret is checked on every call instead, costing its own tenant the time.
const maxRememberedTLSBytes = 64 << 10

// A tlsVerdict is resolve's acceptance of a TLS Secret, remembered by content (the Function's
// tlsVerdicts) until the earliest expiry among its certificates: checking a pair (parsing it,
// verifying its chain) costs a few hundred microseconds, and the function judges the same
// Secret on every reconcile. Refusals are not remembered: they are the exceptional path, and
// one may turn into an acceptance by time alone (a certificate not valid yet).
type tlsVerdict struct {
	tls   *render.TLS
	until time.Time
}

// tlsVerdictInput is everything a verdict of resolve.TLSSecret depends on but the time: the
// Secret's name, namespace, type and data, and the host. Its lru.KeyOf keys the remembered
// verdicts.
type tlsVerdictInput struct {
	Name, Namespace, Host string
	Type                  corev1.SecretType
	Data                  map[string][]byte
}

// size is how many bytes of the tenant's Secret v keeps.
func (v tlsVerdict) size() int {
	return len(v.tls.Certificate) + len(v.tls.PrivateKey) + len(v.tls.CA)
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
