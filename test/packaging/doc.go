// Package packaging holds the tests of the packaging make targets in build/xpkg.mk: `make xpkg`
// (reproducible multi-arch packages without Docker), `make push` (one multi-arch tag) and
// `make validate` (examples checked offline against their schemas). They run make, so they test
// what a user runs, and they need the Crossplane CLI: set CROSSPLANE_CLI to bin/crossplane, as
// `make test` does. Without it they skip, except under CI=true, where they fail.
package packaging
