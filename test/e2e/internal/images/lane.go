package images

import (
	"context"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// MemcachedBinary is the memcached the lanes' memcached image is built from: binDir/memcached,
// built by `make bin/memcached` from Debian's source package with the official image's
// configure flags, since Debian's own binary lacks SASL from a password file.
func MemcachedBinary(binDir string) string { return filepath.Join(binDir, "memcached") }

// Lane holds the references of the node lane's images in the suite's registry.
type Lane struct {
	// Pause is the pod sandbox image containerd starts every pod with.
	Pause string
	// Memcached and Exporter are what the node lane's Composition defaults claims to.
	Memcached, Exporter string
	// Reach is the client the network policy scenario runs in pods (test/e2e/cmd/reach).
	Reach string
	// Registry is the registry's host:port, the only one the lane's policy allows.
	Registry string
}

// BuildLane builds the pause image from binDir/pause, the memcached image from
// MemcachedBinary(binDir), the exporter image from binDir/memcached_exporter and the client
// image from binDir/reach, tags each with the version of the binary it holds (the suite's own
// binaries with 1), and pushes them to the registry at host.
func BuildLane(ctx context.Context, host, binDir string) (Lane, error) {
	memcachedBin := MemcachedBinary(binDir)
	if _, err := os.Stat(memcachedBin); err != nil {
		return Lane{}, errors.Wrap(err, "no memcached for the lane's image: run `make bin/memcached` (make e2e does)")
	}
	memcachedVersion, err := Version(memcachedBin, "-V")
	if err != nil {
		return Lane{}, err
	}
	exporterBin := filepath.Join(binDir, "memcached_exporter")
	exporterVersion, err := Version(exporterBin, "--version")
	if err != nil {
		return Lane{}, err
	}
	l := Lane{Registry: host}
	for _, i := range []struct {
		ref   *string
		repo  string
		build func() (v1.Image, error)
	}{
		{&l.Pause, "e2e/pause:1", func() (v1.Image, error) { return Pause(filepath.Join(binDir, "pause")) }},
		{&l.Memcached, "e2e/memcached:" + memcachedVersion, func() (v1.Image, error) { return Memcached(memcachedBin) }},
		{&l.Exporter, "e2e/memcached-exporter:v" + exporterVersion, func() (v1.Image, error) { return Exporter(exporterBin) }},
		{&l.Reach, "e2e/reach:1", func() (v1.Image, error) { return Reach(filepath.Join(binDir, "reach")) }},
	} {
		img, err := i.build()
		if err != nil {
			return Lane{}, err
		}
		if *i.ref, err = Push(ctx, host+"/"+i.repo, img); err != nil {
			return Lane{}, err
		}
	}
	return l, nil
}
