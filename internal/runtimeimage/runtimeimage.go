// Package runtimeimage builds the OCI image that Crossplane runs as the function's container,
// from nothing but a static binary: no base image, no Docker daemon, no network. `crossplane
// xpkg build --embed-runtime-image-tarball` embeds the image in the package, so everything in
// it must follow from its inputs. The same binary and options always give the same digest.
// That makes the xpkg reproducible, so anyone can rebuild a published package from its commit
// and compare digests.
package runtimeimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"path"
	"regexp"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Options describe the image around the binary. Build has no defaults: the function's
// contract with Crossplane (entrypoint, user, port) belongs to the caller, which states it once.
type Options struct {
	// OS and Architecture are the image's platform. `crossplane xpkg push` copies them into
	// the multi-arch index, and that is how a node pulls the binary it can run.
	OS, Architecture string

	// Path is where the binary lives in the image. The entrypoint runs it without arguments:
	// Crossplane's function runtime configures the function through the environment
	// (TLS_SERVER_CERTS_DIR) and expects the default gRPC port.
	Path string

	// User the container runs as, as numeric "uid" or "uid:gid" (gid defaults to uid). It must
	// be numeric: the image's /etc/passwd names only this user, so there is no other name to
	// resolve. It must not be root: Crossplane's function Deployments set runAsNonRoot, and the
	// kubelet refuses to start a root image.
	User string

	// ExposedPorts the function serves, like "9443/tcp". They are documentation for whoever
	// runs the image; Crossplane's runtime sets up its own port.
	ExposedPorts []string

	// Created stamps the config, the history entry and the binary's modification time. Take
	// it from SOURCE_DATE_EPOCH, never from the clock: the clock would make every build unique.
	Created time.Time
}

// numericUser matches "uid" or "uid:gid".
var numericUser = regexp.MustCompile(`^[0-9]+(:[0-9]+)?$`)

// Build returns a single-layer image that holds binary at o.Path and runs it as o.User.
func Build(binary []byte, o Options) (v1.Image, error) {
	if err := validate(binary, o); err != nil {
		return nil, err
	}
	created := o.Created.UTC().Truncate(time.Second)

	layerTar, err := layerTarball(binary, o.Path, o.User, created)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot build the layer holding %q", o.Path)
	}
	// Every node pulls this layer: gzip's default level, rather than go-containerregistry's
	// fastest, makes it markedly smaller for a second more, and the best level saves next to
	// nothing more for seconds (docs/performance.md, packaging). Caching means the binary is
	// compressed once rather than twice (once for the digest, again for the write).
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
	if err != nil {
		return nil, errors.Wrap(err, "cannot compress the layer")
	}

	ports := make(map[string]struct{}, len(o.ExposedPorts))
	for _, p := range o.ExposedPorts {
		ports[p] = struct{}{}
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		OS:           o.OS,
		Architecture: o.Architecture,
		Created:      v1.Time{Time: created},
		Config: v1.Config{
			Entrypoint:   []string{o.Path},
			User:         o.User,
			ExposedPorts: ports,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, errors.Wrap(err, "cannot set the image config")
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "runtimeimage: COPY " + path.Base(o.Path) + " " + o.Path,
		},
	})
	return img, errors.Wrap(err, "cannot add the layer to the image")
}

// validate rejects options that would build an image Kubernetes cannot run.
func validate(binary []byte, o Options) error {
	switch {
	case len(binary) == 0:
		return errors.New("the binary is empty")
	case o.OS == "" || o.Architecture == "":
		return errors.Errorf("os %q and architecture %q are both required", o.OS, o.Architecture)
	case !path.IsAbs(o.Path) || path.Clean(o.Path) != o.Path || o.Path == "/":
		return errors.Errorf("path %q must be a clean absolute file path", o.Path)
	case !numericUser.MatchString(o.User):
		return errors.Errorf("user %q must be numeric uid or uid:gid: the image's /etc/passwd is made from it", o.User)
	case strings.TrimLeft(strings.SplitN(o.User, ":", 2)[0], "0") == "":
		return errors.Errorf("user %q is root: Crossplane runs functions with runAsNonRoot", o.User)
	case o.Created.IsZero():
		return errors.New("created time is required: set it from SOURCE_DATE_EPOCH")
	}
	return nil
}

// layerTarball returns an uncompressed tar holding /etc/passwd and /etc/group, which name user
// ("uid" or "uid:gid") nonroot, the parent directories of p and, at p, the binary: owned by
// root, readable and executable by everyone, writable by no one, so the non-root user can run
// it but not replace it.
//
// The passwd entry carries the user's group to Kubernetes: the kubelet passes a container
// runtime only the image's uid (as runAsUser), and the runtime takes the gid from the image's
// /etc/passwd — without one, the function would run in group 0 (root). distroless's nonroot
// image, the Dockerfile's base, has the same entry.
func layerTarball(binary []byte, p, user string, modTime time.Time) ([]byte, error) {
	buf := &bytes.Buffer{}
	tw := tar.NewWriter(buf)
	uid, gid, ok := strings.Cut(user, ":")
	if !ok {
		gid = uid
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755, ModTime: modTime}); err != nil {
		return nil, errors.Wrap(err, "cannot write directory etc/")
	}
	for _, f := range []struct{ name, content string }{
		{"etc/group", "nonroot:x:" + gid + ":\n"},
		{"etc/passwd", "nonroot:x:" + uid + ":" + gid + ":nonroot:/nonexistent:/sbin/nologin\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o444, Size: int64(len(f.content)), ModTime: modTime}); err != nil {
			return nil, errors.Wrapf(err, "cannot write header of %q", f.name)
		}
		if _, err := tw.Write([]byte(f.content)); err != nil {
			return nil, errors.Wrapf(err, "cannot write %q", f.name)
		}
	}
	name := strings.TrimPrefix(p, "/")
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/") + "/"
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: modTime}); err != nil {
			return nil, errors.Wrapf(err, "cannot write directory %q", dir)
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o555, Size: int64(len(binary)), ModTime: modTime}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, errors.Wrapf(err, "cannot write header of %q", name)
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, errors.Wrapf(err, "cannot write %q", name)
	}
	if err := tw.Close(); err != nil {
		return nil, errors.Wrap(err, "cannot finish the tar")
	}
	return buf.Bytes(), nil
}
