package provider

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/example/function-memcached/test/e2e/internal/kube"
)

const (
	providerMeta = "apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n  name: provider-memcached\n"
	crd          = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n"
)

// xpkgFile writes an xpkg file whose one layer holds files (name → content), and returns its
// path.
func xpkgFile(t *testing.T, files map[string]string) string {
	t.Helper()
	buf := &bytes.Buffer{}
	w := tar.NewWriter(buf)
	for n, c := range files {
		if err := w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(c)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromReader(buf)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "provider.xpkg")
	if err := tarball.WriteToFile(p, name.MustParseReference("provider-memcached:test"), img); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPackagedCRDs(t *testing.T) {
	cases := map[string]struct {
		reason  string
		files   map[string]string
		want    []string
		wantErr bool
	}{
		"Whole": {
			reason: "The CRDs of a whole package, sorted, whatever the order of its documents.",
			files: map[string]string{"package.yaml": "---\n" + providerMeta + "---\n" + fmt.Sprintf(crd, "providerconfigs.memcached.example.com") +
				"---\n" + fmt.Sprintf(crd, "instances.memcached.example.com")},
			want: []string{"instances.memcached.example.com", "providerconfigs.memcached.example.com"},
		},
		"WithoutCRDs": {
			reason: "A package built while make generate had emptied package-provider/crds holds only its metadata: no CRDs, so the suite refuses it.",
			files:  map[string]string{"package.yaml": "---\n" + providerMeta},
			want:   nil,
		},
		"NoPackageYAML": {
			reason:  "An image that is not a package is an error, not a package without CRDs.",
			files:   map[string]string{"provider": "a binary"},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := packagedCRDs(xpkgFile(t, tc.files))
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\npackagedCRDs(...): error %v, want error %t", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\npackagedCRDs(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// CRDs is kept by hand beside the types that generate package-provider/crds: the suite waits
// for those names and refuses a package without them, so a kind added to or removed from
// apis/memcached must fail here, in make test, not in an install that times out.
func TestCRDsAreTheGeneratedOnes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "package-provider", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated []string
	for _, f := range files {
		objs, err := kube.ReadObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			generated = append(generated, o.GetName())
		}
	}
	slices.Sort(generated)
	if diff := cmp.Diff(generated, slices.Sorted(slices.Values(CRDs))); diff != "" {
		t.Errorf("provider.CRDs is not the CRDs make generate writes to package-provider/crds: -generated, +CRDs:\n%s", diff)
	}
}
