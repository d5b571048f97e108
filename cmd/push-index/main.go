// Command push-index pushes image tarballs (one per platform, as cmd/runtime-image writes them)
// as one multi-arch image index under one tag, so that every node pulls the binary it can run.
// `make push` uses it for the auth proxy's image, where `crossplane xpkg push` does the same
// for the function's packages, and prints the reference with the index's digest, which a
// release names the image by. It only wires flags to go-containerregistry.
package main

import (
	"fmt"

	"github.com/alecthomas/kong"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

type cli struct {
	Image []string `help:"Image tarball of one platform; repeat for each." required:"" type:"existingfile"`
	Tag   string   `arg:"" help:"Where to push the index, registry/repository:tag. Registries on localhost or 127.0.0.1 are reached over plain HTTP."`
}

// Run reads every tarball, indexes the images by their platform and pushes the index.
func (c *cli) Run() error {
	ref, err := name.NewTag(c.Tag)
	if err != nil {
		return errors.Wrapf(err, "invalid tag %q", c.Tag)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range c.Image {
		img, err := tarball.ImageFromPath(p, nil)
		if err != nil {
			return errors.Wrapf(err, "cannot read image %s", p)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return errors.Wrapf(err, "cannot read the config of %s", p)
		}
		if cf.OS == "" || cf.Architecture == "" {
			return errors.Errorf("image %s names no platform", p)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant},
		}})
	}
	if err := remote.WriteIndex(ref, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return errors.Wrapf(err, "cannot push %s", ref)
	}
	// The reference a release names the image by: its tag and the digest of what was pushed
	// (docs/images.md), so that every node runs these bytes.
	d, err := idx.Digest()
	if err != nil {
		return errors.Wrapf(err, "cannot compute the digest of %s", ref)
	}
	fmt.Printf("pushed %s@%s\n", c.Tag, d)
	return nil
}

func main() {
	ctx := kong.Parse(&cli{}, kong.Description("Push per-platform image tarballs as one multi-arch image index."))
	ctx.FatalIfErrorf(ctx.Run())
}
