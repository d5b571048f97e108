package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCredentialsDigest shows what the pod template's credentials digest tells whoever may
// read a Deployment (the view role) but not the auth Secret.
func TestCredentialsDigest(t *testing.T) {
	const salt = "0123456789abcdef0123456789abcdef"
	annotation := func(a Auth) string {
		m := base()
		m.Auth = &a
		return Deployment(m).Spec.Template.Annotations[AnnotationCredentials]
	}
	weak := Auth{Username: "memcached", Password: "hunter2", Salt: salt}

	// An offline guess: the digest of each candidate password, as it would be without the
	// salt. The real password is among them.
	for _, guess := range []string{"password", "123456", "memcached", "hunter2", "letmein"} {
		if annotation(weak) == Digest([]byte(AuthFile(Auth{Username: "memcached", Password: guess}))) {
			t.Errorf("the pod template's digest of a salted weak password matches the unsalted digest of the guess %q: it can be brute-forced offline", guess)
		}
	}
	other := weak
	other.Salt = "fedcba9876543210fedcba9876543210"
	if annotation(weak) == annotation(other) {
		t.Error("two salts give the same digest: the salt does not key it")
	}
	changed := weak
	changed.Password = "hunter3"
	if annotation(weak) == annotation(changed) {
		t.Error("a new password does not change the digest: the replicas would keep the old one")
	}
	if annotation(weak) != annotation(weak) || len(annotation(weak)) != 16 {
		t.Errorf("the digest is not a stable 64-bit hex string: %q", annotation(weak))
	}
	// Credentials from before salts keep the digest their pods run with: this one is what
	// the function rendered for them before (fn/testdata/auth-steady), so an upgrade rolls
	// nothing.
	legacy := Auth{Username: "memcached", Password: "Zx81HqP2mVn4Rt6Yw0Lc3Bd5Fg7Jk9As"}
	if got, want := annotation(legacy), "fe8ad3f4b0331680"; got != want {
		t.Errorf("credentials without a salt: digest %q, want %q, the one their pods run with", got, want)
	}
}

// TestAuthSecretSalt shows where the salt lives: in the auth Secret, which the view role cannot
// read, and nowhere a claim's owner or application sees it.
func TestAuthSecretSalt(t *testing.T) {
	m := base()
	m.Auth = &Auth{Username: "memcached", Password: "hunter2", Salt: "0123456789abcdef0123456789abcdef"}
	if got := string(AuthSecret(m).Data[AuthSaltKey]); got != m.Auth.Salt {
		t.Errorf("AuthSecret(...).Data[%s] = %q, want the salt", AuthSaltKey, got)
	}
	for k, v := range ConnectionDetails(m) {
		if string(v) == m.Auth.Salt {
			t.Errorf("connection detail %s carries the salt", k)
		}
	}
	m.Auth.Salt = ""
	want := map[string][]byte{ConnectionUsername: []byte("memcached"), ConnectionPassword: []byte("hunter2"), AuthFileKey: []byte("memcached:hunter2\n")}
	if diff := cmp.Diff(want, AuthSecret(m).Data); diff != "" {
		t.Errorf("AuthSecret(...) of credentials without a salt, the Secret they came from unchanged: -want, +got:\n%s", diff)
	}
}
