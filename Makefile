# function-memcached: Memcached as a self-service API on Crossplane v2.
#
#   make render   build the function and the Crossplane CLI, render the example claim, print it
#   make test     generate-check, vet, unit tests (with coverage) and the render test
#
# Every tool is built from a pinned Go module under tools/ into bin/, once, and rebuilt only
# when its pin (tools/<name>/go.mod) changes.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := render

BIN := $(CURDIR)/bin
GO ?= go
export GOFLAGS ?= -buildvcs=false

CROSSPLANE_VERSION := v2.2.1
RENDER_ADDRESS ?= 127.0.0.1:9443

$(BIN):
	@mkdir -p $(BIN)

# The Crossplane CLI (render, xpkg, beta validate). Its version string must be set at link
# time or `crossplane version` prints nothing and `beta validate` breaks.
$(BIN)/crossplane: tools/crossplane/go.mod tools/crossplane/go.sum | $(BIN)
	@echo "building crossplane CLI $(CROSSPLANE_VERSION) (first time only, a few minutes)"
	$(GO) -C tools/crossplane build -trimpath \
		-ldflags "-s -w -X github.com/crossplane/crossplane/v2/internal/version.version=$(CROSSPLANE_VERSION)" \
		-o $@ github.com/crossplane/crossplane/v2/cmd/crank

$(BIN)/controller-gen: tools/controller-gen/go.mod tools/controller-gen/go.sum | $(BIN)
	$(GO) -C tools/controller-gen build -trimpath -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

# The function itself; Go's build cache makes this cheap when nothing changed.
.PHONY: build
build: | $(BIN)
	$(GO) build -trimpath -o $(BIN)/function-memcached ./cmd/function-memcached

## generate: deepcopy, the Input CRD and both XRDs, all from the Go types.
.PHONY: generate
generate: $(BIN)/controller-gen
	$(BIN)/controller-gen object paths=./apis/... paths=./input/...
	$(BIN)/controller-gen crd:crdVersions=v1 paths=./input/... output:crd:artifacts:config=package/input
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	$(BIN)/controller-gen crd:crdVersions=v1 paths=./apis/... output:crd:artifacts:config=$$tmp; \
	$(GO) run ./cmd/xrd-gen --crd=$$tmp/cache.example.com_xmemcacheds.yaml \
		--legacy=example/definition.yaml --namespaced=example/namespaced/definition.yaml

## check-generate: fail when generated files are stale (and leave them regenerated).
GENERATED = apis/v1alpha1/zz_generated.deepcopy.go input/v1beta1/zz_generated.deepcopy.go \
	package/input/memcached.fn.example.com_inputs.yaml example/definition.yaml example/namespaced/definition.yaml
.PHONY: check-generate
check-generate: $(BIN)/controller-gen
	@before=$$(cat $(GENERATED) | sha256sum); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	if [ "$$before" != "$$(cat $(GENERATED) | sha256sum)" ]; then \
		echo "generated files were stale and have been regenerated: review and commit them"; exit 1; fi

## render: render the example claim's XR with observed resources showing a ready Deployment.
.PHONY: render
render: build $(BIN)/crossplane
	@$(BIN)/function-memcached --insecure --address=$(RENDER_ADDRESS) --metrics-address= & pid=$$!; \
	trap 'kill $$pid' EXIT; \
	$(BIN)/crossplane render example/xr.yaml example/composition.yaml example/functions.yaml \
		--xrd=example/definition.yaml --observed-resources=example/observed.yaml \
		--include-function-results \
		--function-annotations=render.crossplane.io/runtime-development-target=$(RENDER_ADDRESS)

## test: everything CI runs before the end-to-end suite.
.PHONY: test
test: check-generate $(BIN)/crossplane
	$(GO) vet ./...
	CROSSPLANE_CLI=$(BIN)/crossplane $(GO) test -count=1 -cover ./... | tee $(BIN)/test.out
	@awk '$$2 ~ /\/fn$$/ && /coverage:/ { for (i = 1; i <= NF; i++) if ($$i == "coverage:") c = $$(i+1) + 0; \
		printf "fn coverage: %s%% (minimum 85%%)\n", c; if (c < 85) exit 1 }' $(BIN)/test.out

.PHONY: clean
clean:
	rm -rf $(BIN)

include build/bench.mk
include build/xpkg.mk
include build/e2e.mk
include build/node.mk
include build/provider.mk
