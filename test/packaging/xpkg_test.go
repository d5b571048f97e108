package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	pkgmetav1 "github.com/crossplane/crossplane/apis/v2/pkg/meta/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// arches are the platforms `make xpkg` builds, as in build/xpkg.mk.
var arches = []string{"amd64", "arm64"}

// maxRuntimeLayer is the budget for the compressed runtime layer, what every node pulls.
const maxRuntimeLayer = 15_000_000

// xpkgLabel is the key of the annotation (in the registry) and the label prefix (in an xpkg
// file) with which Crossplane marks its layers.
const xpkgLabel = "io.crossplane.xpkg"

var (
	sharedOutput string
	buildOnce    sync.Once
	buildOut     string
	buildErr     error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "xpkg-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedOutput = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// built runs `make xpkg` once for the tests that only read its output, and returns the output
// directory.
func built(t *testing.T, cli string) string {
	t.Helper()
	buildOnce.Do(func() {
		buildOut, buildErr = runMake(t, "xpkg", "CROSSPLANE="+cli, "OUTPUT_DIR="+sharedOutput)
	})
	if buildErr != nil {
		t.Fatalf("make xpkg: %v\n%s", buildErr, buildOut)
	}
	return sharedOutput
}

func xpkgPath(dir, arch string) string {
	return filepath.Join(dir, "function-memcached-"+arch+".xpkg")
}

// TestXpkgReproducible builds the packages a second time and expects the same bytes: anyone can
// rebuild a published package from its commit and check the digest.
func TestXpkgReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function twice for two platforms")
	}
	cli := crossplaneCLI(t)
	first := built(t, cli)
	second := t.TempDir()
	if out, err := runMake(t, "xpkg", "CROSSPLANE="+cli, "OUTPUT_DIR="+second); err != nil {
		t.Fatalf("second make xpkg: %v\n%s", err, out)
	}
	want, got := map[string]string{}, map[string]string{}
	for _, a := range arches {
		want[a] = sha256File(t, xpkgPath(first, a))
		got[a] = sha256File(t, xpkgPath(second, a))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sha256 of the xpkgs of two builds from the same sources: -first, +second:\n%s", diff)
	}
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("os.ReadFile(%q): %v", p, err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestXpkg checks each xpkg file as `crossplane xpkg push` and Crossplane will read it.
func TestXpkg(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function for two platforms")
	}
	dir := built(t, crossplaneCLI(t))
	for _, a := range arches {
		t.Run(a, func(t *testing.T) {
			p := xpkgPath(dir, a)
			img, err := tarball.ImageFromPath(p, nil)
			if err != nil {
				t.Fatalf("tarball.ImageFromPath(%q): %v", p, err)
			}
			if diff := cmp.Diff(wantPackage(a), inspect(t, img, fromConfigLabels)); diff != "" {
				t.Errorf("xpkg %s: -want, +got:\n%s", p, diff)
			}
		})
	}
}

func TestPush(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function for two platforms")
	}
	cli := crossplaneCLI(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	reg := strings.TrimPrefix(srv.URL, "http://") + "/example"

	out, err := runMake(t, "push", "CROSSPLANE="+cli, "OUTPUT_DIR="+t.TempDir(), "REGISTRY="+reg, "VERSION=v0.1.0")
	if err != nil {
		t.Fatalf("make push: %v\n%s", err, out)
	}

	ref, err := name.ParseReference(reg + "/function-memcached:v0.1.0")
	if err != nil {
		t.Fatalf("name.ParseReference: %v", err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("remote.Index(%s): the tag must be a multi-arch index: %v", ref, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatalf("idx.IndexManifest(): %v", err)
	}
	var platforms []string
	got := map[string]pkg{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform: nodes could not pick theirs", d.Digest)
		}
		platform := d.Platform.OS + "/" + d.Platform.Architecture
		platforms = append(platforms, platform)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatalf("pulling %s (%s): %v", d.Digest, platform, err)
		}
		got[platform] = inspect(t, img, fromManifestAnnotations)
	}
	sort.Strings(platforms)
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms of %s: -want, +got:\n%s", ref, diff)
	}
	want := map[string]pkg{}
	for _, a := range arches {
		want["linux/"+a] = wantPackage(a)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packages pulled from %s: -want, +got:\n%s", ref, diff)
	}
}

func TestPushArguments(t *testing.T) {
	needs := regexp.MustCompile(`make push needs \w+`)
	cases := map[string]struct {
		reason string
		args   []string
		want   string
	}{
		"NoRegistry": {
			reason: "Without REGISTRY there is nowhere to push: fail at once, before minutes of building.",
			args:   []string{"VERSION=v0.1.0"},
			want:   "make push needs REGISTRY",
		},
		"NoVersion": {
			reason: "Without VERSION there is no tag to push.",
			args:   []string{"REGISTRY=127.0.0.1:1/example"},
			want:   "make push needs VERSION",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := runMake(t, append([]string{"push", "CROSSPLANE=/nonexistent", "OUTPUT_DIR=" + t.TempDir()}, tc.args...)...)
			if err == nil {
				t.Fatalf("%s\nmake push %v succeeded:\n%s", tc.reason, tc.args, out)
			}
			if diff := cmp.Diff(tc.want, needs.FindString(out)); diff != "" {
				t.Errorf("%s\nmake push %v: -want, +got:\n%s\noutput:\n%s", tc.reason, tc.args, diff, out)
			}
		})
	}
}

// pkg is what Crossplane and a node make of a function package.
type pkg struct {
	// From the image config: how the runtime starts the function.
	Platform     string
	Entrypoint   []string
	User         string
	ExposedPorts []string

	// From the runtime layer.
	Binary binary

	// From the package layer (package.yaml).
	Function function
	CRDs     []string

	// From the examples layer: group/kind of every example, sorted.
	Examples []string
}

type binary struct {
	Path    string
	Mode    int64
	Machine string
	Static  bool
	// WithinBudget is whether the compressed runtime layer is at most maxRuntimeLayer bytes.
	WithinBudget bool
}

type function struct {
	Name        string
	Crossplane  string
	Annotations []string // The meta.crossplane.io annotations that are set.
	// Capabilities tell Crossplane what the function may be used for: a Composition's
	// pipeline refuses a function whose capabilities lack composition.
	Capabilities []string
}

func wantPackage(arch string) pkg {
	machine := map[string]string{"amd64": elf.EM_X86_64.String(), "arm64": elf.EM_AARCH64.String()}[arch]
	return pkg{
		Platform:     "linux/" + arch,
		Entrypoint:   []string{"/function"},
		User:         "65532:65532",
		ExposedPorts: []string{"9443/tcp"},
		Binary:       binary{Path: "function", Mode: 0o555, Machine: machine, Static: true, WithinBudget: true},
		Function: function{
			Name:       "function-memcached",
			Crossplane: ">=v2.3.0",
			Annotations: []string{
				"meta.crossplane.io/description",
				"meta.crossplane.io/license",
				"meta.crossplane.io/maintainer",
				"meta.crossplane.io/readme",
				"meta.crossplane.io/source",
			},
			Capabilities: []string{pkgmetav1.FunctionCapabilityComposition},
		},
		CRDs: []string{"inputs.memcached.fn.example.com"},
		// Render fixtures (observed composed resources, the claim's XR) are no examples.
		Examples: []string{
			"admissionregistration.k8s.io/ValidatingAdmissionPolicy",
			"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding",
			"apiextensions.crossplane.io/CompositeResourceDefinition",
			"apiextensions.crossplane.io/Composition",
			"cache.example.com/Memcached",
			"core/ConfigMap",
			"namespaced.cache.example.com/Memcached",
			"pkg.crossplane.io/Function",
			"rbac.authorization.k8s.io/ClusterRole",
			"rbac.authorization.k8s.io/RoleBinding",
		},
	}
}

// layerFinder returns the annotation Crossplane gave a layer, "" for the runtime layer.
type layerFinder func(t *testing.T, img v1.Image, l v1.Layer) string

// fromConfigLabels reads annotations as an xpkg file stores them: config labels
// io.crossplane.xpkg:<layer digest>.
func fromConfigLabels(t *testing.T, img v1.Image, l v1.Layer) string {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("img.ConfigFile(): %v", err)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatalf("layer.Digest(): %v", err)
	}
	return cf.Config.Labels[xpkgLabel+":"+d.String()]
}

// fromManifestAnnotations reads annotations as `crossplane xpkg push` writes them and
// Crossplane's package manager looks for them: on the manifest's layer descriptors.
func fromManifestAnnotations(t *testing.T, img v1.Image, l v1.Layer) string {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatalf("img.Manifest(): %v", err)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatalf("layer.Digest(): %v", err)
	}
	for _, desc := range m.Layers {
		if desc.Digest == d {
			return desc.Annotations[xpkgLabel]
		}
	}
	t.Fatalf("layer %s is not in the manifest", d)
	return ""
}

func inspect(t *testing.T, img v1.Image, annotation layerFinder) pkg {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("img.ConfigFile(): %v", err)
	}
	p := pkg{
		Platform:   cf.OS + "/" + cf.Architecture,
		Entrypoint: cf.Config.Entrypoint,
		User:       cf.Config.User,
	}
	for port := range cf.Config.ExposedPorts {
		p.ExposedPorts = append(p.ExposedPorts, port)
	}
	sort.Strings(p.ExposedPorts)

	layers, err := img.Layers()
	if err != nil {
		t.Fatalf("img.Layers(): %v", err)
	}
	seen := map[string]int{}
	for _, l := range layers {
		a := annotation(t, img, l)
		seen[a]++
		files := untar(t, l)
		switch a {
		case "base":
			p.Function, p.CRDs = parsePackage(t, files["package.yaml"])
		case "upbound":
			p.Examples = groupKinds(t, files[".up/examples.yaml"])
		case "":
			p.Binary = inspectBinary(t, l, files)
		}
	}
	if diff := cmp.Diff(map[string]int{"": 1, "base": 1, "upbound": 1}, seen); diff != "" {
		t.Errorf("layers by %s annotation: -want, +got:\n%s", xpkgLabel, diff)
	}
	return p
}

type file struct {
	Mode    int64
	Content []byte
}

func untar(t *testing.T, l v1.Layer) map[string]file {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatalf("layer.Uncompressed(): %v", err)
	}
	defer rc.Close() //nolint:errcheck // Reading only.
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("reading layer: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %q: %v", h.Name, err)
		}
		files[h.Name] = file{Mode: h.Mode, Content: b}
	}
}

func inspectBinary(t *testing.T, l v1.Layer, files map[string]file) binary {
	t.Helper()
	// Beside the function: /etc/passwd and /etc/group naming its user, which a kubelet
	// passing the runtime only the uid needs for the group (internal/runtimeimage).
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"etc/", "etc/group", "etc/passwd", "function"}, names); diff != "" {
		t.Errorf("runtime layer files: -want, +got:\n%s", diff)
	}
	if got, want := string(files["etc/passwd"].Content), "nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n"; got != want {
		t.Errorf("etc/passwd: got %q, want %q", got, want)
	}
	var b binary
	for path, f := range files {
		if path != "function" {
			continue
		}
		b.Path, b.Mode = path, f.Mode
		e, err := elf.NewFile(bytes.NewReader(f.Content))
		if err != nil {
			t.Fatalf("%s is not an ELF binary: %v", path, err)
		}
		b.Machine = e.Machine.String()
		b.Static = true
		for _, prog := range e.Progs {
			if prog.Type == elf.PT_INTERP {
				b.Static = false // It needs a dynamic loader the image does not have.
			}
		}
	}
	size, err := l.Size()
	if err != nil {
		t.Fatalf("layer.Size(): %v", err)
	}
	b.WithinBudget = size <= maxRuntimeLayer
	if !b.WithinBudget {
		t.Logf("compressed runtime layer is %d bytes, budget %d", size, maxRuntimeLayer)
	}
	return b
}

// parsePackage decodes package.yaml strictly, as Crossplane's types: a Function and its CRDs.
func parsePackage(t *testing.T, f file) (function, []string) {
	t.Helper()
	docs := documents(t, f.Content)
	if len(docs) == 0 {
		t.Fatal("package.yaml is empty")
	}
	fn := &pkgmetav1.Function{}
	if err := yaml.UnmarshalStrict(docs[0], fn); err != nil {
		t.Fatalf("package.yaml's first document is not a Function: %v", err)
	}
	if fn.APIVersion != "meta.pkg.crossplane.io/v1" || fn.Kind != "Function" {
		t.Errorf("package.yaml's first document is a %s %s, want a meta.pkg.crossplane.io/v1 Function", fn.APIVersion, fn.Kind)
	}
	got := function{Name: fn.Name, Capabilities: fn.Spec.Capabilities}
	if fn.Spec.Crossplane != nil {
		got.Crossplane = fn.Spec.Crossplane.Version
	}
	for k, v := range fn.Annotations {
		if strings.HasPrefix(k, "meta.crossplane.io/") && strings.TrimSpace(v) != "" {
			got.Annotations = append(got.Annotations, k)
		}
	}
	sort.Strings(got.Annotations)
	var crds []string
	for _, d := range docs[1:] {
		crd := &extv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(d, crd); err != nil {
			t.Fatalf("package.yaml holds an object that is not a CRD: %v", err)
		}
		crds = append(crds, crd.Name)
	}
	return got, crds
}

func groupKinds(t *testing.T, f file) []string {
	t.Helper()
	var gks []string
	seen := map[string]bool{}
	for _, d := range documents(t, f.Content) {
		var o struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(d, &o); err != nil {
			t.Fatalf("example is not an object: %v", err)
		}
		group, _, _ := strings.Cut(o.APIVersion, "/")
		if !strings.Contains(o.APIVersion, "/") {
			group = "core"
		}
		if gk := group + "/" + o.Kind; !seen[gk] {
			seen[gk] = true
			gks = append(gks, gk)
		}
	}
	sort.Strings(gks)
	return gks
}

// documents splits a YAML stream, dropping empty documents.
func documents(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	yr := kyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		d, err := yr.Read()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatalf("reading YAML stream: %v", err)
		}
		var o map[string]any
		if err := yaml.Unmarshal(d, &o); err != nil {
			t.Fatalf("parsing YAML document: %v", err)
		}
		if len(o) > 0 {
			docs = append(docs, d)
		}
	}
}
