# function-memcached: Memcached as a self-service API on Crossplane v2.
#
#   make render   build the function and the Crossplane CLI, render the example claim, print it
#   make test     generate-check, vet, unit tests (with coverage, the product's under the race
#                 detector) and the render test
#
# Every tool is built from a pinned Go module under tools/ into bin/, once, and rebuilt only
# when its pin (tools/<name>/go.mod) changes.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := render

BIN := $(CURDIR)/bin
GO ?= go

# module_dir prints where the module cache holds module $(2) at the version tools/$(1) pins,
# downloading it first: `go list -m` reports no directory for a module not downloaded yet, and
# on a new machine nothing says another build has downloaded it by then.
module_dir = $(GO) -C tools/$(1) mod download $(2) && $(GO) -C tools/$(1) list -m -f '{{.Dir}}' $(2)
# -trimpath for every build and test, as the tools are built: the Go build cache keys a compiled
# package by its flags too, so the product's tests reuse what building the Crossplane CLI and
# core compiled (tools/crossplane pins the same dependency versions as go.mod).
export GOFLAGS ?= -buildvcs=false -trimpath
# One build configuration for every tool, test and image: static binaries (what an image with
# nothing else in it needs), and one Go build cache for all of them, since cgo on or off changes
# the cache key of every package that imports net (all of Kubernetes and Crossplane).
export CGO_ENABLED ?= 0

CROSSPLANE_VERSION := v2.5.0
RENDER_ADDRESS ?= 127.0.0.1:9443

$(BIN):
	@mkdir -p $(BIN)

# The Crossplane CLI (composition render, xpkg, resource validate). Its version string is set at
# link time, where its own build sets it, or `crossplane version` prints nothing.
$(BIN)/crossplane: tools/crossplane/go.mod tools/crossplane/go.sum | $(BIN)
	@echo "building crossplane CLI $(CROSSPLANE_VERSION) (first time only; how long: docs/performance.md)"
	$(GO) -C tools/crossplane build -trimpath \
		-ldflags "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$(CROSSPLANE_VERSION)" \
		-o $@ github.com/crossplane/cli/v2/cmd/crossplane

$(BIN)/controller-gen: tools/controller-gen/go.mod tools/controller-gen/go.sum | $(BIN)
	$(GO) -C tools/controller-gen build -trimpath -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

# The function itself; Go's build cache makes this cheap when nothing changed.
.PHONY: build
build: | $(BIN)
	$(GO) build -trimpath -o $(BIN)/function-memcached ./cmd/function-memcached

$(BIN)/angryjet: tools/angryjet/go.mod tools/angryjet/go.sum | $(BIN)
	$(GO) -C tools/angryjet build -trimpath -o $@ github.com/crossplane/crossplane-tools/cmd/angryjet

## generate: every generated file, from the Go types: deepcopy (apis/, input/), the Input CRD
## (package/input), both XRDs (example/), the provider's CRDs (package-provider/crds) and its
## crossplane-runtime method sets (angryjet's zz_generated.*.go in apis/memcached).
# The generators run in a scratch copy of the types; only a file whose content changed is then
# moved into the tree, whole (a rename), and a CRD no type makes any more is removed. So a tree
# that is up to date is never touched: `make -j2 test e2e` packages the provider while
# check-generate runs, and the generators' own writes (a CRD directory emptied first, files
# truncated and rewritten) once gave it a package without CRDs (docs/e2e.md).
GENERATED_DIRS := package/input package-provider/crds
.PHONY: generate
generate: $(BIN)/controller-gen $(BIN)/angryjet
	@set -e; scratch=$$(mktemp -d); trap 'rm -rf $$scratch' EXIT; \
	cp go.mod go.sum $$scratch/; cp -R apis input $$scratch/; mkdir -p $$scratch/example/namespaced; \
	cd $$scratch; \
	$(BIN)/controller-gen object paths=./apis/... paths=./input/...; \
	$(BIN)/controller-gen crd:crdVersions=v1 paths=./input/... output:crd:artifacts:config=package/input; \
	$(BIN)/controller-gen crd:crdVersions=v1 paths=./apis/memcached/... output:crd:artifacts:config=package-provider/crds; \
	$(BIN)/angryjet generate-methodsets ./apis/memcached/...; \
	$(BIN)/controller-gen crd:crdVersions=v1 paths=./apis/cache/... output:crd:artifacts:config=xrd-crd; \
	generated=$$({ find apis input -name 'zz_generated*.go'; find $(GENERATED_DIRS) -name '*.yaml'; } | LC_ALL=C sort); \
	cd $(CURDIR); \
	$(GO) run -trimpath ./cmd/xrd-gen --crd=$$scratch/xrd-crd/cache.example.com_xmemcacheds.yaml \
		--legacy=$$scratch/example/definition.yaml --namespaced=$$scratch/example/namespaced/definition.yaml; \
	for f in $$generated example/definition.yaml example/namespaced/definition.yaml; do \
		if ! cmp -s $$scratch/$$f $$f; then \
			mkdir -p $$(dirname $$f); cp $$scratch/$$f $$f.generating; mv $$f.generating $$f; echo "generated $$f"; fi; \
	done; \
	for f in $$(find $(GENERATED_DIRS) -name '*.yaml' | LC_ALL=C sort); do \
		if [ ! -e $$scratch/$$f ]; then rm $$f; echo "removed $$f"; fi; \
	done

## check-generate: fail when any generated file is stale (and leave them regenerated).
# generate names every file it changes, and only those.
.PHONY: check-generate
check-generate: $(BIN)/controller-gen $(BIN)/angryjet
	@changed=$$($(MAKE) --no-print-directory generate) || exit 1; \
	if [ -n "$$changed" ]; then \
		echo "generated files were stale and have been regenerated: review and commit them"; echo "$$changed"; exit 1; fi

## render: render the example claim's XR with observed resources showing a ready Deployment.
# The CLI runs Crossplane's own composition engine from the pinned core binary (no Docker).
.PHONY: render
render: build $(BIN)/crossplane $(BIN)/crossplane-core
	@$(BIN)/function-memcached --insecure --address=$(RENDER_ADDRESS) --metrics-address= & pid=$$!; \
	trap 'kill $$pid' EXIT; \
	$(BIN)/crossplane composition render example/xr.yaml example/composition.yaml example/functions.yaml \
		--xrd=example/definition.yaml --observed-resources=example/observed.yaml \
		--include-function-results --crossplane-binary=$(BIN)/crossplane-core \
		--function-annotations=render.crossplane.io/runtime-development-target=$(RENDER_ADDRESS)

# The monitoring and plot tests (their own modules, promtool built first) run beside the
# product's vet and tests, their output printed after: on a new machine they compile from cold,
# and run after the product's tests they were the last minutes of CI (docs/performance.md).
# Through a variable, not $(MAKE) in the recipe: a recipe line naming $(MAKE) is not held back
# by --output-sync, and .ci/run's log would mix this target's lines into the suite's.
# MAKEFLAGS is emptied for it (no jobserver reaches it this way), so GO is passed on itself.
TEST_SIDE := $(MAKE) --no-print-directory GO='$(GO)' monitoring-test scaleplot-test
# Every go build, test, vet and run here says -trimpath: it is part of each package's build
# cache key, so tests compiled without it build again every dependency the images' -trimpath
# builds compiled (751 CPU-seconds for the product's tests instead of 348 after `make xpkg`
# from an empty cache; in a whole cold CI run no difference showed: docs/performance.md).
# go test runs with -vet=off: `go vet ./...` before it has run every analyzer on the same
# packages and their test files, and go test's own vet (a subset of them, with its own flags, so
# nothing of go vet's cached work is reused) repeated it: 144 CPU-seconds on a new machine.
# The product's packages run under the race detector: the function serves concurrent calls
# and the provider runs many workers, each sharing caches. The detector needs cgo, so their
# tests compile their dependencies a second time, with cgo on (what that adds to a cold run:
# docs/performance.md, building and CI). The end-to-end suites' own packages, the docs and
# packaging checks and the example run without it.
# MEMCACHED_BIN is the memcached test/memcached, internal/authproxy and test/monitoring run:
# bin/memcached, built as the official image is (build/memcached.mk), not Debian's package.
RACE_PACKAGES := ./fn/... ./input/... ./apis/... ./internal/... ./cmd/...
PLAIN_PACKAGES := ./test/... ./example/...
## test: everything CI runs before the end-to-end suite.
.PHONY: test
test: check-generate $(BIN)/crossplane $(BIN)/crossplane-core $(BIN)/memcached $(BIN)/memcached_exporter
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "not gofmt-ed: $$unformatted"; exit 1; fi
	@MAKEFLAGS= $(TEST_SIDE) >$(BIN)/test-side.out 2>&1 & side=$$!; \
	rc=0; \
	echo "$(GO) vet -trimpath ./..."; $(GO) vet -trimpath ./... || rc=1; \
	if [ $$rc = 0 ]; then \
		echo "CGO_ENABLED=1 CROSSPLANE_CLI=$(BIN)/crossplane CROSSPLANE_CORE=$(BIN)/crossplane-core MEMCACHED_BIN=$(MEMCACHED_BIN) $(GO) test -race -trimpath -count=1 -cover -vet=off $(RACE_PACKAGES)"; \
		CGO_ENABLED=1 CROSSPLANE_CLI=$(BIN)/crossplane CROSSPLANE_CORE=$(BIN)/crossplane-core MEMCACHED_BIN=$(MEMCACHED_BIN) $(GO) test -race -trimpath -count=1 -cover -vet=off $(RACE_PACKAGES) | tee $(BIN)/test.out || rc=1; \
	fi; \
	if [ $$rc = 0 ]; then \
		echo "CROSSPLANE_CLI=$(BIN)/crossplane CROSSPLANE_CORE=$(BIN)/crossplane-core MEMCACHED_BIN=$(MEMCACHED_BIN) $(GO) test -trimpath -count=1 -cover -vet=off $(PLAIN_PACKAGES)"; \
		CROSSPLANE_CLI=$(BIN)/crossplane CROSSPLANE_CORE=$(BIN)/crossplane-core MEMCACHED_BIN=$(MEMCACHED_BIN) $(GO) test -trimpath -count=1 -cover -vet=off $(PLAIN_PACKAGES) | tee -a $(BIN)/test.out || rc=1; \
	fi; \
	if [ $$rc = 0 ]; then \
		awk '$$2 ~ /\/fn$$/ && /coverage:/ { for (i = 1; i <= NF; i++) if ($$i == "coverage:") c = $$(i+1) + 0; \
			printf "fn coverage: %s%% (minimum 85%%)\n", c; if (c < 85) exit 1 }' $(BIN)/test.out || rc=1; \
	fi; \
	wait $$side || rc=1; cat $(BIN)/test-side.out; exit $$rc

## modules: download every module this repository builds or tests with (its own, test/'s and
## each tool's), all at once. Building downloads what it needs too, but one module after
## another between compiles; .ci/run starts this in the background first, so that on a new
## machine the downloads overlap the first builds (docs/performance.md, the CI rows).
MODULE_DIRS := $(dir $(shell git ls-files '*go.mod' 2>/dev/null))
.PHONY: modules
modules:
	@printf '%s\n' $(MODULE_DIRS) | xargs -P $(words $(MODULE_DIRS)) -I{} $(GO) -C {} mod download

.PHONY: clean
clean:
	rm -rf $(BIN)

include build/bench.mk
include build/xpkg.mk
include build/authproxy.mk
include build/memcached.mk
include build/e2e.mk
include build/node.mk
include build/provider.mk
include build/monitoring.mk
include build/scale.mk
include build/cluster.mk
