package images

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// entry is what a reader of the image's file system sees of one entry.
type entry struct {
	Name    string
	Type    byte
	Mode    int64
	UID     int
	ModTime int64
	Content string
}

func entries(t *testing.T, img v1.Image) []entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close() //nolint:errcheck // Read-only.
	var got []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, ModTime: h.ModTime.Unix(), Content: string(b)})
	}
}

func TestBuild(t *testing.T) {
	type want struct {
		entries    []entry
		user       string
		entrypoint []string
		err        string
	}
	cases := map[string]struct {
		reason string
		spec   Spec
		want   want
	}{
		"FilesWithParents": {
			reason: "Files land at their paths, in sorted order, under parent directories made once, owned by root, stamped with the epoch; /tmp always exists.",
			spec: Spec{
				Files: []File{
					{Path: "/usr/bin/memcached", Content: []byte("elf"), Mode: 0o755},
					{Path: "/etc/passwd", Content: []byte("memcache:x:11211:11211::/:/nonexistent\n"), Mode: 0o644},
					{Path: "/usr/lib/libevent.so", Content: []byte("lib"), Mode: 0o644},
				},
				User:       "11211:11211",
				Entrypoint: []string{"/usr/bin/memcached"},
			},
			want: want{
				entries: []entry{
					{Name: "tmp", Type: tar.TypeDir, Mode: 0o1777},
					{Name: "etc", Type: tar.TypeDir, Mode: 0o755},
					{Name: "etc/passwd", Type: tar.TypeReg, Mode: 0o644, Content: "memcache:x:11211:11211::/:/nonexistent\n"},
					{Name: "usr", Type: tar.TypeDir, Mode: 0o755},
					{Name: "usr/bin", Type: tar.TypeDir, Mode: 0o755},
					{Name: "usr/bin/memcached", Type: tar.TypeReg, Mode: 0o755, Content: "elf"},
					{Name: "usr/lib", Type: tar.TypeDir, Mode: 0o755},
					{Name: "usr/lib/libevent.so", Type: tar.TypeReg, Mode: 0o644, Content: "lib"},
				},
				user:       "11211:11211",
				entrypoint: []string{"/usr/bin/memcached"},
			},
		},
		"RelativePath": {
			reason: "A relative path is refused rather than packed somewhere unexpected.",
			spec:   Spec{Files: []File{{Path: "etc/passwd"}}},
			want:   want{err: `image path "etc/passwd" must be absolute and clean`},
		},
		"SamePathTwice": {
			reason: "Two files at one path are refused: only one could win.",
			spec:   Spec{Files: []File{{Path: "/pause"}, {Path: "/pause"}}},
			want:   want{err: `image path "/pause" given twice`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img, err := Build(tc.spec)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("%s\nBuild(...): got error %v, want %q", tc.reason, err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.entries, entries(t, img)); diff != "" {
				t.Errorf("%s\nBuild(...) files: -want, +got:\n%s", tc.reason, diff)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			got := []any{cf.Config.User, cf.Config.Entrypoint, cf.Config.Env, cf.OS, cf.Architecture, cf.Created.Unix()}
			wantCfg := []any{tc.want.user, tc.want.entrypoint, []string{defaultPath}, "linux", "amd64", int64(0)}
			if diff := cmp.Diff(wantCfg, got); diff != "" {
				t.Errorf("%s\nBuild(...) config (user, entrypoint, env, os, arch, created): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// The same files give the same digest, whatever order they come in: the images the suite
// pushes are reproducible.
func TestBuildReproducible(t *testing.T) {
	a := []File{{Path: "/a", Content: []byte("1"), Mode: 0o644}, {Path: "/b/c", Content: []byte("2"), Mode: 0o755}}
	b := []File{a[1], a[0]}
	digest := func(files []File) v1.Hash {
		img, err := Build(Spec{Files: files, User: "1:1", Entrypoint: []string{"/a"}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if da, db := digest(a), digest(b); da != db {
		t.Errorf("digests differ for the same files in another order: %s, %s", da, db)
	}
	changed := []File{a[0], {Path: "/b/c", Content: []byte("2"), Mode: 0o700}}
	if da, dc := digest(a), digest(changed); da == dc {
		t.Errorf("a changed mode gave the same digest %s", da)
	}
}

// A dynamic binary's image gets every library ldd lists for it, the dynamic loader included,
// so that it starts with nothing else in the image.
func TestLibraries(t *testing.T) {
	const bin = "/bin/sh" // dynamic on every Debian
	libs, err := Libraries(bin)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, l := range libs {
		paths = append(paths, l.Path)
		host, err := os.ReadFile(l.Path)
		if err != nil {
			t.Fatal(err)
		}
		if string(host) != string(l.Content) {
			t.Errorf("%s: content differs from the host file", l.Path)
		}
	}
	var libc, loader bool
	for _, p := range paths {
		libc = libc || strings.HasPrefix(filepath.Base(p), "libc.so")
		loader = loader || strings.HasPrefix(filepath.Base(p), "ld-linux")
	}
	if !libc || !loader {
		t.Errorf("Libraries(%s) = %v: want libc and the dynamic loader among them", bin, paths)
	}
}

// Version reads the x.y.z a binary prints, what its image is tagged with.
func TestVersion(t *testing.T) {
	script := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"tool, version 0.14.4 (branch: , revision: )\"\n"), 0o755); err != nil { //nolint:gosec // A test script.
		t.Fatal(err)
	}
	got, err := Version(script, "--version")
	if err != nil || got != "0.14.4" {
		t.Errorf("Version: got %q, %v; want 0.14.4", got, err)
	}
	if _, err := Version("/bin/true"); err == nil {
		t.Error("Version of a program printing nothing: got no error")
	}
}

// Crossplane's image is laid out as the official one: the binary as the entrypoint, the CRDs
// under /crds where `crossplane core init` reads them, the webhook configurations under
// /webhookconfigurations, run as nonroot.
func TestCrossplaneLayout(t *testing.T) {
	dir := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "crossplane"), "binary")
	write(filepath.Join(dir, "crds", "apiextensions.crossplane.io_compositions.yaml"), "crd")
	write(filepath.Join(dir, "webhooks", "manifests.yaml"), "webhooks")
	img, err := Crossplane(filepath.Join(dir, "crossplane"), filepath.Join(dir, "crds"), filepath.Join(dir, "webhooks"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries(t, img) {
		if e.Type == tar.TypeReg {
			files[e.Name] = e.Content
		}
	}
	for name, want := range map[string]string{
		"bin/crossplane": "binary",
		"crds/apiextensions.crossplane.io_compositions.yaml": "crd",
		"webhookconfigurations/manifests.yaml":               "webhooks",
	} {
		if files[name] != want {
			t.Errorf("%s holds %q, want %q (files: %v)", name, files[name], want, files)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532" || !cmp.Equal(cf.Config.Entrypoint, []string{"/bin/crossplane"}) {
		t.Errorf("user %q entrypoint %q, want 65532 and /bin/crossplane", cf.Config.User, cf.Config.Entrypoint)
	}
}

// The Python applications' image holds Debian's interpreter under both its names, the
// libraries its modules load, the standard library without what an application does not run,
// pymemcache and six, pylibmc with its extension module, the libraries that links (libmemcached,
// libsasl2) and Cyrus SASL's PLAIN plugin, which libsasl2 loads at run time (no other
// mechanism's), and each script at its path; the interpreter is the entrypoint, run as nonroot.
func TestPythonAppsLayout(t *testing.T) {
	for _, p := range []string{HostPython, HostPymemcache, hostSix, HostPylibmc} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is not installed (Debian packages python3.11, python3-pymemcache and python3-pylibmc; `make node-packages` installs them): %v", p, err)
		}
	}
	dir := t.TempDir()
	scripts := map[string]string{}
	for _, app := range []string{"pymemcache", "pylibmc"} {
		script := filepath.Join(dir, app+".py")
		if err := os.WriteFile(script, []byte("print('"+app+"')\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		scripts["/app/"+app+"/app.py"] = script
	}
	plugins := fakePlugins(t)
	img, err := pythonApps(scripts, plugins)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]entry{}
	for _, e := range entries(t, img) {
		if e.Type == tar.TypeReg {
			files[e.Name] = e
		}
	}
	host := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p) //nolint:gosec // The host's packaged files.
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ssl, err := filepath.Glob(filepath.Join(pythonDynload, "_ssl.*.so"))
	if err != nil || len(ssl) != 1 {
		t.Fatalf("the host's _ssl module: %v, %v", ssl, err)
	}
	pylibmc, err := filepath.Glob(hostPylibmcModules)
	if err != nil || len(pylibmc) != 1 {
		t.Fatalf("the host's _pylibmc module: %v, %v", pylibmc, err)
	}
	plugin := strings.TrimPrefix(SASLPluginDir, "/") + "/libplain.so.2"
	cases := map[string]struct {
		reason string
		path   string
		want   string
	}{
		"Interpreter":       {reason: "The interpreter is Debian's.", path: "usr/bin/python3.11", want: host(HostPython)},
		"Python3":           {reason: "The entrypoint calls it python3.", path: "usr/bin/python3", want: host(HostPython)},
		"Stdlib":            {reason: "The standard library is there, sources only.", path: "usr/lib/python3.11/ssl.py", want: host(pythonStdlib + "/ssl.py")},
		"ExtensionModule":   {reason: "Extension modules are there: ssl needs _ssl.", path: ssl[0][1:], want: host(ssl[0])},
		"Pymemcache":        {reason: "pymemcache is Debian's.", path: "usr/lib/python3/dist-packages/pymemcache/client/base.py", want: host(HostPymemcache + "/client/base.py")},
		"Six":               {reason: "pymemcache imports six.", path: "usr/lib/python3/dist-packages/six.py", want: host(hostSix)},
		"Pylibmc":           {reason: "pylibmc is Debian's.", path: "usr/lib/python3/dist-packages/pylibmc/client.py", want: host(HostPylibmc + "/client.py")},
		"PylibmcModule":     {reason: "pylibmc's extension module is there.", path: pylibmc[0][1:], want: host(pylibmc[0])},
		"SASLPlugin":        {reason: "Cyrus SASL's PLAIN plugin is where libsasl2 loads it from, a copy of the host's file.", path: plugin, want: host("/bin/sh")},
		"PymemcacheScript":  {reason: "Each script is at its path.", path: "app/pymemcache/app.py", want: "print('pymemcache')\n"},
		"PylibmcScript":     {reason: "Each script is at its path.", path: "app/pylibmc/app.py", want: "print('pylibmc')\n"},
		"NoTests":           {reason: "pymemcache's tests are left out.", path: "usr/lib/python3/dist-packages/pymemcache/test/__init__.py"},
		"NoPylibmcTests":    {reason: "pylibmc's tests are left out.", path: "usr/lib/python3/dist-packages/pylibmc/test.py"},
		"NoOtherMechanisms": {reason: "Only PLAIN's plugin is there.", path: strings.TrimPrefix(SASLPluginDir, "/") + "/libscram.so.2.0.25"},
		"NoByteCode":        {reason: "The host's byte code is left out.", path: "usr/lib/python3.11/__pycache__/ssl.cpython-311.pyc"},
		"NoStaticLibrary":   {reason: "The files for building extensions are left out.", path: "usr/lib/python3.11/config-3.11-x86_64-linux-gnu/Makefile"},
		"NoTestSuite":       {reason: "The standard library's tests are left out.", path: "usr/lib/python3.11/test/regrtest.py"},
		"NonrootPasswd":     {reason: "/etc/passwd names nonroot.", path: "etc/passwd", want: string(nonrootFiles()[0].Content)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := files[tc.path]
			if tc.want == "" {
				if _, err := os.Stat("/" + tc.path); err != nil && !strings.Contains(tc.path, "sasl2") {
					t.Skipf("the host has no /%s to leave out", tc.path)
				}
				if ok {
					t.Errorf("%s\n%s is in the image", tc.reason, tc.path)
				}
				return
			}
			if !ok || got.Content != tc.want {
				t.Errorf("%s\n%s: in the image %t, content as wanted %t", tc.reason, tc.path, ok, got.Content == tc.want)
			}
		})
	}
	for _, lib := range []string{"libssl.so", "libmemcached.so", "libsasl2.so"} {
		var found bool
		for name := range files {
			found = found || strings.HasPrefix(path.Base(name), lib)
		}
		if !found {
			t.Errorf("no %s in the image: a module cannot load", lib)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != nonroot || !cmp.Equal(cf.Config.Entrypoint, []string{"/usr/bin/python3"}) {
		t.Errorf("user %q entrypoint %q, want %s and /usr/bin/python3", cf.Config.User, cf.Config.Entrypoint, nonroot)
	}
	if _, err := pythonApps(scripts, t.TempDir()); err == nil || !strings.Contains(err.Error(), "libsasl2-modules") {
		t.Errorf("pythonApps without the plugin: got error %v, want one naming libsasl2-modules", err)
	}
}

// fakePlugins is a plugin directory as Debian's libsasl2-modules lays it out, with PLAIN's and
// SCRAM's plugins and their symbolic links; each plugin is a copy of /bin/sh, dynamic on every
// Debian.
func fakePlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	elf, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"libplain.so.2.0.25", "libscram.so.2.0.25"} {
		if err := os.WriteFile(filepath.Join(dir, name), elf, 0o644); err != nil { //nolint:gosec // A library, as Debian installs it.
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"libplain.so": "libplain.so.2.0.25", "libplain.so.2": "libplain.so.2.0.25", "libscram.so": "libscram.so.2.0.25"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The memjs application's image holds the host's Node.js as /usr/bin/node with the libraries
// it links, the script at /app/app.js and the modules npm installed at /app/node_modules, memjs's
// code without its tests, benchmarks and docs; node runs the script, as nonroot. Without memjs
// in the modules the image cannot be built.
func TestMemjsAppLayout(t *testing.T) {
	const node = "/bin/sh" // dynamic on every Debian: stands in for node
	dir := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "app.js")
	write(script, "console.log('ok')\n")
	modules := filepath.Join(dir, "node_modules")
	write(filepath.Join(modules, "memjs", "package.json"), `{"name":"memjs","version":"1.3.2"}`)
	write(filepath.Join(modules, "memjs", "lib", "memjs", "memjs.js"), "module.exports = {}\n")
	write(filepath.Join(modules, "memjs", "test", "client_test.js"), "test\n")
	write(filepath.Join(modules, "memjs", "bench", "memjs.js"), "bench\n")
	img, err := nodejsApp(node, script, modules)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]entry{}
	for _, e := range entries(t, img) {
		if e.Type == tar.TypeReg {
			files[e.Name] = e
		}
	}
	sh, err := os.ReadFile(node)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"usr/bin/node":                              string(sh),
		"app/app.js":                                "console.log('ok')\n",
		"app/node_modules/memjs/package.json":       `{"name":"memjs","version":"1.3.2"}`,
		"app/node_modules/memjs/lib/memjs/memjs.js": "module.exports = {}\n",
	} {
		if files[name].Content != want {
			t.Errorf("%s holds %q, want %q", name, files[name].Content, want)
		}
	}
	for _, name := range []string{"app/node_modules/memjs/test/client_test.js", "app/node_modules/memjs/bench/memjs.js"} {
		if _, ok := files[name]; ok {
			t.Errorf("%s is in the image: an application does not load it", name)
		}
	}
	var libc bool
	for name := range files {
		libc = libc || strings.HasPrefix(path.Base(name), "libc.so")
	}
	if !libc {
		t.Error("no libc in the image: node cannot start")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != nonroot || !cmp.Equal(cf.Config.Entrypoint, []string{"/usr/bin/node", "/app/app.js"}) {
		t.Errorf("user %q entrypoint %q, want %s and /usr/bin/node /app/app.js", cf.Config.User, cf.Config.Entrypoint, nonroot)
	}
	if _, err := nodejsApp(node, script, t.TempDir()); err == nil || !strings.Contains(err.Error(), "package-lock.json") {
		t.Errorf("nodejsApp without memjs: got error %v, want one naming the lock file", err)
	}
}

// The memcached image holds the binary as /usr/bin/memcached, the libraries ldd lists for it,
// and Cyrus SASL's PLAIN plugin at Debian's plugin directory, which libsasl2 loads at run time
// (ldd does not list it): each of libplain.so* as a file, no other mechanism's plugin. Without
// the plugin the image cannot be built.
func TestMemcachedLayout(t *testing.T) {
	const bin = "/bin/sh" // dynamic on every Debian: stands in for memcached and the plugin
	elf, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	for name, content := range map[string][]byte{"libplain.so.2.0.25": elf, "libscram.so.2.0.25": elf} {
		if err := os.WriteFile(filepath.Join(plugins, name), content, 0o644); err != nil { //nolint:gosec // A library, as Debian installs it.
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"libplain.so": "libplain.so.2.0.25", "libplain.so.2": "libplain.so.2.0.25", "libscram.so": "libscram.so.2.0.25"} {
		if err := os.Symlink(target, filepath.Join(plugins, link)); err != nil {
			t.Fatal(err)
		}
	}
	img, err := memcachedImage(bin, plugins)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]entry{}
	for _, e := range entries(t, img) {
		if e.Type == tar.TypeReg {
			files[e.Name] = e
		}
	}
	dir := strings.TrimPrefix(SASLPluginDir, "/") + "/"
	for _, name := range []string{"usr/bin/memcached", dir + "libplain.so", dir + "libplain.so.2", dir + "libplain.so.2.0.25"} {
		if e, ok := files[name]; !ok || e.Content != string(elf) {
			t.Errorf("%s: in the image %t, content the host file's %t", name, ok, e.Content == string(elf))
		}
	}
	if files["usr/bin/memcached"].Mode != 0o755 {
		t.Errorf("usr/bin/memcached has mode %o, want 755", files["usr/bin/memcached"].Mode)
	}
	var libc bool
	for name := range files {
		if strings.Contains(name, "scram") {
			t.Errorf("%s is in the image: only PLAIN's plugin belongs there", name)
		}
		libc = libc || strings.HasPrefix(path.Base(name), "libc.so")
	}
	if !libc {
		t.Error("no libc in the image: the binary cannot start")
	}
	if !strings.Contains(files["etc/passwd"].Content, "memcache:x:11211:11211:") {
		t.Errorf("etc/passwd does not name memcache as 11211: %q", files["etc/passwd"].Content)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "11211:11211" || !cmp.Equal(cf.Config.Entrypoint, []string{"/usr/bin/memcached"}) {
		t.Errorf("user %q entrypoint %q, want 11211:11211 and /usr/bin/memcached", cf.Config.User, cf.Config.Entrypoint)
	}

	if _, err := memcachedImage(bin, t.TempDir()); err == nil || !strings.Contains(err.Error(), "libsasl2-modules") {
		t.Errorf("memcachedImage without the plugin: got error %v, want one naming libsasl2-modules", err)
	}
}

// TestMirror serves an image under the name an example gives it, as the cluster lane's
// mirror does: a reference by tag alone is what the nodes pull; one by tag and digest gets the
// copy's digest in place of the example's, since a node verifies what it pulls by digest.
func TestMirror(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := Build(Spec{Files: []File{{Path: "/hello", Mode: 0o755, Content: []byte("hello")}}, User: "65534:65534", Entrypoint: []string{"/hello"}})
	if err != nil {
		t.Fatal(err)
	}
	src, err := Push(context.Background(), host+"/e2e/hello:1", img)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	upstream := "sha256:" + strings.Repeat("0a", 32)
	cases := map[string]struct {
		reason       string
		as           string
		wantRegistry string
		wantRef      string
		pulled       string // where the copy must be, by digest
	}{
		"TagOnly": {
			reason: "A tag alone is served and pulled as the example names it.",
			as:     "memcached:1.6.39-alpine", wantRegistry: "docker.io", wantRef: "memcached:1.6.39-alpine",
			pulled: host + "/library/memcached@" + d.String(),
		},
		"TagAndDigest": {
			reason: "The example's digest names the publisher's bytes, not the lane's: the copy's digest replaces it.",
			as:     "memcached:1.6.39-alpine@" + upstream, wantRegistry: "docker.io", wantRef: "memcached:1.6.39-alpine@" + d.String(),
			pulled: host + "/library/memcached@" + d.String(),
		},
		"OtherRegistry": {
			reason: "Another registry is mirrored under its own host name.",
			as:     "xpkg.example.com/platform/proxy:v0.1.0@" + upstream, wantRegistry: "xpkg.example.com",
			wantRef: "xpkg.example.com/platform/proxy:v0.1.0@" + d.String(),
			pulled:  host + "/platform/proxy@" + d.String(),
		},
	}
	for n, tc := range cases {
		t.Run(n, func(t *testing.T) {
			reg, ref, err := Mirror(context.Background(), host, src, tc.as)
			if err != nil {
				t.Fatal(err)
			}
			if reg != tc.wantRegistry || ref != tc.wantRef {
				t.Errorf("%s\nMirror(%q) = %q, %q; want %q, %q", tc.reason, tc.as, reg, ref, tc.wantRegistry, tc.wantRef)
			}
			r, err := name.ParseReference(tc.pulled, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := remote.Image(r); err != nil {
				t.Errorf("%s\nthe copy is not at %s: %v", tc.reason, tc.pulled, err)
			}
		})
	}
}
