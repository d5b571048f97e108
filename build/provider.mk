# The Memcached provider (managed resource Instance, memcached.example.com): included at the end
# of the top-level Makefile, which defines BIN, GO and the rule for $(BIN)/controller-gen, and,
# through build/xpkg.mk, $(BIN)/runtime-image and $(CROSSPLANE).
#
#   make provider-build           the provider binary, bin/provider
#   make provider-xpkg            one provider xpkg per platform in _output/, without Docker
#   make provider-validate        check package-provider/examples against the CRDs, offline
#
# The provider is built from the same module as the function and shares render, readiness and
# resolve with it; only its API types, controllers and package directory are its own.

PROVIDER_NAME ?= provider-memcached
PROVIDER_ARCHES ?= amd64 arm64
PROVIDER_OUTPUT_DIR ?= $(CURDIR)/_output
PROVIDER_CRDS := package-provider/crds
PROVIDER_SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
PROVIDER_XPKG_FILES := $(foreach a,$(PROVIDER_ARCHES),$(PROVIDER_OUTPUT_DIR)/$(PROVIDER_NAME)-$(a).xpkg)

## provider-build: build the provider for this machine into bin/provider.
.PHONY: provider-build
provider-build: | $(BIN)
	$(GO) build -trimpath -o $(BIN)/provider ./cmd/provider

## provider-xpkg: build one provider package per platform in $(PROVIDER_OUTPUT_DIR), without Docker.
# The runtime image is made by the packaging tooling's cmd/runtime-image (build/xpkg.mk), with the
# provider's own contract: the binary at /provider, non-root, metrics on 8080. Crossplane's
# package manager runs the entrypoint without arguments; the flags' defaults are the provider's.
.PHONY: provider-xpkg
provider-xpkg: $(PROVIDER_XPKG_FILES)
	@cd $(PROVIDER_OUTPUT_DIR) && sha256sum $(notdir $(PROVIDER_XPKG_FILES))

.PHONY: $(PROVIDER_XPKG_FILES)
$(PROVIDER_XPKG_FILES): $(PROVIDER_OUTPUT_DIR)/$(PROVIDER_NAME)-%.xpkg: $(BIN)/runtime-image $(BIN)/crossplane
	@test -n "$(PROVIDER_SOURCE_DATE_EPOCH)" || { echo "PROVIDER_SOURCE_DATE_EPOCH is empty and git cannot tell the last commit time: set it"; exit 1; }
	@mkdir -p $(PROVIDER_OUTPUT_DIR)/provider_linux_$*
	CGO_ENABLED=0 GOOS=linux GOARCH=$* GOAMD64=v1 GOARM64=v8.0 \
		$(GO) build -trimpath -buildvcs=false -ldflags="-s -w" \
		-o $(PROVIDER_OUTPUT_DIR)/provider_linux_$*/provider ./cmd/provider
	$(BIN)/runtime-image --binary=$(PROVIDER_OUTPUT_DIR)/provider_linux_$*/provider --arch=$* \
		--path=/provider --user=65532:65532 --port=8080/tcp --tag=$(PROVIDER_NAME):runtime \
		--source-date-epoch=$(PROVIDER_SOURCE_DATE_EPOCH) --output=$(PROVIDER_OUTPUT_DIR)/provider_linux_$*/runtime.tar
	$(BIN)/crossplane xpkg build --package-root=package-provider --examples-root=package-provider/examples \
		--ignore='examples/*,rbac/*' \
		--embed-runtime-image-tarball=$(PROVIDER_OUTPUT_DIR)/provider_linux_$*/runtime.tar -o $@

## provider-validate: validate the provider's examples offline against its CRDs (schemas and CEL
# rules), with build/xpkg.mk's validate target and its seeded Crossplane cache.
.PHONY: provider-validate
provider-validate:
	@$(MAKE) --no-print-directory validate VALIDATE_EXTENSIONS=$(PROVIDER_CRDS) \
		VALIDATE_RESOURCES=$$(find package-provider/examples -name '*.yaml' | LC_ALL=C sort | paste -sd, -)
