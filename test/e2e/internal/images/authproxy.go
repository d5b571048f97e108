package images

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/runtimeimage"
)

// AuthProxy builds the auth proxy's image the way `make auth-proxy-image` does — its static
// binary, built from repo, in one layer, run as memcached's user — and pushes it to the
// registry at host. It returns the image's reference there.
func AuthProxy(ctx context.Context, repo, host string) (string, error) {
	dir, err := os.MkdirTemp("", "auth-proxy-")
	if err != nil {
		return "", errors.Wrap(err, "cannot make a build directory")
	}
	defer os.RemoveAll(dir) //nolint:errcheck // A temporary directory.
	bin := filepath.Join(dir, "memcached-auth-proxy")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/memcached-auth-proxy") //nolint:gosec // The repository's own command.
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.Wrapf(err, "cannot build the auth proxy: %s", out)
	}
	b, err := os.ReadFile(bin) //nolint:gosec // Just built.
	if err != nil {
		return "", errors.Wrap(err, "cannot read the auth proxy binary")
	}
	img, err := runtimeimage.Build(b, runtimeimage.Options{
		OS: "linux", Architecture: "amd64", Path: "/memcached-auth-proxy", User: MemcachedUID + ":" + MemcachedUID,
		ExposedPorts: []string{"11213/tcp"}, Created: time.Unix(0, 0),
	})
	if err != nil {
		return "", errors.Wrap(err, "cannot build the auth proxy image")
	}
	return Push(ctx, host+"/e2e/memcached-auth-proxy:test", img)
}
