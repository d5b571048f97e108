package instance

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	cachev1alpha1 "github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/apis/memcached/v1alpha1"
	"github.com/example/function-memcached/internal/credentials"
	"github.com/example/function-memcached/internal/render"
)

// withAuth turns authentication on, with rotation r (none when empty).
func withAuth(r string) func(*v1alpha1.Instance) {
	return func(i *v1alpha1.Instance) {
		i.Spec.ForProvider.Auth = &cachev1alpha1.Auth{Enabled: ptr.To(true), Rotation: r}
	}
}

// withTLS names the TLS Secret.
func withTLS(name string) func(*v1alpha1.Instance) {
	return func(i *v1alpha1.Instance) { i.Spec.ForProvider.TLS = &cachev1alpha1.TLS{SecretName: name} }
}

// withNetworkPolicy turns the NetworkPolicy on or off.
func withNetworkPolicy(on bool) func(*v1alpha1.Instance) {
	return func(i *v1alpha1.Instance) {
		i.Spec.ForProvider.NetworkPolicy = &cachev1alpha1.NetworkPolicy{Enabled: ptr.To(on)}
	}
}

// once runs what the managed reconciler runs for cr: Observe, then Create or Update
// when the Memcached does not exist or is not up to date, each with a new External, as
// each reconcile has. It returns the connection details the publisher would write last
// (nil when none), and Observe's error.
func once(t *testing.T, c client.Client, creds *credentials.Store, now time.Time, cr *v1alpha1.Instance) (managed.ConnectionDetails, error) {
	t.Helper()
	ctx := context.Background()
	e := &External{Target: newTarget(c), Settings: settings(t), Credentials: creds, Now: func() time.Time { return now }}
	o, err := e.Observe(ctx, cr)
	if err != nil {
		return nil, err
	}
	details := o.ConnectionDetails
	switch {
	case !o.ResourceExists:
		cr, err := e.Create(ctx, cr)
		if err != nil {
			t.Fatalf("Create(...): %v", err)
		}
		details = cr.ConnectionDetails
	case !o.ResourceUpToDate:
		u, err := e.Update(ctx, cr)
		if err != nil {
			t.Fatalf("Update(...): %v", err)
		}
		details = u.ConnectionDetails
	}
	return details, nil
}

// secretAt reads the Secret name in team-a; nil when absent.
func secretAt(t *testing.T, c client.Client, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: key.Namespace, Name: name}, s); err != nil {
		return nil
	}
	return s
}

func TestCredentialsOncePerRotation(t *testing.T) {
	c := targetCluster(interceptor.Funcs{})
	creds := credentials.NewStore()
	now := time.Now()
	cr := instance(withAuth(""))

	first, err := once(t, c, creds, now, cr)
	if err != nil {
		t.Fatalf("the first reconcile: %v", err)
	}
	s := secretAt(t, c, "sessions-auth")
	if s == nil || s.Labels[v1alpha1.LabelInstanceUID] != uid {
		t.Fatalf("With auth on, the provider applies the auth Secret labelled as the Instance's; got %v", s)
	}
	if len(first["password"]) != 32 || string(first["username"]) != "memcached" || string(s.Data["password"]) != string(first["password"]) {
		t.Fatalf("The connection details publish the credentials the auth Secret holds: details %v, Secret %v", keys(first), keys(s.Data))
	}
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), key, d); err != nil || d.Spec.Template.Annotations[render.AnnotationCredentials] == "" {
		t.Errorf("The pod template carries the credentials' digest (so that new ones roll the pods): %v", err)
	}

	// Another reconcile, by another process (no pending credentials): read back, never
	// generated again.
	again, err := once(t, c, credentials.NewStore(), now, cr)
	if err != nil || string(again["password"]) != string(first["password"]) {
		t.Errorf("A second reconcile must read the credentials back, not generate new ones (err %v)", err)
	}

	// An invalid spec in between changes nothing.
	if _, err := once(t, c, creds, now, instance(withAuth("r1"), size(9))); err == nil || !strings.Contains(err.Error(), "spec.forProvider.size") {
		t.Errorf("An invalid spec is reported, naming the field: %v", err)
	}
	if got := secretAt(t, c, "sessions-auth"); string(got.Data["password"]) != string(first["password"]) {
		t.Error("An invalid spec must not change the credentials")
	}

	// So does a spec that is invalid only in the target cluster (its TLS Secret is missing
	// there), and the credentials are read back once it is fixed.
	if _, err := once(t, c, creds, now, instance(withAuth(""), withTLS("sessions-cert"))); err == nil || !strings.Contains(err.Error(), "spec.forProvider.tls.secretName") {
		t.Errorf("A TLS Secret missing in the target cluster is reported, naming the field: %v", err)
	}
	if got := secretAt(t, c, "sessions-auth"); string(got.Data["password"]) != string(first["password"]) {
		t.Error("A TLS Secret missing in the target cluster must not change the credentials")
	}
	if d, err := once(t, c, credentials.NewStore(), now, cr); err != nil || string(d["password"]) != string(first["password"]) {
		t.Errorf("Once the spec is valid again the credentials are read back, not generated again (err %v)", err)
	}

	// A new rotation replaces them exactly once, even when the next reconcile reads a watch
	// that does not show the rotated Secret yet.
	rotated := instance(withAuth("r1"))
	r1, err := once(t, c, creds, now, rotated)
	if err != nil || string(r1["password"]) == string(first["password"]) || len(r1["password"]) != 32 {
		t.Fatalf("A new rotation generates new credentials (err %v)", err)
	}
	if got := secretAt(t, c, "sessions-auth"); got.Annotations[render.AnnotationRotation] != "r1" || string(got.Data["password"]) != string(r1["password"]) {
		t.Error("The auth Secret holds the rotated credentials and records the rotation")
	}
	stale := targetCluster(interceptor.Funcs{}, s.DeepCopy())
	if d, _ := once(t, stale, creds, now, rotated); string(d["password"]) != string(r1["password"]) {
		t.Error("A reconcile that still sees the Secret of the old rotation must use the credentials generated for the new one, not generate others")
	}
	for range 2 {
		if d, err := once(t, c, credentials.NewStore(), now, rotated); err != nil || string(d["password"]) != string(r1["password"]) {
			t.Errorf("The rotation replaced the credentials once: later reconciles read them back (err %v)", err)
		}
	}
}

// TestClientCertificates: with client certificates, the provider issues the same keys as the
// function (a CA, a client certificate, a server certificate when no TLS Secret is named),
// publishes them as the function does, serves the issued server certificate, reads them back
// on later reconciles, renews them before expiry with their keys and without rolling the
// pods, and replaces them once for a new mode.
func TestClientCertificates(t *testing.T) {
	c := targetCluster(interceptor.Funcs{})
	creds := credentials.NewStore()
	now := time.Now()
	withMode := func(mode string) func(*v1alpha1.Instance) {
		return func(i *v1alpha1.Instance) {
			i.Spec.ForProvider.Auth = &cachev1alpha1.Auth{Enabled: ptr.To(true), Mode: mode}
		}
	}
	cr := instance(withMode(cachev1alpha1.AuthModeClientCertificate))
	first, err := once(t, c, creds, now, cr)
	if err != nil {
		t.Fatalf("the first reconcile: %v", err)
	}
	if got, want := keys(first), []string{"ca.crt", "endpoint", "host", "port", "srv", "tls", "tls.crt", "tls.key"}; !cmp.Equal(got, want) {
		t.Errorf("The Instance publishes what a client presents and verifies with: keys %v, want %v", got, want)
	}
	s := secretAt(t, c, "sessions-auth")
	if s == nil || s.Annotations[render.AnnotationAuthMode] != cachev1alpha1.AuthModeClientCertificate || string(s.Data["tls.key"]) != string(first["tls.key"]) {
		t.Fatalf("The auth Secret holds the issued keys and records the mode: %v", s)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(first["ca.crt"])
	copied := secretAt(t, c, "sessions-tls-active")
	if copied == nil {
		t.Fatal("Without a TLS Secret named, the pods serve the issued server certificate from the provider's copy")
	}
	block, _ := pem.Decode(copied.Data["tls.crt"])
	server, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: string(first["host"])}); err != nil {
		t.Errorf("A client verifying memcached with the published ca.crt and host refuses the issued server certificate: %v", err)
	}
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), key, d); err != nil {
		t.Fatal(err)
	}
	digest, certificate := d.Spec.Template.Annotations[render.AnnotationCredentials], d.Spec.Template.Annotations[render.AnnotationCertificate]

	again, err := once(t, c, credentials.NewStore(), now.Add(time.Hour), cr)
	if err != nil || !cmp.Equal(again, first) {
		t.Errorf("A later reconcile by another process reads the certificates back, publishing the same (err %v)", err)
	}

	// 61 of 90 days later the client certificate is renewed with its key; the CA bundle, which
	// is what memcached loads, is the same, so the pods do not roll for it.
	renewed, err := once(t, c, creds, now.Add(61*24*time.Hour), cr)
	if err != nil {
		t.Fatal(err)
	}
	if string(renewed["tls.crt"]) == string(first["tls.crt"]) || string(renewed["tls.key"]) != string(first["tls.key"]) || string(renewed["ca.crt"]) != string(first["ca.crt"]) {
		t.Error("A due client certificate is renewed for the same key, by the same CA")
	}
	if err := c.Get(context.Background(), key, d); err != nil || d.Spec.Template.Annotations[render.AnnotationCredentials] != digest ||
		d.Spec.Template.Annotations[render.AnnotationCertificate] != certificate {
		t.Errorf("A renewed client certificate rolls no pod, and the server certificate is not due yet (err %v)", err)
	}

	// A new mode replaces them once.
	password, err := once(t, c, creds, now.Add(62*24*time.Hour), instance(withMode(cachev1alpha1.AuthModePassword)))
	if err != nil || len(password["password"]) != 32 || len(password["tls.key"]) != 0 {
		t.Errorf("A change to the password publishes a password and no client key (err %v): %v", err, keys(password))
	}
}

func TestForeignAuthSecretIsNeverUsed(t *testing.T) {
	// A hostile tenant of the target namespace makes the auth Secret first, with
	// credentials it knows, hoping the Memcached and its clients use them.
	planted := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "sessions-auth"},
		Data:       map[string][]byte{"username": []byte("memcached"), "password": []byte("known-to-the-attacker")},
	}
	// Or passes it off as an earlier provider's, whose objects an Instance takes over.
	legacyLooking := planted.DeepCopy()
	legacyLooking.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: LegacyFieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:password":{},"f:username":{}}}`)}}}
	for name, tc := range map[string]struct {
		cr     *v1alpha1.Instance
		secret *corev1.Secret
	}{
		"Unlabelled":    {cr: instance(withAuth("")), secret: planted},
		"Adopting":      {cr: instance(withAuth(""), adopting), secret: planted},
		"LegacyLooking": {cr: instance(withAuth("")), secret: legacyLooking},
	} {
		cr := tc.cr
		t.Run(name, func(t *testing.T) {
			c := targetCluster(readOnly(t), tc.secret.DeepCopy())
			if live := secretAt(t, c, "sessions-auth"); name == "LegacyLooking" && ownershipOf(live, uid) != legacy {
				t.Fatal("the planted Secret must look like an earlier provider's for this case to test anything")
			}
			e := &External{Target: newTarget(c), Settings: settings(t), Adoption: Adoption{Allowed: true, Config: "ClusterProviderConfig workload"}}
			o, err := e.Observe(context.Background(), cr)
			want := "Secret team-a/sessions-auth exists and is not this Instance's: it has no label memcached.example.com/instance-uid; a Secret is never adopted"
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Observe(...) = %v, want a conflict starting %q", err, want)
			}
			if o.ConnectionDetails != nil || strings.Contains(errString(err), "known-to-the-attacker") {
				t.Error("The planted credentials must never be published nor shown")
			}
		})
	}
}

// pair is a TLS Secret sessions-cert holding a certificate for dnsName valid until notAfter,
// signed by a CA in ca.crt.
func pair(t *testing.T, dnsName string, notAfter time.Time) *corev1.Secret {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &leaf.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(leaf)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "sessions-cert"},
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:              pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey:        pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
			corev1.ServiceAccountRootCAKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		},
	}
}

const host = "sessions.team-a.svc.cluster.local"

func TestTLS(t *testing.T) {
	now := time.Now()
	good := pair(t, host, now.Add(24*time.Hour))
	cr := instance(withTLS("sessions-cert"))

	t.Run("Served", func(t *testing.T) {
		c := targetCluster(interceptor.Funcs{}, good.DeepCopy())
		details, err := once(t, c, nil, now, cr)
		if err != nil {
			t.Fatal(err)
		}
		cp := secretAt(t, c, "sessions-tls-active")
		if cp == nil || string(cp.Data[corev1.TLSCertKey]) != string(good.Data[corev1.TLSCertKey]) || cp.Labels[v1alpha1.LabelInstanceUID] != uid {
			t.Fatal("The provider applies the pods' copy of the pair it accepted, labelled as the Instance's")
		}
		if string(details["tls"]) != "true" || string(details["ca.crt"]) != string(good.Data["ca.crt"]) {
			t.Errorf("The connection details say tls and carry ca.crt; got %v", keys(details))
		}
		if d, err := once(t, c, nil, now, cr); err != nil || string(d["ca.crt"]) == "" {
			t.Errorf("A second reconcile is up to date and publishes the same details (err %v)", err)
		}
	})

	broken := map[string]struct {
		secret *corev1.Secret
		want   string
	}{
		"Missing":   {want: "Secret team-a/sessions-cert does not exist"},
		"Expired":   {secret: pair(t, host, now.Add(-time.Minute)), want: "expired at"},
		"WrongHost": {secret: pair(t, "other.team-a.svc.cluster.local", now.Add(24*time.Hour)), want: "not " + host},
	}
	for name, tc := range broken {
		t.Run(name+"BeforeCreate", func(t *testing.T) {
			objs := []client.Object{}
			if tc.secret != nil {
				objs = append(objs, tc.secret)
			}
			c := targetCluster(readOnly(t), objs...)
			e := &External{Target: newTarget(c), Settings: settings(t), Now: func() time.Time { return now }}
			_, err := e.Observe(context.Background(), cr)
			if err == nil || !strings.Contains(err.Error(), `spec.forProvider.tls.secretName: Invalid value: "sessions-cert"`) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Observe(...) = %v: want an invalid spec naming spec.forProvider.tls.secretName, saying %q", err, tc.want)
			}
			if got := cr.GetCondition(v1alpha1.TypeAvailable).Reason; got != "InvalidSpec" {
				t.Errorf("Available reason = %s, want InvalidSpec", got)
			}
			if _, err := e.Create(context.Background(), cr); err == nil {
				t.Error("Create(...) must refuse to create a Memcached with a broken pair")
			}
		})
		t.Run(name+"WhileRunning", func(t *testing.T) {
			c := targetCluster(interceptor.Funcs{}, good.DeepCopy())
			if _, err := once(t, c, nil, now, cr); err != nil {
				t.Fatal(err)
			}
			before, d := secretAt(t, c, "sessions-tls-active"), &appsv1.Deployment{}
			_ = c.Get(context.Background(), key, d)
			s := secretAt(t, c, "sessions-cert")
			if tc.secret == nil {
				_ = c.Delete(context.Background(), s)
			} else {
				s.Data = tc.secret.Data
				_ = c.Update(context.Background(), s)
			}
			if _, err := once(t, c, nil, now, cr); err == nil || !strings.Contains(err.Error(), "spec.forProvider.tls.secretName") {
				t.Errorf("A TLS Secret broken while running is an invalid spec naming the field: %v", err)
			}
			after, d2 := secretAt(t, c, "sessions-tls-active"), &appsv1.Deployment{}
			_ = c.Get(context.Background(), key, d2)
			if after.ResourceVersion != before.ResourceVersion || d2.ResourceVersion != d.ResourceVersion {
				t.Error("Nothing that runs changes: the copy and the Deployment stay as they were")
			}
		})
	}
}

func TestTLSExpiryRemembered(t *testing.T) {
	now := time.Now()
	good := pair(t, host, now.Add(24*time.Hour))
	cr := instance(withTLS("sessions-cert"))
	// A settled Instance polls rarely, so the provider remembers when its certificate
	// expires, to poll then (PollIntervalHook); with TLS turned off it forgets it.
	c := targetCluster(interceptor.Funcs{}, good.DeepCopy())
	x := NewExpiries()
	e := &External{Target: newTarget(c), Settings: settings(t), Expiries: x, Now: func() time.Time { return now }}
	if _, err := e.Observe(context.Background(), cr.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if got, ok := x.At(cr.GetUID()); !ok || got.Sub(now.Add(24*time.Hour)).Abs() > time.Minute {
		t.Errorf("remembered expiry %v (%v), want the certificate's, %v", got, ok, now.Add(24*time.Hour))
	}
	e = &External{Target: newTarget(c), Settings: settings(t), Expiries: x, Now: func() time.Time { return now }}
	if _, err := e.Observe(context.Background(), instance()); err != nil {
		t.Fatal(err)
	}
	if got, ok := x.At(cr.GetUID()); ok {
		t.Errorf("remembered expiry %v after TLS was turned off, want none", got)
	}
}

// TestTLSCopyIsNeverASource proves that, in a shared target namespace, a tenant who names
// another Instance's copy of its pair (which the provider's watches hold) as its own
// tls.secretName is refused: the provider never hands one tenant another's private key.
func TestTLSCopyIsNeverASource(t *testing.T) {
	now := time.Now()
	good := pair(t, host, now.Add(24*time.Hour))
	// In a shared target namespace, a tenant names another Instance's copy of its pair,
	// which the provider's watches hold: the provider must not hand it over.
	theirs := good.DeepCopy()
	theirs.Name = "payments-tls-active"
	theirs.Labels = map[string]string{v1alpha1.LabelInstanceUID: "payments-uid"}
	c := targetCluster(readOnly(t), theirs)
	e := &External{Target: newTarget(c), Settings: settings(t), Now: func() time.Time { return now }}
	stealing := instance(withTLS("payments-tls-active"))
	_, err := e.Observe(context.Background(), stealing)
	if err == nil || !strings.Contains(err.Error(), `spec.forProvider.tls.secretName: Invalid value: "payments-tls-active": is a copy the provider made`) {
		t.Errorf("Observe(...) = %v: want an invalid spec refusing another Instance's copy as a source", err)
	}
	if _, err := e.Create(context.Background(), stealing); err == nil {
		t.Error("Create(...) must refuse to copy another Instance's pair")
	}
}

func TestNetworkPolicy(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	c := targetCluster(interceptor.Funcs{})
	on := instance(withNetworkPolicy(true))
	if _, err := once(t, c, nil, now, on); err != nil {
		t.Fatal(err)
	}
	np := &networkingv1.NetworkPolicy{}
	if err := c.Get(ctx, key, np); err != nil || np.Labels[v1alpha1.LabelInstanceUID] != uid || len(np.Spec.PolicyTypes) != 2 {
		t.Fatalf("The NetworkPolicy is applied as rendered (Ingress and Egress), labelled as the Instance's: %v %v", err, np.Spec.PolicyTypes)
	}
	e := &External{Target: newTarget(c), Settings: settings(t)}
	if o, err := e.Observe(ctx, on); err != nil || !o.ResourceUpToDate {
		t.Errorf("Once applied, the NetworkPolicy is up to date: %v %q", err, o.Diff)
	}

	off := instance(withNetworkPolicy(false))
	e = &External{Target: newTarget(c), Settings: settings(t)}
	o, err := e.Observe(ctx, off)
	if err != nil || !strings.Contains(o.Diff, "NetworkPolicy team-a/sessions: is no longer needed") {
		t.Fatalf("A NetworkPolicy the spec turned off is drift: %v %q", err, o.Diff)
	}
	if _, err := e.Update(ctx, off); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &networkingv1.NetworkPolicy{}); err == nil {
		t.Error("Update prunes the NetworkPolicy the spec turned off")
	}

	if _, err := once(t, c, nil, now, on); err != nil {
		t.Fatal(err)
	}
	gone := instance(withNetworkPolicy(true), deleted)
	e = &External{Target: newTarget(c), Settings: settings(t)}
	if _, err := e.Observe(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &networkingv1.NetworkPolicy{}); err == nil {
		t.Error("Delete deletes the Instance's NetworkPolicy")
	}
}

func TestForeignNetworkPolicyIsAConflict(t *testing.T) {
	theirs := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := targetCluster(readOnly(t), theirs)
	e := &External{Target: newTarget(c), Settings: settings(t), Adoption: Adoption{Config: "ClusterProviderConfig workload"}}
	_, err := e.Observe(context.Background(), instance(withNetworkPolicy(true)))
	want := "NetworkPolicy team-a/sessions exists and is not this Instance's: it has no label memcached.example.com/instance-uid; ClusterProviderConfig workload does not allow adoption (its spec.adoption is not Allowed)"
	if errString(err) != want {
		t.Errorf("Observe(...) = %v, want %q", err, want)
	}
}

func TestAuthTurnedOffPrunesItsSecret(t *testing.T) {
	c := targetCluster(interceptor.Funcs{})
	now := time.Now()
	if _, err := once(t, c, nil, now, instance(withAuth(""))); err != nil {
		t.Fatal(err)
	}
	off := instance(func(i *v1alpha1.Instance) { i.Spec.ForProvider.Auth = &cachev1alpha1.Auth{Enabled: ptr.To(false)} })
	details, err := once(t, c, nil, now, off)
	if err != nil {
		t.Fatal(err)
	}
	if secretAt(t, c, "sessions-auth") != nil {
		t.Error("Update deletes the auth Secret once the spec turns authentication off")
	}
	if len(details["password"]) > 0 || len(details["username"]) > 0 {
		t.Error("Without auth, the connection details hold no credentials")
	}
}

// keys lists the keys of details, never their values (which hold passwords).
// keys are the keys of m with a value, sorted: an empty one is how an Instance removes a key
// from its connection Secret (published).
func keys(m map[string][]byte) []string {
	var out []string
	for k, v := range m {
		if len(v) > 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func TestSecuredIsUpToDateOnceApplied(t *testing.T) {
	now := time.Now()
	cr := instance(withAuth("r1"), withTLS("sessions-cert"), withNetworkPolicy(true))
	c := targetCluster(interceptor.Funcs{}, pair(t, host, now.Add(24*time.Hour)))
	if _, err := once(t, c, nil, now, cr); err != nil {
		t.Fatal(err)
	}
	e := &External{Target: newTarget(c), Settings: settings(t), Now: func() time.Time { return now }}
	o, err := e.Observe(context.Background(), cr)
	if err != nil || !o.ResourceExists || !o.ResourceUpToDate {
		t.Errorf("With auth, TLS and a NetworkPolicy applied, the next Observe is up to date, so an idle provider writes nothing: %v %q", err, o.Diff)
	}
}

func TestSecretDriftShowsNoContents(t *testing.T) {
	now := time.Now()
	cr := instance(withAuth(""))
	c := targetCluster(interceptor.Funcs{})
	details, err := once(t, c, nil, now, cr)
	if err != nil {
		t.Fatal(err)
	}
	s := secretAt(t, c, "sessions-auth")
	s.Data["auth-file"] = []byte("memcached:changed-by-hand\n")
	if err := c.Update(context.Background(), s, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	e := &External{Target: newTarget(c), Settings: settings(t)}
	o, err := e.Observe(context.Background(), cr)
	if err != nil || !strings.Contains(o.Diff, "Secret team-a/sessions-auth: differs from what the provider renders (a Secret's contents are not shown)") {
		t.Errorf("A Secret changed by hand is drift, said without its contents: %v %q", err, o.Diff)
	}
	if strings.Contains(o.Diff, "changed-by-hand") || strings.Contains(o.Diff, string(details["password"])) {
		t.Error("A drift (which the managed reconciler logs) must not show a Secret's contents")
	}
}

// TestCredentialsWaitInACrowdedNamespace proves that one tenant cannot make the shared
// provider change another's credentials twice: with an Instance's namespace at its bound of
// pending credentials, a new rotation waits (the Instance keeps serving with its auth
// Secret's credentials, nothing rolls, CredentialsRotated says why) and a new Instance is
// held (nothing runs without auth); another namespace's crowd changes nothing. Once the
// crowd's credentials are stored, the rotation happens, once.
func TestCredentialsWaitInACrowdedNamespace(t *testing.T) {
	type want struct {
		// err is the start of Observe's error, "" for none.
		err string
		// condition is CredentialsRotated's status/reason after Observe, and after the crowd
		// is gone; "" when the Instance has none.
		condition, after string
		events           []string
		// kept is true when Observe publishes the credentials the auth Secret held before.
		kept bool
	}
	cases := map[string]struct {
		reason  string
		crowd   string // The namespace of the control plane crowded.
		running bool   // The Instance ran with rotation r1 before.
		want    want
	}{
		"RotationWaits": {
			reason:  "A new rotation in a crowded namespace waits: the auth Secret's credentials keep serving, announced once.",
			crowd:   "platform",
			running: true,
			want:    want{condition: "False/Waiting", after: "True/Rotated", events: []string{"Warning/Waiting"}, kept: true},
		},
		"NewInstanceHeld": {
			reason: "A new Instance with auth in a crowded namespace creates nothing, naming spec.forProvider.auth and the namespace's bound.",
			crowd:  "platform",
			want: want{err: "invalid spec, nothing was changed: spec.forProvider.auth: Forbidden: the credentials of rotation \"r2\" wait, and nothing new runs without them: namespace platform already has 64 Memcacheds",
				condition: "False/Waiting", after: "True/Rotated", events: []string{"Warning/Waiting", "Warning/InvalidSpec"}},
		},
		"AnotherNamespaceCrowded": {
			reason:  "Another namespace's crowd changes nothing here: the rotation happens at once.",
			crowd:   "team-b",
			running: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now()
			creds := credentials.NewStore()
			c := targetCluster(interceptor.Funcs{})
			var before managed.ConnectionDetails
			if tc.running {
				if _, err := once(t, c, creds, now, instance(withAuth("r1"))); err != nil {
					t.Fatal(err)
				}
				before, _ = once(t, c, creds, now, instance(withAuth("r1")))
			}
			var crowd []credentials.Owner
			for i := range credentials.MaxPendingPerNamespace {
				o := credentials.Owner{Namespace: tc.crowd, UID: "crowd-" + strconv.Itoa(i)}
				if _, err := creds.Get(o, credentials.Want{Rotation: "r1"}, nil, nil); err != nil {
					t.Fatal(err)
				}
				crowd = append(crowd, o)
			}

			cr := instance(withAuth("r2"))
			rec := &recorder{}
			e := &External{Target: newTarget(c), Settings: settings(t), Credentials: creds, Recorder: rec, Now: func() time.Time { return now }}
			o, err := e.Observe(ctx, cr)
			if got := errString(err); !strings.HasPrefix(got, tc.want.err) || (tc.want.err == "") != (err == nil) {
				t.Errorf("%s\nObserve(...): %q, want an error starting %q", tc.reason, got, tc.want.err)
			}
			if got := rotatedCondition(cr); got != tc.want.condition {
				t.Errorf("%s\nCredentialsRotated: %q, want %q", tc.reason, got, tc.want.condition)
			}
			if kept := before != nil && string(o.ConnectionDetails["password"]) == string(before["password"]); kept != tc.want.kept {
				t.Errorf("%s\nObserve(...) publishes the credentials held before: %t, want %t", tc.reason, kept, tc.want.kept)
			}
			if err == nil && tc.want.kept && !o.ResourceUpToDate {
				t.Errorf("%s\nwhile the rotation waits nothing may change, yet Observe finds drift: %s", tc.reason, o.Diff)
			}
			if err != nil {
				if _, cerr := e.Create(ctx, cr); cerr == nil || secretAt(t, c, "sessions-auth") != nil {
					t.Errorf("%s\nCreate(...) must create nothing while no credentials may serve", tc.reason)
				}
			}
			// The next reconcile, of the Instance as Observe left it, announces nothing again.
			e = &External{Target: newTarget(c), Settings: settings(t), Credentials: creds, Recorder: rec, Now: func() time.Time { return now }}
			_, _ = e.Observe(ctx, cr)
			if diff := cmp.Diff(tc.want.events, rec.reasons, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nevents over two reconciles: -want, +got:\n%s", tc.reason, diff)
			}

			for _, o := range crowd {
				creds.Forget(o.UID)
			}
			after, err := once(t, c, creds, now, cr)
			if err != nil {
				t.Fatalf("%s\nonce the crowd's credentials are stored: %v", tc.reason, err)
			}
			if len(after["password"]) != 32 || string(after["password"]) == string(before["password"]) {
				t.Errorf("%s\nonce the crowd's credentials are stored, the Instance gets new credentials", tc.reason)
			}
			if got := rotatedCondition(cr); got != tc.want.after {
				t.Errorf("%s\nCredentialsRotated once the crowd is gone: %q, want %q", tc.reason, got, tc.want.after)
			}
			if again, _ := once(t, c, creds, now, cr); string(again["password"]) != string(after["password"]) {
				t.Errorf("%s\nthe rotation happens once: the next reconcile reads the credentials back", tc.reason)
			}
		})
	}
}

// rotatedCondition is cr's CredentialsRotated status/reason, "" when it has none.
func rotatedCondition(cr *v1alpha1.Instance) string {
	c := cr.GetCondition(credentials.ConditionRotated)
	if c.Reason == "" {
		return ""
	}
	return string(c.Status) + "/" + string(c.Reason)
}
