package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// TestName pins derived names: they must never change between releases, or an upgrade
// would replace every running Memcached. The hashes are sha256 prefixes of the input.
func TestName(t *testing.T) {
	long := strings.Repeat("cache", 20)
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"KeptAsTyped":  {reason: "A name that is already a DNS label is what the user sees.", in: "sessions", want: "sessions"},
		"Exactly63":    {reason: "63 characters still fit.", in: strings.Repeat("a", 63), want: strings.Repeat("a", 63)},
		"Dots":         {reason: "Claim names may hold dots, Service names may not.", in: "web.sessions", want: "web-sessions-a3ebb7e7"},
		"LeadingDigit": {reason: "A Service name must start with a letter.", in: "1cache", want: "m-1cache-4e62cb58"},
		"TooLong":      {reason: "A 100-character name is cut to 63 with a hash keeping it unique.", in: long, want: long[:54] + "-" + "0d1df6f6"},
		"Empty":        {reason: "Even nothing maps to a valid name.", in: "", want: "m-e3b0c442"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Name(tc.in)
			if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
				t.Errorf("%s\nName(%q) = %q is not a DNS-1035 label: %v", tc.reason, tc.in, got, errs)
			}
			if got != tc.want {
				t.Errorf("%s\nName(%q): want %q, got %q", tc.reason, tc.in, tc.want, got)
			}
		})
	}
	if Name("a.b") == Name("a-b") {
		t.Errorf("Name: a.b and a-b must not collide, both gave %q", Name("a-b"))
	}
}

// TestIsDNS1035Label proves isDNS1035Label agrees with validation.IsDNS1035Label: on every
// string of up to three characters from an alphabet of each kind of character a label may or
// may not hold, and at the length limit.
func TestIsDNS1035Label(t *testing.T) {
	const alphabet = "az09-.A_é\x00"
	in := []string{strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat("-", 61) + "a", strings.Repeat("a", 62) + "-"}
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		in = append(in, prefix)
		if n == 0 {
			return
		}
		for _, r := range alphabet {
			gen(prefix+string(r), n-1)
		}
	}
	gen("", 3)
	for _, s := range in {
		if got, want := isDNS1035Label(s), len(validation.IsDNS1035Label(s)) == 0; got != want {
			t.Errorf("isDNS1035Label(%q) = %t, validation.IsDNS1035Label says %t", s, got, want)
		}
	}
}

func TestMemoryMiB(t *testing.T) {
	cases := map[string]struct {
		reason string
		m      Memcached
		want   int64
	}{
		"Default":        {reason: "64 MB cache, 1024 connections: 64 + 32 + 16.", m: Memcached{MemoryLimitMB: 64, MaxConnections: 1024}, want: 112},
		"LargeCache":     {reason: "Overhead grows with the cache: 10% of 4096.", m: Memcached{MemoryLimitMB: 4096, MaxConnections: 1024}, want: 4096 + 409 + 16},
		"ManyConnection": {reason: "Connection buffers are paid for: 65536/64.", m: Memcached{MemoryLimitMB: 64, MaxConnections: 65536}, want: 64 + 32 + 1024},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MemoryMiB(tc.m); got != tc.want {
				t.Errorf("%s\nMemoryMiB(...): want %d, got %d", tc.reason, tc.want, got)
			}
		})
	}
}

// TestDeploymentRestricted checks the rules of the Kubernetes "restricted" Pod Security
// Standard on every container, with and without the exporter.
func TestDeploymentRestricted(t *testing.T) {
	for _, metrics := range []bool{false, true} {
		d := Deployment(Memcached{Name: "s", Namespace: "n", Size: 2, Image: "memcached:1", MemoryLimitMB: 64,
			MaxConnections: 1024, Threads: 4, Metrics: metrics, ExporterImage: "exporter:1"})
		pod := d.Spec.Template.Spec
		if !ptr.Deref(pod.SecurityContext.RunAsNonRoot, false) || ptr.Deref(pod.SecurityContext.RunAsUser, 0) == 0 {
			t.Errorf("metrics=%t: pod must run as a fixed non-root user, got %+v", metrics, pod.SecurityContext)
		}
		if pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("metrics=%t: pod seccomp profile must be RuntimeDefault", metrics)
		}
		want := map[bool]int{false: 1, true: 2}[metrics]
		if len(pod.Containers) != want {
			t.Fatalf("metrics=%t: want %d containers, got %d", metrics, want, len(pod.Containers))
		}
		for _, c := range pod.Containers {
			sc := c.SecurityContext
			if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
				sc.Capabilities == nil || !cmp.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("metrics=%t: container %s security context is not restricted: %+v", metrics, c.Name, sc)
			}
			if c.Resources.Limits.Memory().IsZero() {
				t.Errorf("metrics=%t: container %s has no memory limit", metrics, c.Name)
			}
		}
	}
}

func TestServiceIsHeadless(t *testing.T) {
	s := Service(Memcached{Name: "s", Namespace: "n", Metrics: true})
	if s.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service: clients shard keys, so it must be headless; got clusterIP %q", s.Spec.ClusterIP)
	}
	got := []string{}
	for _, p := range s.Spec.Ports {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"memcached", "metrics"}, got); diff != "" {
		t.Errorf("Service ports: -want, +got:\n%s", diff)
	}
}

func TestNeedsPodDisruptionBudget(t *testing.T) {
	cases := map[string]struct {
		m    Memcached
		want bool
	}{
		"Single":   {m: Memcached{Size: 1, HighAvailability: true}, want: false},
		"Several":  {m: Memcached{Size: 3, HighAvailability: true}, want: true},
		"HAOff":    {m: Memcached{Size: 3}, want: false},
		"TwoAndHA": {m: Memcached{Size: 2, HighAvailability: true}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NeedsPodDisruptionBudget(tc.m); got != tc.want {
				t.Errorf("NeedsPodDisruptionBudget(%+v): want %t, got %t (a budget over one replica would block node drains)", tc.m, tc.want, got)
			}
			want := []string{"Deployment", "Service"}
			if tc.want {
				want = append(want, "PodDisruptionBudget")
			}
			var got []string
			for _, o := range Objects(tc.m) {
				got = append(got, o.GetObjectKind().GroupVersionKind().Kind)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Objects(%+v): -want, +got:\n%s", tc.m, diff)
			}
		})
	}
}

func TestConnectionDetails(t *testing.T) {
	m := Memcached{Name: "sessions", Namespace: "team-a"}
	want := map[string][]byte{
		"endpoint": []byte("sessions.team-a.svc.cluster.local:11211"),
		"host":     []byte("sessions.team-a.svc.cluster.local"),
		"port":     []byte("11211"),
		"srv":      []byte("_memcached._tcp.sessions.team-a.svc.cluster.local"),
	}
	if diff := cmp.Diff(want, ConnectionDetails(m)); diff != "" {
		t.Errorf("ConnectionDetails: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(want, ConnectionSecret(m).Data); diff != "" {
		t.Errorf("ConnectionSecret data: -want, +got:\n%s", diff)
	}
}
