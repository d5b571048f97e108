package fn

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"sync"

	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// RequirementTLSSecret names the function's request for the Secret a spec's tls.secretName
// names, which Crossplane answers in the next call's required resources.
const RequirementTLSSecret = "memcached-tls-secret"

// maxPendingCredentials bounds the credentials generated for Memcacheds whose auth Secret
// has not been observed yet: each is an entry only from the first call until Crossplane
// has applied the Secret, seconds later.
const maxPendingCredentials = 1024

// credentialStore keeps the credentials of every Memcached with auth on stable: they are
// generated once and, from then on, read back from the observed auth Secret, so a reconcile
// never changes the password under a running application. Until Crossplane has applied the
// Secret (and between iterations of one reconcile), the generated credentials wait here,
// under the XR's UID.
type credentialStore struct {
	mu      sync.Mutex
	pending map[string]render.Auth
	// random returns the source of new passwords: crypto/rand outside tests.
	random func() io.Reader
}

func newCredentialStore() *credentialStore {
	return &credentialStore{pending: map[string]render.Auth{}, random: func() io.Reader { return rand.Reader }}
}

// get returns the credentials of the Memcached whose XR has UID key, for its spec's rotation:
// those of its observed auth Secret (nil when not observed) when they are usable and were
// generated for that rotation, else those generated for it earlier, else new ones. A new
// rotation therefore replaces the credentials once, even when Crossplane sends an auth
// Secret it has not seen change yet; so does deleting the auth Secret, unless a reconcile
// working from a copy read before the deletion applies it again.
//
// Credentials of an auth Secret from before salts (render.CredentialsDigest) keep no salt
// while the pods of the observed Deployment (nil when not observed) run with their unsalted
// digest: an upgrade restarts no pod and changes no credential. Otherwise the pods start or
// restart for these credentials anyway (a password set by hand, a Deployment recreated), and
// the credentials get a salt: a password set after the upgrade is never behind an unsalted
// digest.
func (c *credentialStore) get(key, rotation string, observed, deployment *structpb.Struct) (render.Auth, error) {
	key += "\x00" + rotation
	if observed != nil && str(observed, "metadata", "annotations", render.AnnotationRotation) == rotation {
		if a, ok := resolve.Credentials(secretData(observed, render.ConnectionUsername, render.ConnectionPassword, render.AuthSaltKey)); ok {
			running := str(deployment, "spec", "template", "metadata", "annotations", render.AnnotationCredentials)
			c.mu.Lock()
			defer c.mu.Unlock()
			if a.Salt != "" || running == render.CredentialsDigest(a) {
				delete(c.pending, key)
				return a, nil
			}
			if p, ok := c.pending[key]; ok && p.Username == a.Username && p.Password == a.Password && p.Salt != "" {
				return p, nil
			}
			salt, err := resolve.NewSalt(c.random())
			if err != nil {
				return render.Auth{}, err
			}
			a.Salt = salt
			c.remember(key, a)
			return a, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.pending[key]; ok {
		return a, nil
	}
	a, err := resolve.NewCredentials(c.random())
	if err != nil {
		return render.Auth{}, err
	}
	c.remember(key, a)
	return a, nil
}

// remember keeps a under key until its auth Secret is observed; c.mu is held.
func (c *credentialStore) remember(key string, a render.Auth) {
	if len(c.pending) >= maxPendingCredentials {
		for k := range c.pending { // Forget one at random; it is generated again if needed.
			delete(c.pending, k)
			break
		}
	}
	c.pending[key] = a
}

// secretData decodes the named keys of a Secret's data (base64 strings in the Struct); a key
// missing or not base64 is left out.
func secretData(s *structpb.Struct, keys ...string) map[string][]byte {
	out := make(map[string][]byte, len(keys))
	for _, k := range keys {
		if b, err := base64.StdEncoding.DecodeString(str(s, "data", k)); err == nil && len(b) > 0 {
			out[k] = b
		}
	}
	return out
}

// tlsSecretName is the Secret a spec's tls.secretName names, when it is a name the function
// can ask Crossplane for.
func tlsSecretName(spec *cachev1alpha1.XMemcachedSpec) string {
	if spec == nil || spec.TLS == nil || len(validation.IsDNS1123Subdomain(spec.TLS.SecretName)) > 0 {
		return ""
	}
	return spec.TLS.SecretName
}

// requireTLSSecret asks Crossplane for the Secret name in namespace and returns it as the
// request carries it: nil when it does not exist, and fetched false when Crossplane has not
// been asked yet (the first call of a reconcile), in which case nothing can be decided.
func requireTLSSecret(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, name, namespace string) (secret *corev1.Secret, fetched bool) {
	items, fetched := require(rsp, req, RequirementTLSSecret, &fnv1.ResourceSelector{
		ApiVersion: "v1",
		Kind:       "Secret",
		Match:      &fnv1.ResourceSelector_MatchName{MatchName: name},
		Namespace:  &namespace,
	})
	if !fetched || len(items) == 0 {
		return nil, fetched
	}
	s := &corev1.Secret{}
	// A Secret that does not decode is reported like one of no type, without a certificate.
	if runtime.DefaultUnstructuredConverter.FromUnstructured(items[0].Resource.Object, s) != nil {
		return &corev1.Secret{}, true
	}
	return s, true
}
