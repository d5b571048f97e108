package kube

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/example/function-memcached/apis/memcached/v1alpha1"
)

// kubeconfig returns a kubeconfig for https://target.example.com:6443 whose user is
// described by user (YAML lines, indented by six spaces).
func kubeconfig(user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: target
contexts:
- name: target
  context: {cluster: target, user: admin}
clusters:
- name: target
  cluster:
    server: https://target.example.com:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
` + user)
}

var tokenUser = "      token: s3cr3t\n"

func TestFromKubeconfig(t *testing.T) {
	type want struct {
		host, token string
		err         string
	}
	cases := map[string]struct {
		reason string
		data   []byte
		want   want
	}{
		"Token": {
			reason: "An inline token is the common way to reach another cluster.",
			data:   kubeconfig(tokenUser),
			want:   want{host: "https://target.example.com:6443", token: "s3cr3t"},
		},
		"Garbage": {
			reason: "A Secret key that holds no kubeconfig says so.",
			data:   []byte("{not yaml"),
			want:   want{err: "cannot parse kubeconfig: yaml: line 1: did not find expected ',' or '}'"},
		},
		"NoCurrentContext": {
			reason: "Without a current context there is no cluster to pick.",
			data:   []byte("apiVersion: v1\nkind: Config\nclusters: []\n"),
			want:   want{err: `kubeconfig has no current context ""`},
		},
		"Exec": {
			reason: "An exec plugin would run a command of the Secret writer's choosing in the provider's pod.",
			data:   kubeconfig("      exec:\n        apiVersion: client.authentication.k8s.io/v1\n        command: /bin/sh\n"),
			want:   want{err: `user "admin" runs an exec credential plugin, which the provider does not allow: use a token or client certificate`},
		},
		"AuthProvider": {
			reason: "Auth-provider plugins run code and read files in the provider's pod.",
			data:   kubeconfig("      auth-provider:\n        name: oidc\n"),
			want:   want{err: `user "admin" uses auth-provider "oidc", which the provider does not allow: use a token or client certificate`},
		},
		"TokenFile": {
			reason: "A token file could be the provider's own service account token.",
			data:   kubeconfig("      tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n"),
			want:   want{err: `user "admin" reads credentials from a file: embed token, client-certificate-data and client-key-data instead`},
		},
		"ClientCertificateFile": {
			reason: "Client certificates must be embedded too.",
			data:   kubeconfig("      client-certificate: /tmp/cert.pem\n      client-key: /tmp/key.pem\n"),
			want:   want{err: `user "admin" reads credentials from a file: embed token, client-certificate-data and client-key-data instead`},
		},
		"CertificateAuthorityFile": {
			reason: "The cluster's CA must be embedded as well.",
			data: []byte(`apiVersion: v1
kind: Config
current-context: target
contexts:
- name: target
  context: {cluster: target, user: admin}
clusters:
- name: target
  cluster:
    server: https://target.example.com:6443
    certificate-authority: /etc/ca.crt
users:
- name: admin
  user: {token: s3cr3t}
`),
			want: want{err: `cluster "target" reads certificate-authority from a file: embed certificate-authority-data instead`},
		},
		"NoCluster": {
			reason: "A context naming a cluster the kubeconfig lacks is reported as such, not as a missing environment variable.",
			data:   []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: x, user: u}\n"),
			want:   want{err: `context "c" names cluster "x", which the kubeconfig does not define`},
		},
		"NoServer": {
			reason: "A cluster without a server address is unusable.",
			data:   []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: x, user: u}\nclusters:\n- name: x\n  cluster: {insecure-skip-tls-verify: true}\n"),
			want:   want{err: `cluster "x" has no server`},
		},
		"AnonymousUser": {
			reason: "A context naming no defined user connects anonymously, as kubectl would; the target cluster decides what that may do.",
			data:   []byte("apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: x, user: u}\nclusters:\n- name: x\n  cluster: {server: 'https://x'}\n"),
			want:   want{host: "https://x"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc, err := FromKubeconfig(tc.data)
			got := want{}
			if err != nil {
				got.err = err.Error()
			} else {
				got.host, got.token = rc.Host, rc.BearerToken
				if rc.UserAgent != UserAgent {
					t.Errorf("\n%s\nFromKubeconfig(...).UserAgent = %q, want %q", tc.reason, rc.UserAgent, UserAgent)
				}
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nFromKubeconfig(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func secret(namespace, name, key string, data []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{key: data}}
}

func TestCredentialsFor(t *testing.T) {
	type args struct {
		objs      []client.Object
		namespace string
		ref       *xpv2.ProviderConfigReference
	}
	type want struct {
		creds Credentials
		err   string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NoRef": {
			reason: "An Instance must name a config; the CRD defaults one, so this is a hand-made object.",
			args:   args{namespace: "team-a"},
			want:   want{err: "spec.providerConfigRef is not set"},
		},
		"UnknownKind": {
			reason: "Only the provider's two config kinds are understood.",
			args:   args{namespace: "team-a", ref: &xpv2.ProviderConfigReference{Kind: "Provider", Name: "x"}},
			want:   want{err: `spec.providerConfigRef.kind "Provider" is not supported: use ProviderConfig or ClusterProviderConfig`},
		},
		"ProviderConfigNotFound": {
			reason: "A namespaced ProviderConfig is looked up in the Instance's namespace.",
			args:   args{namespace: "team-a", ref: &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "target"}},
			want:   want{err: `cannot get ProviderConfig team-a/target: providerconfigs.memcached.example.com "target" not found`},
		},
		"ProviderConfig": {
			reason: "A namespaced ProviderConfig's Secret is in its own namespace.",
			args: args{
				objs: []client.Object{&v1alpha1.ProviderConfig{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "target"},
					Spec: v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.ProviderCredentials{
						Source:    xpv2.CredentialsSourceSecret,
						SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "kubeconfig"}, Key: "config"},
					}},
				}},
				namespace: "team-a",
				ref:       &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "target"},
			},
			want: want{creds: Credentials{
				Source:    xpv2.CredentialsSourceSecret,
				SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "team-a", Name: "kubeconfig"}, Key: "config"},
			}},
		},
		"ProviderConfigInjectedIdentity": {
			reason: "A namespace's ProviderConfig must not act as the provider in the control plane, even if written around the CRD's schema.",
			args: args{
				objs: []client.Object{&v1alpha1.ProviderConfig{
					ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "target"},
					Spec:       v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.ProviderCredentials{Source: xpv2.CredentialsSourceInjectedIdentity}},
				}},
				namespace: "team-a",
				ref:       &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "target"},
			},
			want: want{err: "ProviderConfig team-a/target: source InjectedIdentity is only allowed in a ClusterProviderConfig"},
		},
		"ClusterProviderConfigNotFound": {
			reason: "The default reference names a ClusterProviderConfig that may not exist yet.",
			args:   args{namespace: "team-a", ref: &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}},
			want:   want{err: `cannot get ClusterProviderConfig "default": clusterproviderconfigs.memcached.example.com "default" not found`},
		},
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig names the Secret's namespace itself.",
			args: args{
				objs: []client.Object{&v1alpha1.ClusterProviderConfig{
					ObjectMeta: metav1.ObjectMeta{Name: "default"},
					Spec: v1alpha1.ClusterProviderConfigSpec{Credentials: v1alpha1.ClusterProviderCredentials{
						Source:    xpv2.CredentialsSourceSecret,
						SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"},
					}},
				}},
				namespace: "team-a",
				ref:       &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
			},
			want: want{creds: Credentials{
				Source:    xpv2.CredentialsSourceSecret,
				SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.args.objs...).Build()
			creds, err := CredentialsFor(context.Background(), c, tc.args.namespace, tc.args.ref)
			got := want{creds: creds}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nCredentialsFor(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRESTConfig(t *testing.T) {
	identity := &rest.Config{Host: "https://control-plane:443", BearerToken: "provider"}
	ref := &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"}
	type args struct {
		objs     []client.Object
		identity *rest.Config
		creds    Credentials
	}
	type want struct {
		host, token string
		err         string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"InjectedIdentity": {
			reason: "InjectedIdentity is the provider's own configuration, in the cluster it runs in.",
			args:   args{identity: identity, creds: Credentials{Source: xpv2.CredentialsSourceInjectedIdentity}},
			want:   want{host: "https://control-plane:443", token: "provider"},
		},
		"NoIdentity": {
			reason: "Without a configuration of its own, the provider cannot inject one.",
			args:   args{creds: Credentials{Source: xpv2.CredentialsSourceInjectedIdentity}},
			want:   want{err: "source InjectedIdentity: the provider has no identity of its own to inject"},
		},
		"Secret": {
			reason: "A kubeconfig in a Secret reaches the cluster it names.",
			args: args{
				objs:  []client.Object{secret("crossplane-system", "target", "kubeconfig", kubeconfig(tokenUser))},
				creds: Credentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			},
			want: want{host: "https://target.example.com:6443", token: "s3cr3t"},
		},
		"NoSecretRef": {
			reason: "Source Secret needs a secretRef; the CRD requires it, this catches hand-made objects.",
			args:   args{creds: Credentials{Source: xpv2.CredentialsSourceSecret}},
			want:   want{err: "source Secret: credentials.secretRef must name a Secret and a key"},
		},
		"MissingSecret": {
			reason: "A missing Secret is named with its namespace.",
			args:   args{creds: Credentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref}},
			want:   want{err: `credentials Secret crossplane-system/target: cannot get credentials secret: secrets "target" not found`},
		},
		"MissingKey": {
			reason: "A Secret without the key is as good as none, and the message names the key.",
			args: args{
				objs:  []client.Object{secret("crossplane-system", "target", "config", kubeconfig(tokenUser))},
				creds: Credentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			},
			want: want{err: `credentials Secret crossplane-system/target has no key "kubeconfig"`},
		},
		"BadKubeconfig": {
			reason: "A bad kubeconfig names the Secret and key it came from.",
			args: args{
				objs:  []client.Object{secret("crossplane-system", "target", "kubeconfig", []byte("{not yaml"))},
				creds: Credentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			},
			want: want{err: `invalid kubeconfig in Secret crossplane-system/target key "kubeconfig": cannot parse kubeconfig: yaml: line 1: did not find expected ',' or '}'`},
		},
		"UnsupportedSource": {
			reason: "Environment and Filesystem sources would read the provider's own environment and files.",
			args:   args{creds: Credentials{Source: xpv2.CredentialsSourceFilesystem}},
			want:   want{err: `credentials source "Filesystem" is not supported: use Secret or InjectedIdentity`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.args.objs...).Build()
			rc, err := RESTConfig(context.Background(), c, tc.args.identity, tc.args.creds)
			got := want{}
			if err != nil {
				got.err = err.Error()
			} else {
				got.host, got.token = rc.Host, rc.BearerToken
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nRESTConfig(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if identity.UserAgent != "" {
		t.Errorf("RESTConfig(...) changed the provider's own configuration: UserAgent = %q", identity.UserAgent)
	}
}

func TestNew(t *testing.T) {
	c, err := New(&rest.Config{Host: "https://target.example.com:6443"})
	if err != nil {
		t.Fatalf("New(...): %v", err)
	}
	// The static mapper answers without discovery, which the unreachable host proves.
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		namespaced, err := c.IsObjectNamespaced(o)
		if err != nil || !namespaced {
			t.Errorf("IsObjectNamespaced(%T) = %v, %v; want true, nil", o, namespaced, err)
		}
	}
	if _, err := New(&rest.Config{Host: "https://target", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not a certificate")}}); err == nil {
		t.Error("New(...) with an invalid CA: want an error, got none")
	}
}
