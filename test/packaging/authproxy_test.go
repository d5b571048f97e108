package packaging

import (
	"archive/tar"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// proxyImage is what a node makes of the auth proxy's image.
type proxyImage struct {
	Platform   string
	Entrypoint []string
	User       string
	Files      []string
	Machine    string
	Static     bool
}

func wantProxyImage(arch string) proxyImage {
	return proxyImage{
		Platform:   "linux/" + arch,
		Entrypoint: []string{"/memcached-auth-proxy"},
		// memcached's user, whom the pods run every container as.
		User:    "11211:11211",
		Files:   []string{"etc/group", "etc/passwd", "memcached-auth-proxy"},
		Machine: map[string]string{"amd64": elf.EM_X86_64.String(), "arm64": elf.EM_AARCH64.String()}[arch],
		Static:  true,
	}
}

func inspectProxy(t *testing.T, img v1.Image) proxyImage {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	got := proxyImage{Platform: cf.OS + "/" + cf.Architecture, Entrypoint: cf.Config.Entrypoint, User: cf.Config.User}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, got %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close() //nolint:errcheck // Read only.
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		got.Files = append(got.Files, h.Name)
		if h.Name == "memcached-auth-proxy" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(strings.NewReader(string(b)))
			if err != nil {
				t.Fatalf("the proxy binary is not ELF: %v", err)
			}
			got.Machine = f.Machine.String()
			got.Static = true
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					got.Static = false
				}
			}
		}
	}
	sort.Strings(got.Files)
	return got
}

// TestAuthProxyImage builds the auth proxy's image twice, expects the same bytes, and checks
// what a node runs: the static binary as memcached's user.
func TestAuthProxyImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the auth proxy for two platforms, twice")
	}
	first, second := t.TempDir(), t.TempDir()
	for _, dir := range []string{first, second} {
		if out, err := runMake(t, "auth-proxy-image", "OUTPUT_DIR="+dir); err != nil {
			t.Fatalf("make auth-proxy-image: %v\n%s", err, out)
		}
	}
	for _, a := range arches {
		t.Run(a, func(t *testing.T) {
			p := filepath.Join(first, "memcached-auth-proxy-"+a+".tar")
			if sha256File(t, p) != sha256File(t, filepath.Join(second, "memcached-auth-proxy-"+a+".tar")) {
				t.Error("two builds of the auth proxy image from the same sources differ")
			}
			img, err := tarball.ImageFromPath(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantProxyImage(a), inspectProxy(t, img)); diff != "" {
				t.Errorf("%s: -want, +got:\n%s", p, diff)
			}
		})
	}
}

// TestPushAuthProxy checks that make push publishes the auth proxy's image beside the
// function, as one multi-arch tag.
func TestPushAuthProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function and the auth proxy for two platforms")
	}
	cli := crossplaneCLI(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://") + "/example"
	out, err := runMake(t, "push", "CROSSPLANE="+cli, "OUTPUT_DIR="+t.TempDir(), "REGISTRY="+reg, "VERSION=v0.1.0")
	if err != nil {
		t.Fatalf("make push: %v\n%s", err, out)
	}
	ref, err := name.ParseReference(reg + "/memcached-auth-proxy:v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("remote.Index(%s): the tag must be a multi-arch index: %v", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	// The release names the image by the reference make push prints: the tag and the digest
	// the registry serves it by.
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := "pushed " + reg + "/memcached-auth-proxy:v0.1.0@" + d.String(); !strings.Contains(out, want+"\n") {
		t.Errorf("make push does not print %q, the reference a release names the auth proxy by:\n%s", want, out)
	}
	got, want := map[string]proxyImage{}, map[string]proxyImage{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		got[d.Platform.OS+"/"+d.Platform.Architecture] = inspectProxy(t, img)
	}
	for _, a := range arches {
		want["linux/"+a] = wantProxyImage(a)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images pulled from %s: -want, +got:\n%s", ref, diff)
	}
}
