package example_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/example/function-memcached/internal/resolve"
)

// TestExampleImagesPinned holds the example Input's images to what the built-in defaults pin:
// memcached by tag and the digest its publisher lists (the same reference as the built-in
// default, so the example and a platform without an Input run the same bytes), the exporter
// as the built-in default names it, and the auth proxy, this repository's own image, by tag
// until a release publishes its digest (docs/images.md).
func TestExampleImagesPinned(t *testing.T) {
	comp := readOne(t, "composition.yaml")
	steps, _, _ := unstructured.NestedSlice(comp.Object, "spec", "pipeline")
	if len(steps) != 1 {
		t.Fatalf("composition.yaml: want one pipeline step, got %d", len(steps))
	}
	cases := map[string]struct {
		reason     string
		want       string
		wantDigest bool
	}{
		"image":          {reason: "memcached is pinned by digest, as the built-in default.", want: resolve.DefaultImage, wantDigest: true},
		"exporterImage":  {reason: "The exporter is the built-in default, by tag: no digest its publisher lists could be had.", want: resolve.DefaultExporterImage},
		"authProxyImage": {reason: "The auth proxy's digest is known once a release pushes it; the example names the tag a release pushes."},
	}
	for field, tc := range cases {
		t.Run(field, func(t *testing.T) {
			got, _, _ := unstructured.NestedString(steps[0].(map[string]any), "input", "defaults", field)
			if got == "" {
				t.Fatalf("%s\ncomposition.yaml names no defaults.%s", tc.reason, field)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("%s\ndefaults.%s = %q, want %q", tc.reason, field, got, tc.want)
			}
			if _, ok := resolve.ImageDigest(got); ok != tc.wantDigest {
				t.Errorf("%s\ndefaults.%s = %q: names a digest %v, want %v", tc.reason, field, got, ok, tc.wantDigest)
			}
		})
	}
}
