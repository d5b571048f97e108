// Package images builds the container images the end-to-end suite's real node runs — the pod
// sandbox, memcached, the memcached exporter and a network client — from files of this machine, and pushes them
// to the suite's registry. No public registry is reachable here and no Docker engine runs, so
// each image is one layer written with go-containerregistry: the binary, the shared libraries
// `ldd` lists for it, and the few files it reads (/etc/passwd, /etc/group).
//
// The images are reproducible: files in sorted order, every timestamp the Unix epoch, numeric
// owners, so the same inputs always give the same digest.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// epoch stamps every file and the image config, so that a rebuild gives the same digest.
var epoch = time.Unix(0, 0).UTC()

// defaultPath is the PATH of every image: the rendered memcached container runs `memcached`
// by name.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// A File is one regular file of an image.
type File struct {
	// Path is absolute, inside the image.
	Path    string
	Content []byte
	Mode    int64
}

// A Spec is what an image holds and how it runs.
type Spec struct {
	Files []File
	// User is the numeric uid:gid the image runs as unless the pod says otherwise.
	User       string
	Entrypoint []string
}

// Build builds a single-layer linux/amd64 image from s. Directories are created as needed
// (mode 0755), and /tmp exists (mode 1777), as programs expect.
func Build(s Spec) (v1.Image, error) {
	layer, err := layerTar(s.Files)
	if err != nil {
		return nil, err
	}
	// The layer is compressed once, for its digest, and its bytes kept for the push.
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer)), nil },
		tarball.WithCompressedCaching)
	if err != nil {
		return nil, errors.Wrap(err, "cannot make the image layer")
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, errors.Wrap(err, "cannot add the image layer")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the image config")
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", "amd64", v1.Time{Time: epoch}
	cf.Config.User = s.User
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.Env = []string{defaultPath}
	img, err = mutate.ConfigFile(img, cf)
	return img, errors.Wrap(err, "cannot write the image config")
}

func layerTar(files []File) ([]byte, error) {
	sorted := append([]File{}, files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{"/tmp": true}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, errors.Wrap(err, "cannot write /tmp")
	}
	for i, f := range sorted {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return nil, errors.Errorf("image path %q must be absolute and clean", f.Path)
		}
		if i > 0 && sorted[i-1].Path == f.Path {
			return nil, errors.Errorf("image path %q given twice", f.Path)
		}
		var parents []string
		for d := path.Dir(f.Path); d != "/" && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return nil, errors.Wrapf(err, "cannot write directory %s", d)
			}
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.Path[1:], Mode: f.Mode, Size: int64(len(f.Content)), ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, errors.Wrapf(err, "cannot write %s", f.Path)
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, errors.Wrapf(err, "cannot write %s", f.Path)
		}
	}
	return buf.Bytes(), errors.Wrap(tw.Close(), "cannot finish the image layer")
}

// HostFile reads the host file at host (following symbolic links: the image holds plain
// files) as the image file at imagePath, keeping its permission bits.
func HostFile(host, imagePath string) (File, error) {
	b, err := os.ReadFile(host) //nolint:gosec // The suite packs files it chose.
	if err != nil {
		return File{}, errors.Wrapf(err, "cannot read %s", host)
	}
	st, err := os.Stat(host)
	if err != nil {
		return File{}, errors.Wrapf(err, "cannot stat %s", host)
	}
	return File{Path: imagePath, Content: b, Mode: int64(st.Mode().Perm())}, nil
}

// lddPath matches the resolved path on each line of ldd's output, "libc.so.6 =>
// /lib/x86_64-linux-gnu/libc.so.6 (0x…)" and "/lib64/ld-linux-x86-64.so.2 (0x…)" alike; the
// vDSO has no path.
var lddPath = regexp.MustCompile(`(?m)(/\S+) \(0x[0-9a-f]+\)$`)

// Libraries returns the shared libraries the dynamic binary at bin loads, the dynamic loader
// included, each at the path ldd resolves it to.
func Libraries(bin string) ([]File, error) {
	out, err := exec.Command("ldd", bin).Output() //nolint:gosec // The suite's own binaries.
	if err != nil {
		return nil, errors.Wrapf(err, "cannot list the libraries of %s with ldd", bin)
	}
	var files []File
	for _, m := range lddPath.FindAllStringSubmatch(string(out), -1) {
		f, err := HostFile(m[1], m[1])
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, errors.Errorf("ldd lists no libraries for %s: %s", bin, out)
	}
	return files, nil
}

// Pause is the pod sandbox image: the static binary at bin as /pause, run as 65535.
func Pause(bin string) (v1.Image, error) {
	f, err := HostFile(bin, "/pause")
	if err != nil {
		return nil, err
	}
	return Build(Spec{Files: []File{f}, User: "65535:65535", Entrypoint: []string{"/pause"}})
}

// MemcachedUID is the user and group of Debian's memcache account as the rendered pods run
// it (render.UID), so that the image's /etc/passwd names the user the pod runs as.
const MemcachedUID = "11211"

// SASLPluginDir is where Debian's libsasl2-modules installs Cyrus SASL's mechanism plugins,
// and where Debian's libsasl2, which memcached links, loads them from.
const SASLPluginDir = "/usr/lib/x86_64-linux-gnu/sasl2"

// saslPlugins are the plugins the memcached image holds: PLAIN, the mechanism memcached's SASL
// with a password file serves. Cyrus loads them with dlopen at run time, so ldd does not list
// them; without one, every SASL authentication fails.
const saslPlugins = "libplain.so*"

// Memcached is a memcached image from the host's binary at bin (bin/memcached, built from
// Debian's source package as the official image is configured): the binary at
// /usr/bin/memcached, Cyrus SASL's PLAIN plugin from SASLPluginDir, the libraries both link,
// and /etc/passwd and /etc/group naming the memcache user (11211), whom it runs as.
func Memcached(bin string) (v1.Image, error) { return memcachedImage(bin, SASLPluginDir) }

// memcachedImage is Memcached with the plugins read from the host's pluginDir; the image holds
// them at SASLPluginDir, each symbolic link as a copy of its file.
func memcachedImage(bin, pluginDir string) (v1.Image, error) {
	f, err := HostFile(bin, "/usr/bin/memcached")
	if err != nil {
		return nil, err
	}
	plugins, err := saslPluginFiles(pluginDir)
	if err != nil {
		return nil, err
	}
	libs, err := librariesOf(append([]string{bin}, plugins.hosts...)...)
	if err != nil {
		return nil, err
	}
	libs = append(libs, plugins.files...)
	files := append([]File{f,
		{Path: "/etc/passwd", Mode: 0o644, Content: []byte("root:x:0:0:root:/:/nonexistent\n" +
			"memcache:x:" + MemcachedUID + ":" + MemcachedUID + ":memcached:/nonexistent:/nonexistent\n" +
			"nobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n")},
		{Path: "/etc/group", Mode: 0o644, Content: []byte("root:x:0:\nmemcache:x:" + MemcachedUID + ":\nnogroup:x:65534:\n")},
	}, libs...)
	return Build(Spec{Files: files, User: MemcachedUID + ":" + MemcachedUID, Entrypoint: []string{"/usr/bin/memcached"}})
}

// saslPlugin are Cyrus SASL's PLAIN plugins of the host's pluginDir: their host paths (for
// librariesOf) and their files at SASLPluginDir in an image, each symbolic link as a copy of
// its file. memcached serves PLAIN with them, and libmemcached's clients (pylibmc) authenticate
// with them.
type saslPlugin struct {
	hosts []string
	files []File
}

func saslPluginFiles(pluginDir string) (saslPlugin, error) {
	hosts, err := filepath.Glob(filepath.Join(pluginDir, saslPlugins))
	if err != nil || len(hosts) == 0 {
		return saslPlugin{}, errors.Errorf("no SASL PLAIN plugin (%s) in %s: Debian package libsasl2-modules, which `make memcached-build-deps` installs", saslPlugins, pluginDir)
	}
	p := saslPlugin{hosts: hosts}
	for _, h := range hosts {
		f, err := HostFile(h, path.Join(SASLPluginDir, filepath.Base(h)))
		if err != nil {
			return saslPlugin{}, err
		}
		p.files = append(p.files, f)
	}
	return p, nil
}

// Exporter is the Prometheus memcached exporter image from the static binary at bin, laid out
// like the upstream image: /bin/memcached_exporter as the entrypoint, run as nobody.
func Exporter(bin string) (v1.Image, error) {
	f, err := HostFile(bin, "/bin/memcached_exporter")
	if err != nil {
		return nil, err
	}
	return Build(Spec{Files: []File{f}, User: "65534:65534", Entrypoint: []string{"/bin/memcached_exporter"}})
}

// Reach is the network policy scenario's client image from the static binary at bin
// (test/e2e/cmd/reach): /reach as the entrypoint, run as nobody.
func Reach(bin string) (v1.Image, error) { return Program(bin, "/reach") }

// Program is the image of one static program, the host's bin at path in the image as the
// entrypoint, run as nobody: the suite's clients and applications.
func Program(bin, path string) (v1.Image, error) {
	f, err := HostFile(bin, path)
	if err != nil {
		return nil, err
	}
	return Build(Spec{Files: []File{f}, User: "65534:65534", Entrypoint: []string{path}})
}

// Push pushes img to ref (host/repository:tag, plain HTTP on a loopback host) and returns ref.
func Push(ctx context.Context, ref string, img v1.Image) (string, error) {
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		return "", errors.Wrapf(err, "cannot parse image reference %q", ref)
	}
	return ref, errors.Wrapf(remote.Write(tag, img, remote.WithContext(ctx)), "cannot push %s", ref)
}

// versionWord matches the first version number in a program's --version output.
var versionWord = regexp.MustCompile(`\d+\.\d+\.\d+`)

// Version runs bin with args and returns the first x.y.z in its output: what an image built
// from bin is tagged with, so the tag says which binary it holds.
func Version(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput() //nolint:gosec // The suite's own binaries.
	if err != nil {
		return "", errors.Wrapf(err, "cannot run %s %s: %s", bin, strings.Join(args, " "), out)
	}
	v := versionWord.FindString(string(out))
	if v == "" {
		return "", errors.Errorf("no version in the output of %s %s: %q", bin, strings.Join(args, " "), out)
	}
	return v, nil
}

// Mirror copies the image at src (on a plain-HTTP loopback registry) to the registry at host
// under as's repository and tag, the path a registry mirror serves as for as's own
// registry. It returns as's registry as containerd names it in its mirror configuration
// (docker.io for Docker Hub's images), and the reference a node pulls the copy by: as itself
// when as names a tag alone, and as with its digest replaced by the copy's when as names one
// (the lane's build is not the bytes that digest names, and a node verifies them).
func Mirror(ctx context.Context, host, src, as string) (registry, ref string, err error) {
	tagged, digest, _ := strings.Cut(as, "@")
	to, err := name.NewTag(tagged)
	if err != nil {
		return "", "", errors.Wrapf(err, "cannot parse image reference %q", as)
	}
	d, err := copyImage(ctx, src, host+"/"+to.RepositoryStr()+":"+to.TagStr())
	if err != nil {
		return "", "", err
	}
	ref = as
	if digest != "" {
		ref = tagged + "@" + d
	}
	registry = to.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry, ref, nil
}

// copyImage copies the image at src to dst, both on plain-HTTP loopback registries, and
// returns its digest.
func copyImage(ctx context.Context, src, dst string) (string, error) {
	from, err := name.ParseReference(src, name.Insecure)
	if err != nil {
		return "", errors.Wrapf(err, "cannot parse image reference %q", src)
	}
	img, err := remote.Image(from, remote.WithContext(ctx))
	if err != nil {
		return "", errors.Wrapf(err, "cannot read %s", src)
	}
	d, err := img.Digest()
	if err != nil {
		return "", errors.Wrapf(err, "cannot read the digest of %s", src)
	}
	if _, err := Push(ctx, dst, img); err != nil {
		return "", err
	}
	return d.String(), nil
}
