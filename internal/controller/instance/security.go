package instance

import (
	"context"
	"crypto/rand"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// tlsPath is where an Instance names its TLS Secret, for field errors.
var tlsPath = field.NewPath("spec", "forProvider", "tls", "secretName")

// maxPendingCredentials bounds the credentials generated for Instances whose auth Secret the
// watches do not show yet: each is an entry only from the reconcile that generated them
// until the watch shows the Secret applied, a moment later.
const maxPendingCredentials = 1024

// Credentials keep the credentials of every Instance with auth on stable, as the function
// keeps a claim's: generated once per value of forProvider.auth.rotation, kept in the auth
// Secret in the target cluster, and from then on read back from the watch of it, so that no
// reconcile changes the password under a running application. Until the watch shows the
// Secret as applied (the apply and the watch event race the next reconcile), the generated
// credentials wait here, under the Instance's UID and the rotation, so that a rotation
// replaces the credentials exactly once.
type Credentials struct {
	mu      sync.Mutex
	pending map[string]render.Auth
	// random returns the source of new passwords: crypto/rand outside tests.
	random func() io.Reader
}

// NewCredentials returns Credentials that wait for none yet.
func NewCredentials() *Credentials {
	return &Credentials{pending: map[string]render.Auth{}, random: func() io.Reader { return rand.Reader }}
}

// Get returns the credentials of the Instance uid for rotation: those of its auth Secret
// (secret, the Instance's own; nil when absent) when they are usable and were generated for
// rotation, else those generated for it earlier, else new ones. Credentials without a salt
// (a Secret edited by hand) keep their password and get a salt. A nil *Credentials
// remembers nothing.
func (c *Credentials) Get(uid types.UID, rotation string, secret *corev1.Secret) (render.Auth, error) {
	key := string(uid) + "\x00" + rotation
	random := func() io.Reader { return rand.Reader }
	if c != nil {
		random = c.random
		c.mu.Lock()
		defer c.mu.Unlock()
	}
	if secret != nil && secret.GetAnnotations()[render.AnnotationRotation] == rotation {
		if a, ok := resolve.Credentials(secret.Data); ok {
			if a.Salt == "" {
				if p, ok := c.pendingFor(key); ok && p.Username == a.Username && p.Password == a.Password {
					return p, nil
				}
				salt, err := resolve.NewSalt(random())
				if err != nil {
					return render.Auth{}, err
				}
				a.Salt = salt
				c.remember(key, a)
			} else if c != nil {
				delete(c.pending, key)
			}
			a.Rotation = rotation
			return a, nil
		}
	}
	if p, ok := c.pendingFor(key); ok {
		return p, nil
	}
	a, err := resolve.NewCredentials(random())
	if err != nil {
		return render.Auth{}, err
	}
	a.Rotation = rotation
	c.remember(key, a)
	return a, nil
}

// Forget forgets a deleted Instance's pending credentials.
func (c *Credentials) Forget(uid types.UID) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.pending {
		if len(k) > len(uid) && k[:len(uid)] == string(uid) && k[len(uid)] == 0 {
			delete(c.pending, k)
		}
	}
}

// pendingFor returns the credentials waiting under key; c.mu is held.
func (c *Credentials) pendingFor(key string) (render.Auth, bool) {
	if c == nil {
		return render.Auth{}, false
	}
	a, ok := c.pending[key]
	return a, ok
}

// remember keeps a under key until its auth Secret is observed; c.mu is held.
func (c *Credentials) remember(key string, a render.Auth) {
	if c == nil {
		return
	}
	if len(c.pending) >= maxPendingCredentials {
		for k := range c.pending { // Forget one at random; it is generated again if needed.
			delete(c.pending, k)
			break
		}
	}
	c.pending[key] = a
}

// secure completes m, as resolved from the Instance's spec, with what lives in the target
// cluster: the credentials (from the Instance's own auth Secret among o, or generated) and
// the TLS pair of the Secret forProvider.tls.secretName names (read through watched, checked
// exactly as the function checks a claim's). A TLS Secret that is missing or unusable is a
// field error naming spec.forProvider.tls.secretName, with the reason; an error is one the
// tenant cannot fix (no randomness for a password, the watches cannot be read).
func (e *External) secure(ctx context.Context, cr *v1alpha1.Instance, m render.Memcached, o observed, watched client.Reader) (render.Memcached, field.ErrorList, error) {
	if m.TLS != nil {
		secret := &corev1.Secret{}
		found, err := get(ctx, watched, types.NamespacedName{Namespace: m.Namespace, Name: m.TLS.SecretName}, secret)
		if err != nil {
			return render.Memcached{}, nil, err
		}
		if !found {
			secret = nil
		}
		t, errs := resolve.TLSSecret(tlsPath, m.TLS.SecretName, m.Namespace, render.Host(m), secret, e.now())
		if len(errs) > 0 {
			return render.Memcached{}, errs, nil
		}
		m.TLS = t
	}
	if m.Auth != nil {
		var secret *corev1.Secret
		if s := o.secret(roleAuthSecret); s != nil && ownershipOf(s, cr.GetUID()) == ours {
			secret = s
		}
		a, err := e.Credentials.Get(cr.GetUID(), m.Auth.Rotation, secret)
		if err != nil {
			return render.Memcached{}, nil, err
		}
		m.Auth = &a
	}
	return m, nil, nil
}

// now is the time a TLS certificate is checked at.
func (e *External) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// publicDetails are the connection details of m that an Instance which only observes may
// publish: endpoint, host and port, and whether it serves TLS. Credentials it never made
// are not its to hand on.
func publicDetails(m render.Memcached) map[string][]byte {
	m.Auth = nil
	if m.TLS != nil {
		m.TLS = &render.TLS{SecretName: m.TLS.SecretName}
	}
	return render.ConnectionDetails(m)
}
