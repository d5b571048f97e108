package render

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/example/function-memcached/internal/pki"
)

// TestOnlyMemcachedGatesReadiness: in every mode with metrics on, memcached is the one
// container with a readiness probe, so a sidecar that hangs or crashes never takes a serving
// replica out of its Service (a pod is Ready only while every container is, and a container
// without a readiness probe is Ready while it runs). Every sidecar has a liveness probe the
// kubelet restarts it by: HTTP (a stopped process still completes a TCP handshake), on a port
// the container declares and, for the auth proxy, listens on; on a page that never reaches
// memcached (not the exporter's /metrics or /scrape); tolerant of a slow node; and killing
// in seconds, not the pod's 30 s, since a stopped process never handles SIGTERM.
func TestOnlyMemcachedGatesReadiness(t *testing.T) {
	certs := pki.Certificates{CA: "ca", CAKey: "ca-key", Client: "client", ClientKey: "client-key", Server: "server", ServerKey: "server-key"}
	type want struct {
		// Containers are the pod's containers, and Ready those with a readiness probe.
		Containers, Ready []string
		// Liveness is each sidecar's liveness probe: "GET <port number>/<path>".
		Liveness map[string]string
	}
	cases := map[string]struct {
		reason string
		auth   *Auth
		tls    *TLS
		want   want
	}{
		"NoAuth": {
			reason: "Without auth the exporter is the one sidecar: restarted on its landing page, never gating readiness.",
			want: want{
				Containers: []string{ContainerName, ExporterContainerName},
				Ready:      []string{ContainerName},
				Liveness:   map[string]string{ExporterContainerName: "GET 9150/"},
			},
		},
		"Password": {
			reason: "With a password the auth proxy runs too, restarted on its own health port.",
			auth:   &Auth{Username: "memcached", Password: "pw", Salt: "0123456789abcdef"},
			want: want{
				Containers: []string{ContainerName, ExporterContainerName, AuthProxyContainerName},
				Ready:      []string{ContainerName},
				Liveness:   map[string]string{ExporterContainerName: "GET 9150/", AuthProxyContainerName: "GET 9151/healthz"},
			},
		},
		"SASLWithTLS": {
			reason: "With SASL and TLS the same: the proxy's health port is not its loopback listener.",
			auth:   &Auth{Mode: "SASL", Username: "memcached@memcached", Password: "pw", Salt: "0123456789abcdef"},
			tls:    &TLS{SecretName: "sessions-tls", Certificate: "crt", PrivateKey: "key", Digest: "d"},
			want: want{
				Containers: []string{ContainerName, ExporterContainerName, AuthProxyContainerName},
				Ready:      []string{ContainerName},
				Liveness:   map[string]string{ExporterContainerName: "GET 9150/", AuthProxyContainerName: "GET 9151/healthz"},
			},
		},
		"ClientCertificates": {
			reason: "With client certificates the exporter presents its own, with no proxy; its probe is plain HTTP on the metrics port all the same.",
			auth:   &Auth{Mode: "ClientCertificate", Certificates: certs, Salt: "0123456789abcdef"},
			tls:    IssuedTLS(certs),
			want: want{
				Containers: []string{ContainerName, ExporterContainerName},
				Ready:      []string{ContainerName},
				Liveness:   map[string]string{ExporterContainerName: "GET 9150/"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := base()
			m.Metrics, m.Auth, m.TLS = true, tc.auth, tc.tls
			got := want{Liveness: map[string]string{}}
			for _, c := range Deployment(m).Spec.Template.Spec.Containers {
				got.Containers = append(got.Containers, c.Name)
				if c.ReadinessProbe != nil {
					got.Ready = append(got.Ready, c.Name)
				}
				if c.Name == ContainerName {
					continue
				}
				p := c.LivenessProbe
				if p == nil || p.HTTPGet == nil {
					t.Errorf("%s\nsidecar %s: liveness probe %+v, want an HTTP GET", tc.reason, c.Name, p)
					continue
				}
				port := declaredPort(c, p.HTTPGet.Port.StrVal)
				got.Liveness[c.Name] = "GET " + strconv.Itoa(int(port)) + p.HTTPGet.Path
				if c.Name == AuthProxyContainerName && !containsArg(c.Args, "--health-listen=:"+strconv.Itoa(int(port))) {
					t.Errorf("%s\nthe auth proxy is probed on port %d but runs with %v", tc.reason, port, c.Args)
				}
				if p.HTTPGet.Path == "/metrics" || p.HTTPGet.Path == "/scrape" {
					t.Errorf("%s\nsidecar %s is probed on %s, which scrapes memcached: a slow memcached would restart it", tc.reason, c.Name, p.HTTPGet.Path)
				}
				if tolerated := p.PeriodSeconds * p.FailureThreshold; tolerated < 20 || p.TimeoutSeconds < 2 {
					t.Errorf("%s\nsidecar %s is restarted after %d s of failing probes that wait %d s each: a hair trigger on a slow node", tc.reason, c.Name, tolerated, p.TimeoutSeconds)
				}
				if g := p.TerminationGracePeriodSeconds; g == nil || *g > 5 {
					t.Errorf("%s\nsidecar %s's liveness kill waits %v s before SIGKILL, want at most 5 (a stopped process ignores SIGTERM)", tc.reason, c.Name, g)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nprobes: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// declaredPort is the number of c's port named name, or 0 when c declares none: a probe on
// a name the container does not declare is refused by the API server.
func declaredPort(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func containsArg(args []string, want string) bool {
	for _, a := range args {
		if strings.TrimSpace(a) == want {
			return true
		}
	}
	return false
}
