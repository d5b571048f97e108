package runtimeimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// function is what cmd/runtime-image passes for function-memcached.
var function = Options{
	OS:           "linux",
	Architecture: "arm64",
	Path:         "/function",
	User:         "65532:65532",
	ExposedPorts: []string{"9443/tcp"},
	Created:      time.Unix(1767225600, 0), // 2026-01-01T00:00:00Z
}

// with returns the function's options changed by f.
func with(f func(o *Options)) Options {
	o := function
	o.ExposedPorts = append([]string(nil), function.ExposedPorts...)
	f(&o)
	return o
}

var binary = []byte("\x7fELF pretend static binary")

// config is the part of an image's config file that decides how a container runs.
type config struct {
	OS, Architecture string
	Entrypoint       []string
	Cmd              []string
	User             string
	ExposedPorts     map[string]struct{}
	Env              []string
	Created          time.Time
	LayerCount       int
	HistoryCreated   []time.Time
}

func configOf(t *testing.T, img v1.Image) config {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("img.ConfigFile(): %v", err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatalf("img.Layers(): %v", err)
	}
	c := config{
		OS: cf.OS, Architecture: cf.Architecture,
		Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd, User: cf.Config.User,
		ExposedPorts: cf.Config.ExposedPorts, Env: cf.Config.Env,
		Created: cf.Created.UTC(), LayerCount: len(layers),
	}
	for _, h := range cf.History {
		c.HistoryCreated = append(c.HistoryCreated, h.Created.UTC())
	}
	return c
}

func TestBuild(t *testing.T) {
	type args struct {
		binary []byte
		o      Options
	}
	type want struct {
		config config
		err    bool
	}
	created := time.Unix(1767225600, 0).UTC()
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"FunctionContract": {
			reason: "The container must run the function as 65532 on its platform, with no shell or arguments in between, stamped with the source date rather than the build time.",
			args:   args{binary: binary, o: function},
			want: want{config: config{
				OS: "linux", Architecture: "arm64",
				Entrypoint:     []string{"/function"},
				User:           "65532:65532",
				ExposedPorts:   map[string]struct{}{"9443/tcp": {}},
				Created:        created,
				LayerCount:     1,
				HistoryCreated: []time.Time{created},
			}},
		},
		"SubSecondEpochTruncated": {
			reason: "Timestamps are whole seconds, as SOURCE_DATE_EPOCH is; a stray nanosecond must not change the digest.",
			args:   args{binary: binary, o: with(func(o *Options) { o.Created = o.Created.Add(123 * time.Nanosecond) })},
			want: want{config: config{
				OS: "linux", Architecture: "arm64",
				Entrypoint:     []string{"/function"},
				User:           "65532:65532",
				ExposedPorts:   map[string]struct{}{"9443/tcp": {}},
				Created:        created,
				LayerCount:     1,
				HistoryCreated: []time.Time{created},
			}},
		},
		"RootUser": {
			reason: "Crossplane runs functions with runAsNonRoot; a root image would never start.",
			args:   args{binary: binary, o: with(func(o *Options) { o.User = "0:65532" })},
			want:   want{err: true},
		},
		"RootUserPadded": {
			reason: "Leading zeros do not make root someone else.",
			args:   args{binary: binary, o: with(func(o *Options) { o.User = "000" })},
			want:   want{err: true},
		},
		"NamedUser": {
			reason: "The image's /etc/passwd is made from the numeric user, so a name has nothing to resolve to.",
			args:   args{binary: binary, o: with(func(o *Options) { o.User = "nonroot" })},
			want:   want{err: true},
		},
		"RelativePath": {
			reason: "An entrypoint without a directory would be looked up on a PATH the image does not have.",
			args:   args{binary: binary, o: with(func(o *Options) { o.Path = "function" })},
			want:   want{err: true},
		},
		"NoArchitecture": {
			reason: "Without a platform the multi-arch index cannot tell nodes which image to pull.",
			args:   args{binary: binary, o: with(func(o *Options) { o.Architecture = "" })},
			want:   want{err: true},
		},
		"NoCreated": {
			reason: "A forgotten SOURCE_DATE_EPOCH must fail loudly rather than stamp year 1.",
			args:   args{binary: binary, o: with(func(o *Options) { o.Created = time.Time{} })},
			want:   want{err: true},
		},
		"EmptyBinary": {
			reason: "An empty file is a failed build upstream, not a function.",
			args:   args{binary: nil, o: function},
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img, err := Build(tc.args.binary, tc.args.o)
			if (err != nil) != tc.want.err {
				t.Fatalf("%s\nBuild(...): error %v, want error: %t", tc.reason, err, tc.want.err)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want.config, configOf(t, img), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nBuild(...) config: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// entry is a file in a layer, as a container sees it.
type entry struct {
	Name     string
	Type     byte
	Mode     int64
	UID, GID int
	ModTime  time.Time
	Content  string
}

// etcEntries are the layer's /etc/passwd and /etc/group for user uid:gid.
func etcEntries(created time.Time, uid, gid string) []entry {
	return []entry{
		{Name: "etc/", Type: tar.TypeDir, Mode: 0o755, ModTime: created},
		{Name: "etc/group", Type: tar.TypeReg, Mode: 0o444, ModTime: created, Content: "nonroot:x:" + gid + ":\n"},
		{Name: "etc/passwd", Type: tar.TypeReg, Mode: 0o444, ModTime: created, Content: "nonroot:x:" + uid + ":" + gid + ":nonroot:/nonexistent:/sbin/nologin\n"},
	}
}

func TestBuildLayer(t *testing.T) {
	created := time.Unix(1767225600, 0).UTC()
	cases := map[string]struct {
		reason string
		o      Options
		want   []entry
	}{
		"AtRoot": {
			reason: "The binary, root-owned, executable but not writable by the function's user; /etc/passwd and /etc/group name that user and its group, which Kubernetes (passing the runtime only the uid) would otherwise make root.",
			o:      function,
			want: append(etcEntries(created, "65532", "65532"),
				entry{Name: "function", Type: tar.TypeReg, Mode: 0o555, ModTime: created, Content: string(binary)},
			),
		},
		"UIDOnly": {
			reason: "A user given without a group gets a group of the same number, not root's.",
			o:      with(func(o *Options) { o.User = "1000" }),
			want: append(etcEntries(created, "1000", "1000"),
				entry{Name: "function", Type: tar.TypeReg, Mode: 0o555, ModTime: created, Content: string(binary)},
			),
		},
		"Nested": {
			reason: "A nested path needs its parent directories in the layer, or some runtimes create them with the wrong mode.",
			o:      with(func(o *Options) { o.Path = "/usr/local/bin/function" }),
			want: []entry{
				etcEntries(created, "65532", "65532")[0],
				etcEntries(created, "65532", "65532")[1],
				etcEntries(created, "65532", "65532")[2],
				{Name: "usr/", Type: tar.TypeDir, Mode: 0o755, ModTime: created},
				{Name: "usr/local/", Type: tar.TypeDir, Mode: 0o755, ModTime: created},
				{Name: "usr/local/bin/", Type: tar.TypeDir, Mode: 0o755, ModTime: created},
				{Name: "usr/local/bin/function", Type: tar.TypeReg, Mode: 0o555, ModTime: created, Content: string(binary)},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			img, err := Build(binary, tc.o)
			if err != nil {
				t.Fatalf("Build(...): %v", err)
			}
			layers, err := img.Layers()
			if err != nil {
				t.Fatalf("img.Layers(): %v", err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatalf("layer.Uncompressed(): %v", err)
			}
			defer rc.Close() //nolint:errcheck // Reading only.
			var got []entry
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("tar.Next(): %v", err)
				}
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatalf("reading %q: %v", h.Name, err)
				}
				got = append(got, entry{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid, ModTime: h.ModTime.UTC(), Content: string(b)})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nlayer entries: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestBuildReproducible proves what makes the xpkg reproducible: the runtime image, down to
// the tarball `make xpkg` writes, is a function of the binary and the options alone.
func TestBuildReproducible(t *testing.T) {
	type args struct {
		a, b Options
		binA []byte
		binB []byte
	}
	cases := map[string]struct {
		reason string
		args   args
		want   bool // Whether both builds are byte-identical.
	}{
		"SameInputs": {
			reason: "Two builds from the same commit must be byte-identical.",
			args:   args{a: function, b: function, binA: binary, binB: binary},
			want:   true,
		},
		"OtherEpoch": {
			reason: "SOURCE_DATE_EPOCH is an input: another commit time is another image.",
			args:   args{a: function, b: with(func(o *Options) { o.Created = o.Created.Add(time.Second) }), binA: binary, binB: binary},
			want:   false,
		},
		"OtherBinary": {
			reason: "A changed binary must change the digest, or a registry would serve stale code under a matching digest.",
			args:   args{a: function, b: function, binA: binary, binB: append([]byte("x"), binary...)},
			want:   false,
		},
		"OtherArchitecture": {
			reason: "Each platform's image is its own manifest in the index.",
			args:   args{a: function, b: with(func(o *Options) { o.Architecture = "amd64" }), binA: binary, binB: binary},
			want:   false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := writeTarball(t, tc.args.binA, tc.args.a)
			b := writeTarball(t, tc.args.binB, tc.args.b)
			if got := bytes.Equal(a, b); got != tc.want {
				t.Errorf("%s\ntarballs identical: got %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}

// writeTarball builds an image and writes it as cmd/runtime-image does, returning the bytes.
func writeTarball(t *testing.T, bin []byte, o Options) []byte {
	t.Helper()
	img, err := Build(bin, o)
	if err != nil {
		t.Fatalf("Build(...): %v", err)
	}
	p := filepath.Join(t.TempDir(), "runtime.tar")
	if err := tarball.WriteToFile(p, name.MustParseReference("function-memcached:runtime"), img); err != nil {
		t.Fatalf("tarball.WriteToFile(%q): %v", p, err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("os.ReadFile(%q): %v", p, err)
	}
	return b
}
