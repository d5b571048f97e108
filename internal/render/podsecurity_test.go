package render

import (
	"testing"

	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// TestPodSecurityRestricted evaluates every rendered pod shape with the Kubernetes Pod
// Security Standards' own policy library, at the "restricted" level the API server enforces
// in namespaces labelled pod-security.kubernetes.io/enforce=restricted.
func TestPodSecurityRestricted(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	cases := map[string]Memcached{
		"Single":          {Size: 1},
		"HighlyAvailable": {Size: 3, HighAvailability: true},
		"WithMetrics":     {Size: 2, HighAvailability: true, Metrics: true, ExporterImage: "prom/memcached-exporter:v0.15.4"},
		// Secret volumes, fsGroup and the auth proxy sidecar stay within the standard.
		"WithAuthTLSAndProxy": {Size: 2, HighAvailability: true, Metrics: true, ExporterImage: "prom/memcached-exporter:v0.15.4",
			Auth: &Auth{Username: "memcached", Password: "p"}, AuthProxyImage: "memcached-auth-proxy:1",
			TLS: &TLS{SecretName: "s-tls", Digest: "d"}, MaxItemSizeMB: 4,
			Scheduling: &Scheduling{NodeSelector: map[string]string{"pool": "cache"}, PriorityClassName: "high"}},
		// emptyDir and generic ephemeral volumes are among the volume types the standard allows.
		"WithExternalStorageEmptyDir": {Size: 2, HighAvailability: true, ExternalStorage: &ExternalStorage{SizeMB: 1024}},
		"WithExternalStorageEphemeral": {Size: 2, HighAvailability: true, Metrics: true, ExporterImage: "prom/memcached-exporter:v0.15.4",
			Auth: &Auth{Username: "memcached", Password: "p"}, AuthProxyImage: "memcached-auth-proxy:1",
			ExternalStorage: &ExternalStorage{SizeMB: 4096, StorageClassName: "local-ssd"}},
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			m.Name, m.Namespace, m.Image, m.MemoryLimitMB, m.MaxConnections, m.Threads = "s", "n", "memcached:1", 64, 1024, 4
			d := Deployment(m)
			res := policy.AggregateCheckResults(eval.EvaluatePod(restricted, &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec))
			if !res.Allowed {
				t.Errorf("pod violates the restricted Pod Security Standard: %s: %s", res.ForbiddenReason(), res.ForbiddenDetail())
			}
		})
	}
}
