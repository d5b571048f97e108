package render

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/example/function-memcached/internal/pki"
)

// TestAuthModes checks what each authentication mode makes the pods run with and hands on:
// memcached's flags and environment, the exporter's, whether the auth proxy runs, what of the
// auth Secret the pods mount, and the keys of the auth and connection Secrets.
func TestAuthModes(t *testing.T) {
	certs := pki.Certificates{CA: "ca", CAKey: "ca-key", Client: "client", ClientKey: "client-key", Server: "server", ServerKey: "server-key"}
	password := &Auth{Username: "memcached", Password: "pw", Salt: "0123456789abcdef"}
	type want struct {
		MemcachedArgs, MemcachedEnv, ExporterArgs, ExporterMounts, Containers, AuthProxyArgs, Mounted, AuthKeys, ConnectionKeys []string
	}
	cases := map[string]struct {
		reason string
		auth   *Auth
		tls    *TLS
		want   want
	}{
		"Password": {
			reason: "memcached reads the auth file; the exporter goes through the auth proxy, which sends the password as text.",
			auth:   password,
			want: want{
				MemcachedArgs:  []string{"--auth-file=/etc/memcached/auth/auth-file"},
				ExporterArgs:   []string{"--memcached.address=127.0.0.1:11213"},
				Containers:     []string{"memcached", "exporter", "auth-proxy"},
				AuthProxyArgs:  []string{"--listen=127.0.0.1:11213", "--upstream=127.0.0.1:11211", "--credentials=/etc/memcached/auth", "--health-listen=:9151"},
				Mounted:        []string{"*"},
				AuthKeys:       []string{"auth-file", "credentials-salt", "password", "username"},
				ConnectionKeys: []string{"endpoint", "host", "password", "port", "srv", "username"},
			},
		},
		"SASL": {
			reason: "memcached runs SASL with the password file and PLAIN only; the auth proxy speaks SASL and the binary protocol for the exporter.",
			auth:   &Auth{Mode: "SASL", Username: "memcached@memcached", Password: "pw", Salt: "0123456789abcdef"},
			want: want{
				MemcachedArgs:  []string{"--enable-sasl"},
				MemcachedEnv:   []string{"MEMCACHED_SASL_PWDB=/etc/memcached/auth/sasl-pwdb", "SASL_CONF_PATH=/etc/memcached/auth"},
				ExporterArgs:   []string{"--memcached.address=127.0.0.1:11213"},
				Containers:     []string{"memcached", "exporter", "auth-proxy"},
				AuthProxyArgs:  []string{"--listen=127.0.0.1:11213", "--upstream=127.0.0.1:11211", "--credentials=/etc/memcached/auth", "--health-listen=:9151", "--upstream-protocol=sasl"},
				Mounted:        []string{"*"},
				AuthKeys:       []string{"credentials-salt", "memcached.conf", "password", "sasl-pwdb", "username"},
				ConnectionKeys: []string{"endpoint", "host", "password", "port", "srv", "username"},
			},
		},
		"ClientCertificatesIssued": {
			reason: "memcached requires a certificate its CA signed on every connection, with no plaintext listener; the exporter presents the client's and verifies memcached's with the CA; the pods never mount the CA's key.",
			auth:   &Auth{Mode: "ClientCertificate", Certificates: certs, Salt: "0123456789abcdef"},
			tls:    IssuedTLS(certs),
			want: want{
				MemcachedArgs: []string{"--enable-ssl", "--extended=ssl_chain_cert=/etc/memcached/tls/tls.crt", "--extended=ssl_key=/etc/memcached/tls/tls.key",
					"--listen=0.0.0.0", "--extended=ssl_ca_cert=/etc/memcached/tls/ca.crt", "--extended=ssl_verify_mode=2"},
				ExporterArgs: []string{"--memcached.address=127.0.0.1:11211", "--memcached.tls.enable", "--memcached.tls.cert-file=/etc/memcached/auth/tls.crt",
					"--memcached.tls.key-file=/etc/memcached/auth/tls.key", "--memcached.tls.server-name=sessions.team-a.svc.cluster.local",
					"--memcached.tls.ca-file=/etc/memcached/tls-ca/ca.crt"},
				ExporterMounts: []string{"/etc/memcached/auth", "/etc/memcached/tls-ca"},
				Containers:     []string{"memcached", "exporter"},
				Mounted:        []string{"ca.crt", "tls.crt", "tls.key"},
				AuthKeys:       []string{"ca.crt", "ca.key", "credentials-salt", "server.crt", "server.key", "tls.crt", "tls.key"},
				ConnectionKeys: []string{"ca.crt", "endpoint", "host", "port", "srv", "tls", "tls.crt", "tls.key"},
			},
		},
		"ClientCertificatesTenantPairWithoutCA": {
			reason: "With the tenant's pair and no ca.crt, the exporter, which dials 127.0.0.1, cannot verify memcached's certificate and says so by flag.",
			auth:   &Auth{Mode: "ClientCertificate", Certificates: certs, Salt: "0123456789abcdef"},
			tls:    &TLS{SecretName: "sessions-tls", Certificate: "crt", PrivateKey: "key", Digest: "d"},
			want: want{
				MemcachedArgs: []string{"--enable-ssl", "--extended=ssl_chain_cert=/etc/memcached/tls/tls.crt", "--extended=ssl_key=/etc/memcached/tls/tls.key",
					"--listen=0.0.0.0", "--extended=ssl_ca_cert=/etc/memcached/auth/ca.crt", "--extended=ssl_verify_mode=2"},
				ExporterArgs: []string{"--memcached.address=127.0.0.1:11211", "--memcached.tls.enable", "--memcached.tls.cert-file=/etc/memcached/auth/tls.crt",
					"--memcached.tls.key-file=/etc/memcached/auth/tls.key", "--memcached.tls.server-name=sessions.team-a.svc.cluster.local",
					"--memcached.tls.insecure-skip-verify"},
				ExporterMounts: []string{"/etc/memcached/auth"},
				Containers:     []string{"memcached", "exporter"},
				Mounted:        []string{"ca.crt", "tls.crt", "tls.key"},
				AuthKeys:       []string{"ca.crt", "ca.key", "credentials-salt", "server.crt", "server.key", "tls.crt", "tls.key"},
				ConnectionKeys: []string{"endpoint", "host", "port", "srv", "tls", "tls.crt", "tls.key"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := base()
			m.Metrics, m.AuthProxyImage, m.Auth, m.TLS = true, "proxy:1", tc.auth, tc.tls
			d := Deployment(m)
			var got want
			byName := map[string]corev1.Container{}
			for _, c := range d.Spec.Template.Spec.Containers {
				got.Containers = append(got.Containers, c.Name)
				byName[c.Name] = c
			}
			mc := byName[ContainerName]
			got.MemcachedArgs = mc.Args[4:] // After the size, connections, threads and port.
			for _, e := range mc.Env {
				got.MemcachedEnv = append(got.MemcachedEnv, e.Name+"="+e.Value)
			}
			got.ExporterArgs = byName[ExporterContainerName].Args
			for _, vm := range byName[ExporterContainerName].VolumeMounts {
				got.ExporterMounts = append(got.ExporterMounts, vm.MountPath)
			}
			got.AuthProxyArgs = byName[AuthProxyContainerName].Args
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Secret.SecretName != AuthSecretName(m) {
					continue
				}
				if len(v.Secret.Items) == 0 {
					got.Mounted = []string{"*"}
				}
				for _, it := range v.Secret.Items {
					got.Mounted = append(got.Mounted, it.Key)
				}
			}
			got.AuthKeys = slices.Sorted(maps.Keys(AuthSecret(m).Data))
			got.ConnectionKeys = slices.Sorted(maps.Keys(ConnectionDetails(m)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCredentialsDigestModes: with client certificates and a tenant's pair, the pods restart for what memcached
// reads at start (the CA bundle), not for a renewed client certificate, which memcached never
// reads.
func TestCredentialsDigestModes(t *testing.T) {
	a := Auth{Mode: "ClientCertificate", Salt: "0123456789abcdef", Certificates: pki.Certificates{CA: "ca", Client: "client"}}
	renewed := a
	renewed.Certificates.Client = "renewed client"
	newCA := a
	newCA.Certificates.CA = "ca2\nca"
	if CredentialsDigest(a) != CredentialsDigest(renewed) {
		t.Error("a renewed client certificate changes the pod template: every renewal would roll the replicas")
	}
	if CredentialsDigest(a) == CredentialsDigest(newCA) {
		t.Error("a renewed CA bundle does not change the pod template: memcached would never load it")
	}
}
