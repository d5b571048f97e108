package fn

import (
	"encoding/base64"

	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/pki"
	"github.com/example/function-memcached/internal/readiness"
	"github.com/example/function-memcached/internal/render"
)

// RequirementTLSSecret names the function's request for the Secret a spec's tls.secretName
// names, which Crossplane answers in the next call's required resources.
const RequirementTLSSecret = "memcached-tls-secret"

// credentialsOf returns the credentials of the Memcached owner (its XR's UID and its tenant's
// namespace) for its spec's rotation (credentials.Store.Get), from its observed auth Secret
// (nil when not observed). Credentials of an auth Secret from before salts
// (render.CredentialsDigest) keep no salt while the pods of the observed Deployment (nil when
// not observed) run with their unsalted digest: an upgrade restarts no pod and changes no
// credential. Otherwise the pods start or restart for these credentials anyway (a password set
// by hand, a Deployment recreated), and the credentials get a salt: a password set after the
// upgrade is never behind an unsalted digest. Deleting the auth Secret replaces the
// credentials once, unless a reconcile working from a copy read before the deletion applies
// it again.
//
// While new credentials wait (the namespace has too many pending, credentials.Waiting), it
// returns the wait and the credentials of the observed auth Secret, which keep serving, or
// none (nil) when none may: then nothing new may run.
func credentialsOf(store *credentials.Store, owner credentials.Owner, want credentials.Want, observed, deployment *structpb.Struct) (*render.Auth, *credentials.Waiting, error) {
	secret := authSecret(observed)
	running := str(deployment, "spec", "template", "metadata", "annotations", render.AnnotationCredentials)
	unsalted := func(a render.Auth) bool { return running == render.CredentialsDigest(a) }
	a, err := store.Get(owner, want, secret, unsalted)
	var w *credentials.Waiting
	switch {
	case errors.As(err, &w):
		if held, ok := credentials.Held(secret, unsalted); ok && credentials.SameMode(held.Mode, want.Mode) {
			return &held, w, nil
		}
		// None, or another mode's, which the rest of the spec was not resolved for (the auth
		// proxy a password needs and client certificates do not): nothing new runs.
		return nil, w, nil
	case err != nil:
		return nil, nil, err
	}
	return &a, nil, nil
}

// authSecret is what an observed auth Secret (nil when not observed) holds, as package
// credentials reads it.
func authSecret(s *structpb.Struct) *credentials.Secret {
	if s == nil {
		return nil
	}
	return credentials.ObservedSecret(secretData(s, authSecretKeys...), map[string]string{
		render.AnnotationRotation: str(s, "metadata", "annotations", render.AnnotationRotation),
		render.AnnotationAuthMode: str(s, "metadata", "annotations", render.AnnotationAuthMode),
	})
}

// authSecretKeys are the keys of an auth Secret the credentials are read back from, in every
// mode: those render.AuthSecret writes but the files derived from the credentials.
var authSecretKeys = []string{render.ConnectionUsername, render.ConnectionPassword, render.AuthSaltKey,
	render.ConnectionCA, render.CAKey, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, render.ServerCertKey, render.ServerKeyKey}

// holdForCredentials answers a Memcached whose credentials wait with none that may serve
// meanwhile (a new one in a crowded namespace, an auth Secret deleted): like an invalid
// spec, everything of it stays as it runs and nothing new is desired, since nothing may run
// without auth. The verdict is that of what runs.
func holdForCredentials(rsp *fnv1.RunFunctionResponse, o *observation, d *decision) verdict {
	want := readiness.Want{Replicas: d.m.Size}
	if o.deployment != nil {
		want = readiness.Wanted(o.deployment)
	}
	cond := readiness.Available(o.deployment, want, o.reason)
	cond.Message += "; its credentials wait (condition " + credentials.ConditionRotated + ")"
	return holdAs(rsp, o, render.Memcached{Name: d.m.Name, Namespace: d.m.Namespace}, cond)
}

// reportCredentials sets the CredentialsRotated condition on the XR and claim while the
// credentials their spec asks for wait, here or, as its Instance says, in another cluster,
// with one Warning event when they start to; and True once they no longer do. A claim that
// never waited gets no such condition.
func reportCredentials(rsp *fnv1.RunFunctionResponse, o *observation, d *decision, v *verdict) {
	msg := d.credentialsWait
	if v.elsewhere && v.instance != nil {
		if c := v.instance.GetCondition(credentials.ConditionRotated); c.Status == corev1.ConditionFalse && string(c.Reason) == credentials.ReasonWaiting {
			msg = c.Message
		}
	}
	status, reason, _ := condition(o.xr, credentials.ConditionRotated)
	if msg == "" {
		if status != "" {
			response.ConditionTrue(rsp, credentials.ConditionRotated, credentials.ReasonRotated).
				WithMessage(credentials.MessageRotated).TargetCompositeAndClaim()
		}
		return
	}
	response.ConditionFalse(rsp, credentials.ConditionRotated, credentials.ReasonWaiting).WithMessage(msg).TargetCompositeAndClaim()
	if status != "False" || reason != credentials.ReasonWaiting {
		response.Warning(rsp, errors.New(msg)).WithReason(credentials.ReasonWaiting).TargetCompositeAndClaim()
	}
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

// requireTLSSecret asks Crossplane for the Secret name in namespace and returns its type and
// data as the request carries them: nil when it does not exist, and fetched false when
// Crossplane has not been asked yet (the first call of a reconcile), in which case nothing can
// be decided. A value that is not base64 is left out, and the Secret then judged without it.
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
	fields := get(items[0], "data").GetStructValue().GetFields()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	return &corev1.Secret{Type: corev1.SecretType(str(items[0], "type")), Data: secretData(items[0], keys...)}, true
}

// renewHeldClientCertificate renews the client certificate of a Memcached whose invalid spec
// holds what runs, when it is due: held for longer than the 30 days a renewal leaves, its
// clients would otherwise be refused once it expires, for a spec the platform may have made
// invalid (a lowered policy). Only the auth Secret and the connection details change: memcached
// never loads client certificates, so nothing that runs restarts. A CA or server certificate
// that is due stays as it runs until the spec is valid again, since renewing either rolls the
// replicas; so do new credentials that would wait.
func (f *Function) renewHeldClientCertificate(rsp *fnv1.RunFunctionResponse, o *observation, d *decision, v *verdict) {
	secret := authSecret(o.resources[KeyAuthSecret].GetResource())
	if secret == nil || secret.Mode != cachev1alpha1.AuthModeClientCertificate || d.t.namespace == "" {
		return
	}
	running, ok := credentials.Held(secret, func(render.Auth) bool { return true })
	if !ok {
		return
	}
	m := render.Memcached{Name: d.m.Name, Namespace: d.m.Namespace, Auth: &render.Auth{Mode: secret.Mode, Rotation: secret.Rotation}}
	owner := credentials.Owner{Namespace: d.t.namespace, UID: credentialKey(o.xr, d.t)}
	a, err := f.credentials.Get(owner, credentials.WantFor(m, f.now()), secret, nil)
	c, r := a.Certificates, running.Certificates
	if err != nil || c.CA != r.CA || c.CAKey != r.CAKey || c.Server != r.Server {
		return
	}
	d.renewAt = pki.RenewAt(pki.Certificates{Client: c.Client})
	if c.Client == r.Client {
		return
	}
	m.Auth = &a
	u, err := render.ToApply(render.AuthSecret(m))
	if err != nil {
		return
	}
	st, err := structpb.NewStruct(u.Object)
	if err != nil {
		return
	}
	rsp.Desired.Resources[KeyAuthSecret].Resource = st
	v.r.connection[corev1.TLSCertKey] = []byte(c.Client)
}
