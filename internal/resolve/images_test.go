package resolve

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// pinnedImage is the form of a pinned default: a repository, the tag a person reads, and the
// digest of what the tag named when it was chosen (sha256, 64 lower-case hex digits).
var pinnedImage = regexp.MustCompile(`^[^@]+:[A-Za-z0-9_][A-Za-z0-9_.-]*@sha256:[0-9a-f]{64}$`)

// TestDefaultImagesPinned holds every built-in default image to a digest of the right form,
// so that every node runs the same bytes under that name whenever it pulls, except where no
// digest its publisher lists could be had, which must say why (docs/images.md).
func TestDefaultImagesPinned(t *testing.T) {
	cases := map[string]struct {
		reason   string
		image    string
		unpinned string // why no digest, when none could be had
	}{
		"DefaultImage": {
			reason: "memcached's digest is the index docker-library's repo-info records for the tag.",
			image:  DefaultImage,
		},
		"DefaultExporterImage": {
			reason:   "prom/memcached-exporter is no docker-library image; no listing of its digests could be had offline.",
			image:    DefaultExporterImage,
			unpinned: "no digest its publisher lists could be had offline",
		},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			d, hasDigest := ImageDigest(tc.image)
			if tc.unpinned != "" {
				if hasDigest {
					t.Errorf("%s\n%s = %q names digest %s now: drop its unpinned reason %q", tc.reason, n, tc.image, d, tc.unpinned)
				}
				return
			}
			if !pinnedImage.MatchString(tc.image) || !hasDigest {
				t.Fatalf("%s\n%s = %q: want repository:tag@sha256:<64 hex digits>", tc.reason, n, tc.image)
			}
			tag, _, _ := strings.Cut(tc.image, "@")
			if _, err := name.NewTag(tag); err != nil {
				t.Errorf("%s\n%s = %q: the part before the digest is no tag: %v", tc.reason, n, tc.image, err)
			}
		})
	}
}

// TestImageDigest reads the digest of the references a claim or an Input may write.
func TestImageDigest(t *testing.T) {
	hex := strings.Repeat("0a", 32)
	cases := map[string]struct {
		reason string
		image  string
		want   string
		ok     bool
	}{
		"TagOnly":        {reason: "A tag names no digest.", image: "memcached:1.6.39-alpine"},
		"NameOnly":       {reason: "A bare name (latest) names no digest.", image: "memcached"},
		"DigestOnly":     {reason: "image@sha256:… names one.", image: "memcached@sha256:" + hex, want: "sha256:" + hex, ok: true},
		"TagAndDigest":   {reason: "image:tag@sha256:… names one.", image: "memcached:1.6.39-alpine@sha256:" + hex, want: "sha256:" + hex, ok: true},
		"RegistryPort":   {reason: "A registry with a port is not a tag.", image: "registry.example.com:5000/memcached@sha256:" + hex, want: "sha256:" + hex, ok: true},
		"ShortDigest":    {reason: "A digest of fewer than 64 hex digits is none.", image: "memcached@sha256:0a0a"},
		"OtherAlgorithm": {reason: "Only sha256 is a digest a node verifies.", image: "memcached@md5:" + strings.Repeat("0a", 16)},
		"UpperCaseHex":   {reason: "Digests are lower-case hex.", image: "memcached@sha256:" + strings.ToUpper(hex)},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			got, ok := ImageDigest(tc.image)
			if got != tc.want || ok != tc.ok {
				t.Errorf("%s\nImageDigest(%q) = %q, %v; want %q, %v", tc.reason, tc.image, got, ok, tc.want, tc.ok)
			}
		})
	}
}
