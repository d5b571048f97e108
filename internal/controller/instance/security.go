package instance

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/pki"
	"github.com/example/function-memcached/internal/render"
	"github.com/example/function-memcached/internal/resolve"
)

// tlsPath is where an Instance names its TLS Secret, for field errors.
var tlsPath = field.NewPath("spec", "forProvider", "tls", "secretName")

// secure completes m, as resolved from the Instance's spec, with what lives in the target
// cluster: the credentials (from the Instance's own auth Secret among o, or generated) and
// the TLS pair of the Secret forProvider.tls.secretName names (read through watched, checked
// exactly as the function checks a claim's). A TLS Secret that is missing or unusable is a
// field error naming spec.forProvider.tls.secretName, with the reason; an error is one the
// tenant cannot fix (no randomness for a password, the watches cannot be read). While new
// credentials wait (credentials.Waiting: the Instance's namespace has too many pending), the
// auth Secret's keep serving, or, with none that may, a field error naming
// spec.forProvider.auth holds what runs.
func (e *External) secure(ctx context.Context, cr *v1alpha1.Instance, m render.Memcached, o observed, watched client.Reader) (render.Memcached, field.ErrorList, error) {
	// expiry is when the next poll must come: the TLS certificate's expiry, or the renewal of
	// one the provider issued.
	var expiry time.Time
	defer func() { e.Expiries.Set(cr.GetUID(), expiry) }()
	if m.TLS != nil {
		secret := &corev1.Secret{}
		found, err := get(ctx, watched, types.NamespacedName{Namespace: m.Namespace, Name: m.TLS.SecretName}, secret)
		if err != nil {
			return render.Memcached{}, nil, err
		}
		if !found {
			secret = nil
		} else if _, copied := secret.GetLabels()[v1alpha1.LabelInstanceUID]; copied {
			// A pair the provider copied for an Instance (<name>-tls-active), its own or
			// another tenant's in a shared target namespace: never a source, or one tenant
			// could have the provider hand it another's private key.
			return render.Memcached{}, field.ErrorList{field.Invalid(tlsPath, m.TLS.SecretName,
				"is a copy the provider made of an Instance's TLS pair; name the Secret your certificate is written to")}, nil
		}
		t, errs := resolve.TLSSecret(tlsPath, m.TLS.SecretName, m.Namespace, render.Host(m), secret, e.now())
		if len(errs) > 0 {
			return render.Memcached{}, errs, nil
		}
		m.TLS = t
		expiry = resolve.TLSSecretExpiry(secret)
	}
	if m.Auth != nil {
		// Credentials are read only from the Instance's own auth Secret; salt-less ones (set
		// by hand) get a salt, since the provider never ran them unsalted. The Instance's
		// namespace is its tenant's, whose bound of pending credentials it counts against.
		var secret *credentials.Secret
		if s := o.secret(roleAuthSecret); s != nil && ownershipOf(s, cr.GetUID()) == ours {
			secret = credentials.ObservedSecret(s.Data, s.GetAnnotations())
		}
		owner := credentials.Owner{Namespace: cr.GetNamespace(), UID: string(cr.GetUID())}
		want := credentials.WantFor(m, e.now())
		a, err := e.Credentials.Get(owner, want, secret, nil)
		var w *credentials.Waiting
		switch {
		case errors.As(err, &w):
			held, ok := credentials.Held(secret, nil)
			if !ok || !credentials.SameMode(held.Mode, m.Auth.Mode) {
				msg := e.credentialsWait(cr, credentials.Message(m.Auth.Rotation, nil, w))
				return render.Memcached{}, field.ErrorList{field.Forbidden(authPath, msg)}, nil
			}
			e.credentialsWait(cr, credentials.Message(m.Auth.Rotation, &held, w))
			a = held
		case err != nil:
			return render.Memcached{}, nil, err
		default:
			e.credentialsWait(cr, "")
		}
		m.Auth = &a
		if render.ClientCertificates(m) {
			if at := pki.RenewAt(a.Certificates); expiry.IsZero() || at.Before(expiry) {
				expiry = at
			}
			if m.TLS == nil {
				// No TLS Secret named: memcached serves the certificate the provider issued.
				m.TLS = render.IssuedTLS(a.Certificates)
			}
		}
	}
	return m, nil, nil
}

// authPath is where an Instance asks for credentials, for field errors.
var authPath = field.NewPath("spec", "forProvider", "auth")

// credentialsWait sets the Instance's CredentialsRotated condition while the credentials its
// spec asks for wait (msg says why and what serves meanwhile), with one Warning event when
// they start to, and True once they no longer do (msg empty); an Instance that never waited
// gets no such condition. It returns msg.
func (e *External) credentialsWait(cr *v1alpha1.Instance, msg string) string {
	previous := cr.GetCondition(credentials.ConditionRotated)
	c := xpv2.Condition{Type: credentials.ConditionRotated, Status: corev1.ConditionFalse, Reason: credentials.ReasonWaiting,
		Message: msg, LastTransitionTime: metav1.Now(), ObservedGeneration: cr.GetGeneration()}
	switch {
	case msg == "" && previous.Reason == "":
		return msg
	case msg == "":
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, credentials.ReasonRotated, credentials.MessageRotated
	case (previous.Status != corev1.ConditionFalse || previous.Reason != credentials.ReasonWaiting) && e.Recorder != nil:
		e.Recorder.Event(cr, event.Warning(credentials.ReasonWaiting, errors.New(msg)))
	}
	cr.SetConditions(c)
	return msg
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
