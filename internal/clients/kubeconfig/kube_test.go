package kubeconfig

import (
	"context"
	"errors"
	"strings"
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

// namespacedKubeconfig returns a kubeconfig with a token user whose cluster entry is cluster
// (YAML lines, indented by four spaces).
func namespacedKubeconfig(cluster string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: target
contexts:
- name: target
  context: {cluster: target, user: admin}
clusters:
- name: target
  cluster:
` + cluster + `users:
- name: admin
  user: {token: s3cr3t}
`)
}

// caData is certificate-authority-data; its content is checked by TLS, not by the kubeconfig.
const caData = "    certificate-authority-data: Y2E=\n"

func TestFromKubeconfig(t *testing.T) {
	type want struct {
		host, token string
		err         string
	}
	cases := map[string]struct {
		reason     string
		data       []byte
		namespaced bool
		want       want
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
		"NamespacedVerifiedTLS": {
			reason:     "A namespaced ProviderConfig's kubeconfig over https with its own CA is accepted.",
			data:       namespacedKubeconfig("    server: https://target.example.com:6443\n" + caData),
			namespaced: true,
			want:       want{host: "https://target.example.com:6443", token: "s3cr3t"},
		},
		"NamespacedInsecure": {
			reason:     "Skipping TLS verification would let whoever writes the Secret send the token to any server.",
			data:       namespacedKubeconfig("    server: https://target.example.com:6443\n    insecure-skip-tls-verify: true\n"),
			namespaced: true,
			want:       want{err: `cluster "target" sets insecure-skip-tls-verify, which a namespaced ProviderConfig may not: embed the server's CA in certificate-authority-data`},
		},
		"NamespacedPlainHTTP": {
			reason:     "Plain http sends credentials in the clear.",
			data:       namespacedKubeconfig("    server: http://target.example.com:8080\n" + caData),
			namespaced: true,
			want:       want{err: `cluster "target": server "http://target.example.com:8080" is not https: a namespaced ProviderConfig must reach its cluster over https`},
		},
		"NamespacedProxy": {
			reason:     "A proxy would route the provider's requests, from inside the control plane, wherever the Secret's writer likes.",
			data:       namespacedKubeconfig("    server: https://target.example.com:6443\n" + caData + "    proxy-url: http://10.0.0.1:3128\n"),
			namespaced: true,
			want:       want{err: `cluster "target" sets proxy-url, which a namespaced ProviderConfig may not: the provider reaches the server directly`},
		},
		"NamespacedNoCA": {
			reason:     "Without CA data, TLS would be verified against the provider's own trust store, not the target cluster's CA.",
			data:       namespacedKubeconfig("    server: https://target.example.com:6443\n"),
			namespaced: true,
			want:       want{err: `cluster "target" has no certificate-authority-data: a namespaced ProviderConfig must embed the server's CA`},
		},
		"ClusterScopedInsecure": {
			reason: "A ClusterProviderConfig's Secret is the platform's own: insecure-skip-tls-verify stays its choice.",
			data:   namespacedKubeconfig("    server: https://target.example.com:6443\n    insecure-skip-tls-verify: true\n"),
			want:   want{host: "https://target.example.com:6443", token: "s3cr3t"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc, err := FromKubeconfig(tc.data, tc.namespaced)
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

func TestConfigFor(t *testing.T) {
	type args struct {
		objs      []client.Object
		namespace string
		ref       *xpv2.ProviderConfigReference
	}
	type want struct {
		cfg Config
		err string
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
			want: want{cfg: Config{Credentials: Credentials{
				Source:     xpv2.CredentialsSourceSecret,
				SecretRef:  &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "team-a", Name: "kubeconfig"}, Key: "config"},
				Namespaced: true,
			}}},
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
			reason: "A ClusterProviderConfig names the Secret's namespace itself, and says who may use it to place what where.",
			args: args{
				objs: []client.Object{&v1alpha1.ClusterProviderConfig{
					ObjectMeta: metav1.ObjectMeta{Name: "default"},
					Spec: v1alpha1.ClusterProviderConfigSpec{
						Credentials: v1alpha1.ClusterProviderCredentials{
							Source:    xpv2.CredentialsSourceSecret,
							SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"},
						},
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"memcached": "allowed"}},
						Placement:         v1alpha1.Placement{AllowedNamespaces: []string{"cache"}},
					},
				}},
				namespace: "team-a",
				ref:       &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"},
			},
			want: want{cfg: Config{
				Credentials: Credentials{
					Source:    xpv2.CredentialsSourceSecret,
					SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"},
				},
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"memcached": "allowed"}},
				Placement:         v1alpha1.Placement{AllowedNamespaces: []string{"cache"}},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.args.objs...).Build()
			cfg, err := ConfigFor(context.Background(), c, tc.args.namespace, tc.args.ref)
			got := want{cfg: cfg}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nConfigFor(...): -want, +got:\n%s", tc.reason, diff)
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
	for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}, &corev1.Pod{}} {
		namespaced, err := c.IsObjectNamespaced(o)
		if err != nil || !namespaced {
			t.Errorf("IsObjectNamespaced(%T) = %v, %v; want true, nil", o, namespaced, err)
		}
	}
	if _, err := New(&rest.Config{Host: "https://target", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not a certificate")}}); err == nil {
		t.Error("New(...) with an invalid CA: want an error, got none")
	}
}

func TestVersion(t *testing.T) {
	ref := &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		creds  Credentials
		want   string
		err    string
	}{
		"InjectedIdentity": {
			reason: "The provider's own identity has one version.",
			creds:  Credentials{Source: xpv2.CredentialsSourceInjectedIdentity},
			want:   "InjectedIdentity",
		},
		"Secret": {
			reason: "A Secret's version names it, its key and its resourceVersion, so that any change to it makes a new client.",
			objs:   []client.Object{secret("crossplane-system", "target", "kubeconfig", kubeconfig(tokenUser))},
			creds:  Credentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			want:   "Secret crossplane-system/target key kubeconfig version 999",
		},
		"MissingSecret": {
			reason: "A deleted Secret has no version, and says which Secret is missing.",
			creds:  Credentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			err:    `cannot get credentials Secret crossplane-system/target: secrets "target" not found`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.objs...).Build()
			got, err := tc.creds.Version(context.Background(), c)
			if diff := cmp.Diff(tc.err, errString(err)); diff != "" {
				t.Errorf("\n%s\nVersion(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nVersion(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTrim(t *testing.T) {
	page := "<html>\n<body>" + strings.Repeat("Bad gateway. ", 100) + "</body></html>"
	cases := map[string]struct {
		reason string
		err    error
		want   string
	}{
		"Nil":   {reason: "No error stays none.", err: nil, want: ""},
		"Short": {reason: "A short error is kept as it is.", err: errors.New("connection refused"), want: "connection refused"},
		"Lines": {reason: "An error over several lines reads on one.", err: errors.New("forbidden:\n  user x\tcannot list"), want: "forbidden: user x cannot list"},
		"Page": {
			reason: "A proxy's error page is cut, saying how much was left out.",
			err:    errors.New("an error on the server (\"" + page + "\") has prevented the request from succeeding"),
			want:   (`an error on the server ("<html> <body>` + strings.Repeat("Bad gateway. ", 100))[:MaxErrorLength] + "… (884 more bytes)",
		},
		"Runes": {
			reason: "A cut never splits a character.",
			err:    errors.New(strings.Repeat("a", MaxErrorLength-1) + "é and more"),
			want:   strings.Repeat("a", MaxErrorLength-1) + "… (11 more bytes)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, errString(Trim(tc.err))); diff != "" {
				t.Errorf("\n%s\nTrim(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
