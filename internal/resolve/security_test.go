package resolve

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/example/function-memcached/apis/cache/v1alpha1"
	"github.com/example/function-memcached/input/v1beta1"
	"github.com/example/function-memcached/internal/render"
)

// TestSecurity covers what a claim may ask of authentication, TLS, the NetworkPolicy,
// scheduling and the item size, under the platform's defaults and policy.
func TestSecurity(t *testing.T) {
	base := render.Memcached{
		Name: "sessions", Namespace: "team-a", Size: 1, Image: DefaultImage, MemoryLimitMB: 64,
		MaxConnections: 1024, Threads: 4, CPURequest: ptr.To(resource.MustParse("100m")),
		HighAvailability: true, ExporterImage: DefaultExporterImage, NetworkPolicy: &render.NetworkAccess{},
	}
	with := func(f func(*render.Memcached)) render.Memcached {
		m := base
		f(&m)
		return m
	}
	web := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "web"}}
	cases := map[string]struct {
		reason string
		spec   v1alpha1.MemcachedSpec
		in     *v1beta1.Input
		want   render.Memcached
		errs   []string
	}{
		"AuthOnByClaim": {
			reason: "A claim turns auth on; the credentials are the caller's to fill in.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(true)}},
			want:   with(func(m *render.Memcached) { m.Auth = &render.Auth{Mode: v1alpha1.AuthModePassword} }),
		},
		"AuthOnByPlatform": {
			reason: "The Input's defaults.auth.enabled applies to a claim that says nothing.",
			in:     &v1beta1.Input{Defaults: v1beta1.Defaults{Auth: v1beta1.AuthDefaults{Enabled: ptr.To(true)}}},
			want:   with(func(m *render.Memcached) { m.Auth = &render.Auth{Mode: v1alpha1.AuthModePassword} }),
		},
		"AuthRequiredDefaultsOn": {
			reason: "policy.requireAuth without a default of its own turns the built-in default on.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{RequireAuth: true}},
			want:   with(func(m *render.Memcached) { m.Auth = &render.Auth{Mode: v1alpha1.AuthModePassword} }),
		},
		"AuthRequiredRefusesOff": {
			reason: "policy.requireAuth refuses a claim turning auth off, naming both fields.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(false)}},
			in:     &v1beta1.Input{Policy: v1beta1.Policy{RequireAuth: true}},
			errs:   []string{"spec.auth.enabled: Invalid value: false: must be true (policy.requireAuth)"},
		},
		"AuthAndMetricsWithProxy": {
			reason: "Metrics with auth run the auth proxy the Input names.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(true)}, Metrics: &v1alpha1.Metrics{Enabled: ptr.To(true)}},
			in:     &v1beta1.Input{Defaults: v1beta1.Defaults{AuthProxyImage: "registry.example.com/memcached-auth-proxy:v1"}},
			want: with(func(m *render.Memcached) {
				m.Auth, m.Metrics, m.AuthProxyImage = &render.Auth{Mode: v1alpha1.AuthModePassword}, true, "registry.example.com/memcached-auth-proxy:v1"
			}),
		},
		"AuthAndMetricsWithoutProxy": {
			reason: "Without an auth proxy image, metrics cannot scrape a memcached that requires auth: the claim learns which Input field is missing.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(true)}, Metrics: &v1alpha1.Metrics{Enabled: ptr.To(true)}},
			errs: []string{"spec.metrics.enabled: Invalid value: true: cannot be true with auth mode Password here: the exporter cannot authenticate with a password " +
				"and reaches memcached through the auth proxy, whose image the platform has not set (defaults.authProxyImage)"},
		},
		"SASLAndMetricsWithoutProxy": {
			reason: "With SASL on, memcached speaks only the binary protocol, which the exporter does not: without the auth proxy, metrics are refused, saying why.",
			spec: v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(true), Mode: v1alpha1.AuthModeSASL},
				Metrics: &v1alpha1.Metrics{Enabled: ptr.To(true)}},
			errs: []string{"spec.metrics.enabled: Invalid value: true: cannot be true with auth mode SASL here: the exporter speaks neither SASL nor the binary protocol, " +
				"which is all memcached speaks with SASL on and reaches memcached through the auth proxy, whose image the platform has not set (defaults.authProxyImage)"},
		},
		"ClientCertificatesAndMetricsWithoutProxy": {
			reason: "With client certificates the exporter presents one itself: metrics need no auth proxy.",
			spec: v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(true), Mode: v1alpha1.AuthModeClientCertificate},
				Metrics: &v1alpha1.Metrics{Enabled: ptr.To(true)}},
			want: with(func(m *render.Memcached) {
				m.Auth, m.Metrics = &render.Auth{Mode: v1alpha1.AuthModeClientCertificate}, true
			}),
		},
		"ModeByPlatform": {
			reason: "The Input's defaults.auth.mode applies to a claim that names no mode.",
			in: &v1beta1.Input{Defaults: v1beta1.Defaults{Auth: v1beta1.AuthDefaults{Enabled: ptr.To(true),
				Mode: v1alpha1.AuthModeClientCertificate}}},
			want: with(func(m *render.Memcached) { m.Auth = &render.Auth{Mode: v1alpha1.AuthModeClientCertificate} }),
		},
		"ModeByClaimOverPlatform": {
			reason: "A claim's spec.auth.mode overrides the platform's default.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Mode: v1alpha1.AuthModeSASL, Rotation: "r1"}},
			in: &v1beta1.Input{Defaults: v1beta1.Defaults{Auth: v1beta1.AuthDefaults{Enabled: ptr.To(true),
				Mode: v1alpha1.AuthModeClientCertificate}}},
			want: with(func(m *render.Memcached) { m.Auth = &render.Auth{Mode: v1alpha1.AuthModeSASL, Rotation: "r1"} }),
		},
		"ModeNotAllowed": {
			reason: "policy.allowedAuthModes refuses a mode it does not list, naming the modes it allows.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(true), Mode: v1alpha1.AuthModePassword}},
			in: &v1beta1.Input{Defaults: v1beta1.Defaults{Auth: v1beta1.AuthDefaults{Mode: v1alpha1.AuthModeClientCertificate}},
				Policy: v1beta1.Policy{AllowedAuthModes: []string{v1alpha1.AuthModeClientCertificate, v1alpha1.AuthModeSASL}}},
			errs: []string{`spec.auth.mode: Invalid value: "Password": must be one of ClientCertificate, SASL (policy.allowedAuthModes)`},
		},
		"ModeUnknown": {
			reason: "A mode the API does not have (an Instance's forProvider, which no schema checks for the provider) is refused, listing the modes.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Enabled: ptr.To(true), Mode: "Kerberos"}},
			errs:   []string{`spec.auth.mode: Unsupported value: "Kerberos": supported values: "Password", "ClientCertificate", "SASL"`},
		},
		"ModeWithAuthOff": {
			reason: "A mode with authentication off would silently do nothing: the claim learns why.",
			spec:   v1alpha1.MemcachedSpec{Auth: &v1alpha1.Auth{Mode: v1alpha1.AuthModeSASL}},
			errs: []string{`spec.auth.mode: Invalid value: "SASL": chooses how clients authenticate, and authentication is off ` +
				`(spec.auth.enabled, or the platform's defaults.auth.enabled)`},
		},
		"TLS": {
			reason: "A TLS Secret name is kept for the caller to read the Secret.",
			spec:   v1alpha1.MemcachedSpec{TLS: &v1alpha1.TLS{SecretName: "sessions-tls"}},
			want:   with(func(m *render.Memcached) { m.TLS = &render.TLS{SecretName: "sessions-tls"} }),
		},
		"TLSBadName": {
			reason: "A Secret name that is not a name is refused before anything asks for it.",
			spec:   v1alpha1.MemcachedSpec{TLS: &v1alpha1.TLS{SecretName: "Sessions TLS"}},
			errs:   []string{`spec.tls.secretName: Invalid value: "Sessions TLS": must be a Secret name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		},
		"TLSTheCopy": {
			reason: "The function's own copy of the pair is not a Secret certificates are issued into: reading it back would freeze the pair forever.",
			spec:   v1alpha1.MemcachedSpec{TLS: &v1alpha1.TLS{SecretName: "sessions-tls-active"}},
			errs: []string{`spec.tls.secretName: Invalid value: "sessions-tls-active": is the function's copy of the pair the pods serve, not a Secret a certificate is issued into: ` +
				`name the Secret your certificate (cert-manager's spec.secretName) is written to`},
		},
		"NetworkPolicyOff": {
			reason: "A claim may turn the NetworkPolicy off unless the platform requires it.",
			spec:   v1alpha1.MemcachedSpec{NetworkPolicy: &v1alpha1.NetworkPolicy{Enabled: ptr.To(false)}},
			want:   with(func(m *render.Memcached) { m.NetworkPolicy = nil }),
		},
		"NetworkPolicyRequired": {
			reason: "policy.requireNetworkPolicy refuses turning it off.",
			spec:   v1alpha1.MemcachedSpec{NetworkPolicy: &v1alpha1.NetworkPolicy{Enabled: ptr.To(false)}},
			in:     &v1beta1.Input{Policy: v1beta1.Policy{RequireNetworkPolicy: true}},
			errs:   []string{"spec.networkPolicy.enabled: Invalid value: false: must be true (policy.requireNetworkPolicy)"},
		},
		"NetworkPolicyOffByPlatform": {
			reason: "A platform without NetworkPolicy enforcement may default it off.",
			in:     &v1beta1.Input{Defaults: v1beta1.Defaults{NetworkPolicy: v1beta1.NetworkPolicyDefaults{Enabled: ptr.To(false)}}},
			want:   with(func(m *render.Memcached) { m.NetworkPolicy = nil }),
		},
		"AllowedNamespacesByName": {
			reason: "Namespaces named by kubernetes.io/metadata.name are admitted by default, and metrics from the monitoring namespace.",
			spec: v1alpha1.MemcachedSpec{
				NetworkPolicy: &v1alpha1.NetworkPolicy{AllowedNamespaces: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
				}}},
				Metrics: &v1alpha1.Metrics{Enabled: ptr.To(true)},
			},
			in: &v1beta1.Input{Metrics: v1beta1.MetricsSettings{MonitoringNamespace: "monitoring", ServiceMonitor: true, PrometheusRule: true}},
			want: with(func(m *render.Memcached) {
				m.Metrics, m.ServiceMonitor, m.PrometheusRule = true, true, true
				m.NetworkPolicy = &render.NetworkAccess{MonitoringNamespace: "monitoring", AllowedNamespaces: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
				}}}
			}),
		},
		"AllowedNamespacesEmpty": {
			reason: "An empty selector would admit every namespace.",
			spec:   v1alpha1.MemcachedSpec{NetworkPolicy: &v1alpha1.NetworkPolicy{AllowedNamespaces: &metav1.LabelSelector{}}},
			errs:   []string{`spec.networkPolicy.allowedNamespaces: Invalid value: "{}": must name the namespaces it admits: an empty selector admits every namespace`},
		},
		"AllowedNamespacesForgeableKey": {
			reason: "A label key the policy does not allow could be set by whoever labels a namespace; NotIn admits what nobody listed.",
			spec: v1alpha1.MemcachedSpec{NetworkPolicy: &v1alpha1.NetworkPolicy{AllowedNamespaces: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"team": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}},
			}}},
			errs: []string{
				`spec.networkPolicy.allowedNamespaces.matchLabels[team]: Invalid value: "team": this label key is not allowed; policy.networkPolicy.allowedNamespaceLabels allows kubernetes.io/metadata.name`,
				`spec.networkPolicy.allowedNamespaces.matchExpressions[0].operator: Invalid value: "NotIn": must be In: a selector names the namespaces it admits`,
			},
		},
		"AllowedNamespacesPolicyKey": {
			reason: "A platform may allow its own namespace labels.",
			spec:   v1alpha1.MemcachedSpec{NetworkPolicy: &v1alpha1.NetworkPolicy{AllowedNamespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}}},
			in:     &v1beta1.Input{Policy: v1beta1.Policy{NetworkPolicy: v1beta1.NetworkPolicyPolicy{AllowedNamespaceLabels: []string{"team"}}}},
			want: with(func(m *render.Memcached) {
				m.NetworkPolicy = &render.NetworkAccess{AllowedNamespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}}
			}),
		},
		"AllowedNamespacesNone": {
			reason: "An empty allowedNamespaceLabels admits no other namespace at all.",
			spec:   v1alpha1.MemcachedSpec{NetworkPolicy: &v1alpha1.NetworkPolicy{AllowedNamespaces: web}},
			in:     &v1beta1.Input{Policy: v1beta1.Policy{NetworkPolicy: v1beta1.NetworkPolicyPolicy{AllowedNamespaceLabels: []string{}}}},
			errs:   []string{`spec.networkPolicy.allowedNamespaces.matchLabels[kubernetes.io/metadata.name]: Invalid value: "kubernetes.io/metadata.name": this platform admits no other namespace (policy.networkPolicy.allowedNamespaceLabels is empty)`},
		},
		"Scheduling": {
			reason: "Node selector, tolerations and priority class reach the renderer.",
			spec: v1alpha1.MemcachedSpec{Scheduling: &v1alpha1.Scheduling{
				NodeSelector:      map[string]string{"pool": "cache"},
				Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}},
				PriorityClassName: "cache-high",
			}},
			in: &v1beta1.Input{Policy: v1beta1.Policy{AllowedPriorityClasses: []string{"cache-high"}}},
			want: with(func(m *render.Memcached) {
				m.Scheduling = &render.Scheduling{
					NodeSelector:      map[string]string{"pool": "cache"},
					Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}},
					PriorityClassName: "cache-high",
				}
			}),
		},
		"SchedulingInvalid": {
			reason: "Each invalid scheduling field is named with its value and what it must be.",
			spec: v1alpha1.MemcachedSpec{Scheduling: &v1alpha1.Scheduling{
				NodeSelector: map[string]string{"bad key!": "x"},
				Tolerations: []corev1.Toleration{
					{Key: "dedicated", Operator: "Maybe", Effect: "Sometimes"},
					{Key: "gpu", Operator: corev1.TolerationOpExists, Value: "x", TolerationSeconds: ptr.To[int64](30), Effect: corev1.TaintEffectNoSchedule},
				},
				PriorityClassName: "batch",
			}},
			in: &v1beta1.Input{Policy: v1beta1.Policy{AllowedPriorityClasses: []string{"cache-high", "cache-low"}}},
			errs: []string{
				`spec.scheduling.nodeSelector[bad key!]: Invalid value: "bad key!": must be a label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`spec.scheduling.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"`,
				`spec.scheduling.tolerations[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
				`spec.scheduling.tolerations[1].value: Invalid value: "x": must be empty when operator is Exists`,
				`spec.scheduling.tolerations[1].tolerationSeconds: Invalid value: 30: must be unset unless effect is NoExecute`,
				`spec.scheduling.priorityClassName: Invalid value: "batch": must be one of cache-high, cache-low (policy.allowedPriorityClasses)`,
			},
		},
		"SystemPriorityClass": {
			reason: "The system- PriorityClasses are the cluster's own unless the platform hands one out.",
			spec:   v1alpha1.MemcachedSpec{Scheduling: &v1alpha1.Scheduling{PriorityClassName: "system-node-critical"}},
			errs:   []string{`spec.scheduling.priorityClassName: Invalid value: "system-node-critical": must not be a system- PriorityClass, which is for the cluster's own components, unless policy.allowedPriorityClasses names it`},
		},
		"MaxItemSize": {
			reason: "Values up to half the cache are allowed.",
			spec:   v1alpha1.MemcachedSpec{MaxItemSizeMB: ptr.To[int32](32)},
			want:   with(func(m *render.Memcached) { m.MaxItemSizeMB = 32 }),
		},
		"MaxItemSizeOverHalfTheCache": {
			reason: "memcached refuses an item size above half of its cache: the limit names both bounds.",
			spec:   v1alpha1.MemcachedSpec{MaxItemSizeMB: ptr.To[int32](33)},
			errs:   []string{"spec.maxItemSizeMB: Invalid value: 33: must be an integer between 1 and 32 (at most 128, and at most half of memoryLimitMB, 64)"},
		},
		"MaxItemSizeOver128": {
			reason: "A large cache still caps items at 128 MB.",
			spec:   v1alpha1.MemcachedSpec{MemoryLimitMB: ptr.To[int32](1024), MaxItemSizeMB: ptr.To[int32](256)},
			errs:   []string{"spec.maxItemSizeMB: Invalid value: 256: must be an integer between 1 and 128 (at most 128, and at most half of memoryLimitMB, 1024)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := NewSettings(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, errs := Memcached(field.NewPath("spec"), tc.spec, "sessions", "team-a", s)
			if diff := cmp.Diff(tc.errs, messages(errs)); diff != "" {
				t.Errorf("%s\nMemcached(...) errors: -want, +got:\n%s", tc.reason, diff)
			}
			if len(tc.errs) > 0 {
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nMemcached(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNewSettingsSecurity(t *testing.T) {
	checkNewSettings(t, map[string]settingsCase{
		"AuthDefaultAgainstPolicy": {
			reason: "A default the policy forbids is the platform's mistake.",
			in:     &v1beta1.Input{Defaults: v1beta1.Defaults{Auth: v1beta1.AuthDefaults{Enabled: ptr.To(false)}}, Policy: v1beta1.Policy{RequireAuth: true}},
			want:   "invalid function Input: defaults.auth.enabled: Invalid value: false: must be true (policy.requireAuth)",
		},
		"AuthModeDefaultAgainstPolicy": {
			reason: "A default mode the platform's own policy forbids would refuse every claim that names none: the platform hears so.",
			in: &v1beta1.Input{Defaults: v1beta1.Defaults{Auth: v1beta1.AuthDefaults{Mode: v1alpha1.AuthModePassword}},
				Policy: v1beta1.Policy{AllowedAuthModes: []string{v1alpha1.AuthModeClientCertificate}}},
			want: `invalid function Input: defaults.auth.mode: Invalid value: "Password": must be one of ClientCertificate (policy.allowedAuthModes)`,
		},
		"AuthModeBuiltInDefaultAgainstPolicy": {
			reason: "A policy that forbids the built-in default mode (Password) needs a default of its own.",
			in:     &v1beta1.Input{Policy: v1beta1.Policy{AllowedAuthModes: []string{v1alpha1.AuthModeSASL}}},
			want:   `invalid function Input: defaults.auth.mode: Invalid value: "Password": must be one of SASL (policy.allowedAuthModes)`,
		},
		"AuthModesUnknown": {
			reason: "A mode the API does not have is refused where the platform wrote it, listing the modes.",
			in: &v1beta1.Input{Defaults: v1beta1.Defaults{Auth: v1beta1.AuthDefaults{Mode: "Kerberos"}},
				Policy: v1beta1.Policy{AllowedAuthModes: []string{"LDAP"}}},
			want: `invalid function Input: [policy.allowedAuthModes[0]: Unsupported value: "LDAP": supported values: "Password", "ClientCertificate", "SASL", ` +
				`defaults.auth.mode: Unsupported value: "Kerberos": supported values: "Password", "ClientCertificate", "SASL"]`,
		},
		"NetworkPolicyDefaultAgainstPolicy": {
			reason: "The same for the NetworkPolicy.",
			in: &v1beta1.Input{Defaults: v1beta1.Defaults{NetworkPolicy: v1beta1.NetworkPolicyDefaults{Enabled: ptr.To(false)}},
				Policy: v1beta1.Policy{RequireNetworkPolicy: true}},
			want: "invalid function Input: defaults.networkPolicy.enabled: Invalid value: false: must be true (policy.requireNetworkPolicy)",
		},
		"PrometheusRuleWithoutServiceMonitor": {
			reason: "Alerts that select the series of a scrape the function does not compose would never fire: the platform hears so.",
			in:     &v1beta1.Input{Metrics: v1beta1.MetricsSettings{PrometheusRule: true}},
			want:   "invalid function Input: metrics.prometheusRule: Invalid value: true: needs metrics.serviceMonitor: the alerts read the series its scrape labels",
		},
		"PrometheusRuleWithServiceMonitor": {
			reason: "Both together are valid.",
			in:     &v1beta1.Input{Metrics: v1beta1.MetricsSettings{PrometheusRule: true, ServiceMonitor: true}},
		},
		"BadNames": {
			reason: "Label keys, the monitoring namespace, priority classes and the proxy image must be what they say.",
			in: &v1beta1.Input{
				Defaults: v1beta1.Defaults{AuthProxyImage: "proxy latest"},
				Metrics:  v1beta1.MetricsSettings{MonitoringNamespace: "Monitoring"},
				Policy: v1beta1.Policy{
					NetworkPolicy:          v1beta1.NetworkPolicyPolicy{AllowedNamespaceLabels: []string{"team", "-bad"}},
					AllowedPriorityClasses: []string{"High"},
				},
			},
			want: `invalid function Input: [defaults.authProxyImage: Invalid value: "proxy latest": must be a valid image reference, like memcached:1.6.39-alpine, ` +
				`policy.networkPolicy.allowedNamespaceLabels[1]: Invalid value: "-bad": must be a label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), ` +
				`metrics.monitoringNamespace: Invalid value: "Monitoring": must be a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), ` +
				`policy.allowedPriorityClasses[0]: Invalid value: "High": must be a PriorityClass name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]`,
		},
		"ProxyImageRegistry": {
			reason: "The auth proxy image must come from an allowed registry too.",
			in: &v1beta1.Input{Defaults: v1beta1.Defaults{Image: "registry.example.com/memcached:1", ExporterImage: "registry.example.com/exporter:1", AuthProxyImage: "ghcr.io/x/proxy:1"},
				Policy: v1beta1.Policy{AllowedRegistries: []string{"registry.example.com"}}},
			want: `invalid function Input: defaults.authProxyImage: Invalid value: "ghcr.io/x/proxy:1": registry ghcr.io is not allowed; policy.allowedRegistries allows registry.example.com`,
		},
	})
}

func TestRemote(t *testing.T) {
	m := render.Memcached{
		Auth: &render.Auth{Rotation: "r1"}, AuthProxyImage: "proxy:1", TLS: &render.TLS{SecretName: "sessions-cert"},
		NetworkPolicy: &render.NetworkAccess{MonitoringNamespace: "monitoring"}, ServiceMonitor: true, PrometheusRule: true, Metrics: true,
	}
	want := m
	want.ServiceMonitor, want.PrometheusRule = false, false
	if diff := cmp.Diff(want, Remote(m)); diff != "" {
		t.Errorf("A Memcached in another cluster keeps its authentication, TLS and NetworkPolicy, and drops only the ServiceMonitor and PrometheusRule, which belong to the Prometheus of the cluster it runs in.\nRemote(...): -want, +got:\n%s", diff)
	}
}

func TestCredentials(t *testing.T) {
	cases := map[string]struct {
		reason string
		data   map[string][]byte
		ok     bool
		salt   string
	}{
		"Generated":   {reason: "What the function generated reads back.", data: map[string][]byte{"username": []byte("memcached"), "password": []byte("abcDEF123")}, ok: true},
		"Punctuation": {reason: "Printable ASCII passwords a person set are kept.", data: map[string][]byte{"username": []byte("app"), "password": []byte("p@ss:w0rd!")}, ok: true},
		"NoPassword":  {reason: "A Secret missing its password cannot be used.", data: map[string][]byte{"username": []byte("memcached")}},
		"Space":       {reason: "memcached's text protocol separates username and password by a space.", data: map[string][]byte{"username": []byte("memcached"), "password": []byte("a b")}},
		"ColonInUser": {reason: "The auth file separates them by a colon.", data: map[string][]byte{"username": []byte("a:b"), "password": []byte("x")}},
		"TooLong":     {reason: "Bounded.", data: map[string][]byte{"username": []byte("memcached"), "password": bytes.Repeat([]byte("x"), MaxCredentialLength+1)}},
		"Newline":     {reason: "A newline would end the auth file's line.", data: map[string][]byte{"username": []byte("memcached"), "password": []byte("x\ny")}},
		"Salt": {reason: "The salt of the digest reads back with the credentials.", ok: true, salt: "0123456789abcdef",
			data: map[string][]byte{"username": []byte("memcached"), "password": []byte("x"), "credentials-salt": []byte("0123456789abcdef")}},
		"NoSalt": {reason: "An auth Secret from before salts is still usable, without one.", ok: true,
			data: map[string][]byte{"username": []byte("memcached"), "password": []byte("x")}},
		"ShortSalt": {reason: "A salt shorter than MinSaltLength (a hand edit) is no salt.", ok: true,
			data: map[string][]byte{"username": []byte("memcached"), "password": []byte("x"), "credentials-salt": []byte("short")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Credentials(tc.data)
			if ok != tc.ok {
				t.Fatalf("%s\nCredentials(...): want ok %t, got %t", tc.reason, tc.ok, ok)
			}
			if ok && (got.Username != string(tc.data["username"]) || got.Password != string(tc.data["password"]) || got.Salt != tc.salt) {
				t.Errorf("%s\nCredentials(...) = %+v", tc.reason, got)
			}
		})
	}
}

func TestNewCredentials(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		a, err := NewCredentials(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if a.Username != Username || len(a.Password) != PasswordLength || strings.Trim(a.Password, alphanumerics) != "" {
			t.Fatalf("NewCredentials() = %+v: want user %s and %d alphanumerics", a, Username, PasswordLength)
		}
		if got, ok := Credentials(render.AuthSecret(render.Memcached{Name: "sessions", Auth: &a}).Data); !ok || got != a {
			t.Fatalf("generated credentials %+v read back from their auth Secret as %+v, %t", a, got, ok)
		}
		if seen[a.Password] || seen[a.Salt] {
			t.Fatalf("NewCredentials() repeated a password or a salt")
		}
		seen[a.Password], seen[a.Salt] = true, true
	}
	// Bytes at and above 248 are rejected, not folded onto the first characters.
	a, err := NewCredentials(bytes.NewReader(append(append(bytes.Repeat([]byte{255}, 64), bytes.Repeat([]byte{1}, 64)...), bytes.Repeat([]byte{7}, SaltLength)...)))
	if err != nil || a.Password != strings.Repeat("B", PasswordLength) {
		t.Errorf("NewCredentials(biased bytes) = %q, %v: want only the unbiased bytes used", a.Password, err)
	}
	// The salt comes after the password, from bytes of its own.
	if a.Salt != strings.Repeat("\x07", SaltLength) {
		t.Errorf("NewCredentials(...).Salt = %q: want the %d bytes after the password's", a.Salt, SaltLength)
	}
	if _, err := NewCredentials(bytes.NewReader(nil)); err == nil {
		t.Error("NewCredentials(empty reader): want an error")
	}
}
