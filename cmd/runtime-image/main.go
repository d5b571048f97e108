// Command runtime-image wraps a static function binary in a runtime image and writes it as a
// tarball for `crossplane xpkg build --embed-runtime-image-tarball`. It replaces `docker build`
// for `make xpkg`, which must work where no Docker engine runs. It only wires flags: the image
// is built by package runtimeimage.
package main

import (
	"os"
	"time"

	"github.com/alecthomas/kong"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/example/function-memcached/internal/runtimeimage"
)

// cli's defaults are the function's contract with Crossplane's function runtime; the
// Dockerfile states the same contract for Docker users.
type cli struct {
	Binary          string   `help:"Static binary of the function for the target platform." required:"" type:"existingfile"`
	Output          string   `help:"Where to write the image tarball." required:"" type:"path"`
	OS              string   `help:"Operating system of the binary." default:"linux"`
	Arch            string   `help:"Architecture of the binary (GOARCH)." required:""`
	Path            string   `help:"Where the binary lives in the image; the entrypoint." default:"/function"`
	User            string   `help:"Numeric non-root uid:gid the function runs as." default:"65532:65532"`
	Port            []string `help:"Ports the function serves." default:"9443/tcp"`
	SourceDateEpoch int64    `help:"Seconds since the Unix epoch stamped on every timestamp in the image, normally the commit time." env:"SOURCE_DATE_EPOCH" required:""`
	Tag             string   `help:"Tag recorded in the tarball; crossplane xpkg build ignores it." default:"function-memcached:runtime"`
}

// Run builds the image and writes the tarball.
func (c *cli) Run() error {
	bin, err := os.ReadFile(c.Binary)
	if err != nil {
		return errors.Wrapf(err, "cannot read binary %q", c.Binary)
	}
	img, err := runtimeimage.Build(bin, runtimeimage.Options{
		OS:           c.OS,
		Architecture: c.Arch,
		Path:         c.Path,
		User:         c.User,
		ExposedPorts: c.Port,
		Created:      time.Unix(c.SourceDateEpoch, 0),
	})
	if err != nil {
		return errors.Wrapf(err, "cannot build runtime image from %q", c.Binary)
	}
	tag, err := name.NewTag(c.Tag)
	if err != nil {
		return errors.Wrapf(err, "cannot parse tag %q", c.Tag)
	}
	return errors.Wrapf(tarball.WriteToFile(c.Output, tag, img), "cannot write image %q", c.Output)
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("Build the function's runtime image tarball without Docker."))
	ctx.FatalIfErrorf(ctx.Run())
}
