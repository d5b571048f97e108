// Package registry serves an OCI registry on 127.0.0.1 from inside the suite's process and
// pushes the function's real package to it, so that Crossplane's package manager pulls,
// unpacks and installs exactly what `make xpkg` built. Crossplane reaches a registry on a
// loopback address over plain HTTP without any flag.
//
// It also extracts the function's binary from the package's embedded runtime image, so the
// suite runs the very binary the package ships.
package registry

import (
	"archive/tar"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Registry is an in-memory registry listening on 127.0.0.1.
type Registry struct {
	// Host is 127.0.0.1:<port>, the registry part of every reference pushed here.
	Host string
	// TLSHost is host:port of the same registry served over TLS (ServeTLS), empty until then.
	TLSHost string
	srv     *http.Server
	tls     *http.Server
}

// Start serves a registry on a free port of 127.0.0.1, logging requests to logTo.
func Start(logTo io.Writer) (*Registry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.Wrap(err, "cannot listen for the registry")
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(logTo, "registry ", log.LstdFlags))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(l) }()
	return &Registry{Host: l.Addr().String(), srv: srv}, nil
}

// ServeTLS serves the same images over TLS on a free port of ip, with the certificate and key
// in PEM, for what reaches it from another network namespace and will not speak plain HTTP to
// anything but loopback: containerd on a cluster's node, Crossplane in a pod. It sets TLSHost.
func (r *Registry) ServeTLS(ip string, certPEM, keyPEM []byte) error {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return errors.Wrap(err, "cannot load the registry's certificate")
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return errors.Wrapf(err, "cannot listen for the registry on %s", ip)
	}
	r.tls = &http.Server{Handler: r.srv.Handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = r.tls.ServeTLS(l, "", "") }()
	r.TLSHost = l.Addr().String()
	return nil
}

// Stop stops serving.
func (r *Registry) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r.tls != nil {
		_ = r.tls.Shutdown(ctx)
	}
	return errors.Wrap(r.srv.Shutdown(ctx), "cannot stop the registry")
}

// Push pushes the package image tarball at xpkg to repository repo under tag and returns its
// reference by digest (<host>/<repo>@sha256:…): a tag pushed again would make Crossplane
// install a new revision, a digest never changes under it.
func (r *Registry) Push(ctx context.Context, xpkg, repo, tag string) (string, error) {
	img, err := tarball.ImageFromPath(xpkg, nil)
	if err != nil {
		return "", errors.Wrapf(err, "cannot read package %s", xpkg)
	}
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return "", errors.Wrap(err, "cannot make the package's reference")
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", errors.Wrapf(err, "cannot push %s", ref)
	}
	d, err := img.Digest()
	if err != nil {
		return "", errors.Wrap(err, "cannot compute the package's digest")
	}
	return r.Host + "/" + repo + "@" + d.String(), nil
}

// ExtractEntrypoint writes the file that the package's runtime image runs (the first word
// of its Entrypoint) to dst, executable, and returns the rest of the entrypoint and the
// image's command as arguments.
func ExtractEntrypoint(xpkg, dst string) ([]string, error) {
	img, err := tarball.ImageFromPath(xpkg, nil)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read package %s", xpkg)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the package's image config")
	}
	entry := append(append([]string{}, cfg.Config.Entrypoint...), cfg.Config.Cmd...)
	if len(entry) == 0 {
		return nil, errors.New("the package's runtime image has no entrypoint: was it built with an embedded runtime image?")
	}
	if err := extractFile(img, entry[0], dst); err != nil {
		return nil, err
	}
	return entry[1:], nil
}

// PackageYAML reads the package.yaml of an xpkg file: the objects Crossplane installs from it.
func PackageYAML(xpkg string) ([]byte, error) {
	img, err := tarball.ImageFromPath(xpkg, nil)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read package %s", xpkg)
	}
	var b []byte
	err = withFile(img, "package.yaml", func(r io.Reader) (rerr error) {
		b, rerr = io.ReadAll(r)
		return rerr
	})
	return b, errors.Wrapf(err, "cannot read the package.yaml of %s", xpkg)
}

// extractFile writes the regular file file of img's filesystem to dst, executable.
func extractFile(img v1.Image, file, dst string) error {
	return withFile(img, file, func(r io.Reader) error {
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755) //nolint:gosec // An executable, on purpose.
		if err != nil {
			return errors.Wrapf(err, "cannot create %s", dst)
		}
		if _, err := io.Copy(f, r); err != nil { //nolint:gosec // Our own package.
			_ = f.Close()
			return errors.Wrapf(err, "cannot extract %s", file)
		}
		return errors.Wrapf(f.Close(), "cannot write %s", dst)
	})
}

// withFile calls read with the content of the regular file file of img's flattened
// filesystem.
func withFile(img v1.Image, file string, read func(io.Reader) error) error {
	rc := mutate.Extract(img)
	defer rc.Close() //nolint:errcheck // Read-only.
	want := strings.TrimPrefix(path.Clean(file), "/")
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return errors.Errorf("the package's image has no file %s", file)
		}
		if err != nil {
			return errors.Wrap(err, "cannot read the package's image")
		}
		if strings.TrimPrefix(path.Clean(h.Name), "/") == want && h.Typeflag == tar.TypeReg {
			return read(tr)
		}
	}
}
