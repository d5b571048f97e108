# The auth proxy's image (cmd/memcached-auth-proxy): the exporter's way into a memcached that
# requires authentication. Built like the function's runtime image — a static binary in a
# single layer written in Go, no base image, no Docker, every timestamp from
# SOURCE_DATE_EPOCH — and pushed by `make push` beside the function's packages. Included from
# the top-level Makefile after build/xpkg.mk.
#
#   make auth-proxy-image   one image tarball per platform in $(OUTPUT_DIR)
#   make push ...           also pushes $(REGISTRY)/memcached-auth-proxy:$(VERSION), multi-arch

AUTH_PROXY_NAME ?= memcached-auth-proxy
AUTH_PROXY_IMAGES := $(foreach a,$(XPKG_ARCHES),$(OUTPUT_DIR)/$(AUTH_PROXY_NAME)-$(a).tar)

## auth-proxy-image: build the auth proxy's image for each platform, reproducibly. It runs as
# memcached's user (11211), the user of the pods it runs in.
.PHONY: auth-proxy-image $(AUTH_PROXY_IMAGES)
auth-proxy-image: $(AUTH_PROXY_IMAGES)
	@cd $(OUTPUT_DIR) && sha256sum $(notdir $(AUTH_PROXY_IMAGES))

$(AUTH_PROXY_IMAGES): $(OUTPUT_DIR)/$(AUTH_PROXY_NAME)-%.tar: $(BIN)/runtime-image
	@test -n "$(SOURCE_DATE_EPOCH)" || { echo "SOURCE_DATE_EPOCH is empty and git cannot tell the last commit time: set it"; exit 1; }
	@mkdir -p $(OUTPUT_DIR)/linux_$*
	CGO_ENABLED=0 GOOS=linux GOARCH=$* GOAMD64=v1 GOARM64=v8.0 \
		$(GO) build -trimpath -buildvcs=false -ldflags="-s -w" \
		-o $(OUTPUT_DIR)/linux_$*/$(AUTH_PROXY_NAME) ./cmd/memcached-auth-proxy
	$(BIN)/runtime-image --binary=$(OUTPUT_DIR)/linux_$*/$(AUTH_PROXY_NAME) --arch=$* \
		--path=/$(AUTH_PROXY_NAME) --user=11211:11211 --port=11213/tcp --tag=$(AUTH_PROXY_NAME):runtime \
		--source-date-epoch=$(SOURCE_DATE_EPOCH) --output=$@

.PHONY: $(BIN)/push-index
$(BIN)/push-index: | $(BIN)
	$(GO) build -trimpath -o $@ ./cmd/push-index

# make push (build/xpkg.mk) checks REGISTRY and VERSION before anything is built.
.PHONY: push-auth-proxy
push-auth-proxy: auth-proxy-image $(BIN)/push-index
	$(BIN)/push-index $(foreach i,$(AUTH_PROXY_IMAGES),--image=$(i)) $(REGISTRY)/$(AUTH_PROXY_NAME):$(VERSION)

push: push-auth-proxy
