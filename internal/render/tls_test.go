package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestTLSSecretCopy checks what the pods of a Memcached with TLS read: the function's copy of
// the accepted pair, which holds the pair and the CA and records the pair's digest and where
// it came from, and never the tenant's Secret itself, which a bad renewal may change under a
// restarting replica.
func TestTLSSecretCopy(t *testing.T) {
	m := base()
	m.TLS = &TLS{SecretName: "sessions-tls", Certificate: "CERT", PrivateKey: "KEY", CA: "CA", Digest: "running"}
	s := TLSSecret(m)
	want := map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY"), "ca.crt": []byte("CA")}
	if diff := cmp.Diff(want, s.Data); diff != "" {
		t.Errorf("TLSSecret(...).Data: -want, +got:\n%s", diff)
	}
	if s.Name != "sessions-tls-active" || s.Type != corev1.SecretTypeTLS {
		t.Errorf("TLSSecret(...) is %s of type %s, want sessions-tls-active of type %s", s.Name, s.Type, corev1.SecretTypeTLS)
	}
	wantAnnotations := map[string]string{AnnotationCertificate: Digest([]byte("CERT"), []byte{0}, []byte("KEY")), AnnotationTLSSource: "sessions-tls"}
	if diff := cmp.Diff(wantAnnotations, s.Annotations); diff != "" {
		t.Errorf("TLSSecret(...).Annotations: -want, +got:\n%s", diff)
	}
	pod := Deployment(m).Spec.Template
	var mounted []string
	for _, v := range pod.Spec.Volumes {
		mounted = append(mounted, v.Secret.SecretName)
	}
	if diff := cmp.Diff([]string{"sessions-tls-active"}, mounted); diff != "" {
		t.Errorf("the pods mount Secrets: -want, +got:\n%s", diff)
	}
	// The pods' digest is the one the function decided (the running pair's until the copy
	// holds the new one), not the copy's.
	if got := pod.Annotations[AnnotationCertificate]; got != "running" {
		t.Errorf("pod template %s = %q, want the decided digest %q", AnnotationCertificate, got, "running")
	}
	m.TLS.CA = ""
	if _, ok := TLSSecret(m).Data["ca.crt"]; ok {
		t.Error("a copy of a Secret without ca.crt has one")
	}
}
