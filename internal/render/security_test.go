package render

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func base() Memcached {
	return Memcached{Name: "sessions", Namespace: "team-a", Size: 3, Image: "memcached:1", MemoryLimitMB: 64,
		MaxConnections: 1024, Threads: 4, HighAvailability: true, ExporterImage: "exporter:1"}
}

func TestNetworkPolicy(t *testing.T) {
	memcachedPort := networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(Port))}
	metricsPort := networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(MetricsPort))}
	sameNamespace := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "web"}}
	cases := map[string]struct {
		reason  string
		metrics bool
		auth    bool
		access  NetworkAccess
		want    []networkingv1.NetworkPolicyIngressRule
	}{
		"OwnNamespace": {
			reason: "By default only pods of the Memcached's own namespace reach memcached's port, and nothing reaches any other.",
			want:   []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{sameNamespace}, Ports: []networkingv1.NetworkPolicyPort{memcachedPort}}},
		},
		"AllowedNamespaces": {
			reason: "Selected namespaces reach memcached's port too.",
			access: NetworkAccess{AllowedNamespaces: web},
			want: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{sameNamespace, {NamespaceSelector: web}},
				Ports: []networkingv1.NetworkPolicyPort{memcachedPort}}},
		},
		"MetricsFromMonitoring": {
			reason:  "The metrics port is reachable from the monitoring namespace only, not from the Memcached's own.",
			metrics: true, access: NetworkAccess{MonitoringNamespace: "monitoring"},
			want: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{sameNamespace}, Ports: []networkingv1.NetworkPolicyPort{memcachedPort}},
				{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "monitoring"}}}},
					Ports: []networkingv1.NetworkPolicyPort{metricsPort}},
			},
		},
		"AuthProxyHealthPortClosed": {
			reason:  "With the auth proxy, its liveness port (AuthProxyHealthPort) is admitted to no one: only the node's kubelet, which a NetworkPolicy does not filter, probes it.",
			metrics: true, auth: true, access: NetworkAccess{MonitoringNamespace: "monitoring"},
			want: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{sameNamespace}, Ports: []networkingv1.NetworkPolicyPort{memcachedPort}},
				{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "monitoring"}}}},
					Ports: []networkingv1.NetworkPolicyPort{metricsPort}},
			},
		},
		"MetricsWithoutMonitoring": {
			reason:  "Without a monitoring namespace, no one reaches the metrics port.",
			metrics: true,
			want:    []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{sameNamespace}, Ports: []networkingv1.NetworkPolicyPort{memcachedPort}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := base()
			m.Metrics, m.NetworkPolicy = tc.metrics, &tc.access
			if tc.auth {
				m.Auth, m.AuthProxyImage = &Auth{Username: "memcached", Password: "p"}, "memcached-auth-proxy:1"
				if !slices.ContainsFunc(Deployment(m).Spec.Template.Spec.Containers, func(c corev1.Container) bool {
					return slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.ContainerPort == AuthProxyHealthPort })
				}) {
					t.Fatalf("%s\nno container serves AuthProxyHealthPort: the case proves nothing", tc.reason)
				}
			}
			np := NetworkPolicy(m)
			if diff := cmp.Diff(tc.want, np.Spec.Ingress); diff != "" {
				t.Errorf("%s\nNetworkPolicy(...).spec.ingress: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(SelectorLabels(m), np.Spec.PodSelector.MatchLabels); diff != "" {
				t.Errorf("%s\nthe NetworkPolicy must select exactly the Memcached's pods: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, np.Spec.PolicyTypes); diff != "" {
				t.Errorf("%s\npolicy types: -want, +got:\n%s", tc.reason, diff)
			}
			if len(np.Spec.Egress) > 0 {
				t.Errorf("%s\negress rules %+v, want none: the pods talk over loopback only, and a rule would let the exporter's /scrape?target= connect out", tc.reason, np.Spec.Egress)
			}
		})
	}
}

// TestSecretsRollPods shows that what memcached reads only at start is part of the pod
// template: a new password or certificate rolls the replicas; the same ones change nothing.
func TestSecretsRollPods(t *testing.T) {
	with := func(pw, cert string) Memcached {
		m := base()
		m.Auth = &Auth{Username: "memcached", Password: pw}
		m.TLS = &TLS{SecretName: "sessions-tls", Digest: cert}
		return m
	}
	template := func(m Memcached) string { return specHash(Deployment(m).Spec) }
	if template(with("a", "c1")) != template(with("a", "c1")) {
		t.Error("the same credentials and certificate render different Deployments")
	}
	if template(with("a", "c1")) == template(with("b", "c1")) {
		t.Error("a new password does not change the pod template: the replicas would keep the old one")
	}
	if template(with("a", "c1")) == template(with("a", "c2")) {
		t.Error("a renewed certificate does not change the pod template: the replicas would keep serving the old one")
	}
}

func TestContainers(t *testing.T) {
	cases := map[string]struct {
		reason string
		m      func(*Memcached)
		want   map[string][]string
	}{
		"Plain": {
			reason: "Without auth or TLS the exporter scrapes memcached on localhost, as before.",
			m:      func(m *Memcached) { m.Metrics = true },
			want:   map[string][]string{"exporter": {"--memcached.address=localhost:11211"}},
		},
		"TLS": {
			reason: "With TLS the exporter scrapes the plaintext loopback listener.",
			m:      func(m *Memcached) { m.Metrics, m.TLS = true, &TLS{SecretName: "t"} },
			want:   map[string][]string{"exporter": {"--memcached.address=127.0.0.1:11212"}},
		},
		"Auth": {
			reason: "With auth the exporter scrapes the auth proxy, which authenticates to memcached.",
			m: func(m *Memcached) {
				m.Metrics, m.Auth, m.AuthProxyImage = true, &Auth{Username: "u", Password: "p"}, "proxy:1"
			},
			want: map[string][]string{"exporter": {"--memcached.address=127.0.0.1:11213"},
				"auth-proxy": {"--listen=127.0.0.1:11213", "--upstream=127.0.0.1:11211", "--credentials=/etc/memcached/auth", "--health-listen=:9151"}},
		},
		"AuthAndTLS": {
			reason: "With both the proxy reaches memcached on its plaintext loopback listener.",
			m: func(m *Memcached) {
				m.Metrics, m.Auth, m.AuthProxyImage, m.TLS = true, &Auth{Username: "u", Password: "p"}, "proxy:1", &TLS{SecretName: "t"}
			},
			want: map[string][]string{"exporter": {"--memcached.address=127.0.0.1:11213"},
				"auth-proxy": {"--listen=127.0.0.1:11213", "--upstream=127.0.0.1:11212", "--credentials=/etc/memcached/auth", "--health-listen=:9151"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := base()
			tc.m(&m)
			got := map[string][]string{}
			for _, c := range Deployment(m).Spec.Template.Spec.Containers[1:] {
				got[c.Name] = c.Args
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nsidecar arguments: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConnectionDetailsSecurity(t *testing.T) {
	m := base()
	m.Auth = &Auth{Username: "memcached", Password: "p"}
	m.TLS = &TLS{SecretName: "t", CA: "-----BEGIN CERTIFICATE-----\n"}
	got := map[string]string{}
	for k, v := range ConnectionDetails(m) {
		got[k] = string(v)
	}
	want := map[string]string{"endpoint": "sessions.team-a.svc.cluster.local:11211", "host": "sessions.team-a.svc.cluster.local", "port": "11211",
		"srv":      "_memcached._tcp.sessions.team-a.svc.cluster.local",
		"username": "memcached", "password": "p", "tls": "true", "ca.crt": "-----BEGIN CERTIFICATE-----\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ConnectionDetails: -want, +got:\n%s", diff)
	}
}
