# Packaging without Docker: included from the top-level Makefile, which defines BIN, GO and
# the rule for $(BIN)/crossplane.
#
#   make xpkg                              one xpkg per platform in _output/, each embedding a
#                                          runtime image built in Go (cmd/runtime-image)
#   make push REGISTRY=<reg> VERSION=<v>   build, then push both as one multi-arch tag
#                                          <reg>/function-memcached:<v>
#   make validate                          check the examples against the XRDs, the Input CRD
#                                          and Crossplane's own CRDs, offline
#
# Two `make xpkg` runs from the same commit write byte-identical xpkgs: static binaries without
# VCS stamps, and every timestamp taken from SOURCE_DATE_EPOCH (the last commit time unless set).

XPKG_NAME ?= function-memcached
XPKG_ARCHES ?= amd64 arm64
OUTPUT_DIR ?= $(CURDIR)/_output
CROSSPLANE ?= $(BIN)/crossplane
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)

# Files under example/ that are render fixtures rather than examples a user applies:
# observed.yaml holds composed resources with made-up status, and xr.yaml is the XR Crossplane
# would derive from claim.yaml (claimRef and all). Left out of the package's examples layer.
XPKG_EXAMPLES_IGNORE ?= observed.yaml,xr.yaml

XPKG_FILES := $(foreach a,$(XPKG_ARCHES),$(OUTPUT_DIR)/$(XPKG_NAME)-$(a).xpkg)

xpkg_empty :=
xpkg_space := $(xpkg_empty) $(xpkg_empty)
xpkg_comma := ,

## xpkg: build one Crossplane package per platform in $(OUTPUT_DIR), without Docker.
.PHONY: xpkg
xpkg: $(XPKG_FILES)
	@cd $(OUTPUT_DIR) && sha256sum $(notdir $(XPKG_FILES))

# Always rebuilt: Go's build cache decides what actually needs compiling, and a package is
# never stale. GOAMD64/GOARM64 are pinned so that a developer's environment cannot change the
# binary.
.PHONY: $(XPKG_FILES)
$(XPKG_FILES): $(OUTPUT_DIR)/$(XPKG_NAME)-%.xpkg: $(BIN)/runtime-image $(CROSSPLANE)
	@test -n "$(SOURCE_DATE_EPOCH)" || { echo "SOURCE_DATE_EPOCH is empty and git cannot tell the last commit time: set it"; exit 1; }
	@mkdir -p $(OUTPUT_DIR)/linux_$*
	CGO_ENABLED=0 GOOS=linux GOARCH=$* GOAMD64=v1 GOARM64=v8.0 \
		$(GO) build -trimpath -buildvcs=false -ldflags="-s -w" \
		-o $(OUTPUT_DIR)/linux_$*/function ./cmd/function-memcached
	$(BIN)/runtime-image --binary=$(OUTPUT_DIR)/linux_$*/function --arch=$* \
		--source-date-epoch=$(SOURCE_DATE_EPOCH) --output=$(OUTPUT_DIR)/linux_$*/runtime.tar
	$(CROSSPLANE) xpkg build --package-root=package --examples-root=example \
		--ignore=$(XPKG_EXAMPLES_IGNORE) \
		--embed-runtime-image-tarball=$(OUTPUT_DIR)/linux_$*/runtime.tar -o $@

.PHONY: $(BIN)/runtime-image
$(BIN)/runtime-image: | $(BIN)
	$(GO) build -trimpath -o $@ ./cmd/runtime-image

# Fail before building anything when push has nowhere to go.
ifneq ($(filter push,$(MAKECMDGOALS)),)
ifeq ($(REGISTRY),)
$(error make push needs REGISTRY, for example REGISTRY=xpkg.upbound.io/example)
endif
ifeq ($(VERSION),)
$(error make push needs VERSION, a semantic version tag such as VERSION=v0.1.0)
endif
endif

## push: push every platform's xpkg as one multi-arch tag $(REGISTRY)/$(XPKG_NAME):$(VERSION).
.PHONY: push
push: xpkg
	$(CROSSPLANE) xpkg push -f $(subst $(xpkg_space),$(xpkg_comma),$(strip $(XPKG_FILES))) \
		$(REGISTRY)/$(XPKG_NAME):$(VERSION)

# What `make validate` checks. The schemas: both XRDs and the Input CRD, plus Crossplane's own
# CRDs (Composition, XRD, Function) from the core module the CLI is built from. The resources:
# every YAML file under example/ except render fixtures and RBAC, built-in kinds (apps/v1,
# rbac.authorization.k8s.io/v1 and friends have no schema offline). The CLI validates each Composition step's input against the Input CRD
# on its own.
VALIDATE_EXTENSIONS ?= example/definition.yaml,example/namespaced/definition.yaml,package/input
VALIDATE_SKIP ?= observed.yaml rbac.yaml
VALIDATE_RESOURCES ?= $(shell find example -name '*.yaml' $(foreach f,$(VALIDATE_SKIP),! -name $(f)) | LC_ALL=C sort | paste -sd, -)
VALIDATE_CACHE ?= $(OUTPUT_DIR)/validate-cache

## validate: validate the examples offline; any schema error or kind without a schema fails.
# `resource validate` wants the schemas of xpkg.crossplane.io/crossplane/crossplane:<version>
# and skips downloading them when <cache>/xpkg.crossplane.io/crossplane/crossplane@<version>/
# exists, so the cache is seeded with the CRDs of the Crossplane core the e2e suite runs
# (tools/crossplane): the examples are checked against the Crossplane they run on.
.PHONY: validate
validate: $(CROSSPLANE)
	@core="$$($(GO) -C tools/crossplane mod download github.com/crossplane/crossplane/v2 && \
		$(GO) -C tools/crossplane list -m -f '{{.Version}} {{.Dir}}' github.com/crossplane/crossplane/v2)" || exit 1; \
	version="$${core%% *}"; dir="$${core#* }"; \
	seed="$(VALIDATE_CACHE)/xpkg.crossplane.io/crossplane/crossplane@$$version"; \
	if [ ! -d "$$seed" ]; then \
		rm -rf "$$seed.tmp" && mkdir -p "$$seed.tmp" && cp "$$dir"/cluster/crds/*.yaml "$$seed.tmp"/ && \
		chmod -R u+w "$$seed.tmp" && mv "$$seed.tmp" "$$seed"; \
	fi; \
	echo "$(CROSSPLANE) resource validate $(VALIDATE_EXTENSIONS) $(VALIDATE_RESOURCES)"; \
	$(CROSSPLANE) resource validate $(VALIDATE_EXTENSIONS) $(VALIDATE_RESOURCES) \
		--cache-dir="$(VALIDATE_CACHE)" \
		--crossplane-image="xpkg.crossplane.io/crossplane/crossplane:$$version" \
		--error-on-missing-schemas

## clean-output: remove packages, runtime images and the validation cache.
.PHONY: clean-output
clean-output:
	rm -rf $(OUTPUT_DIR)
