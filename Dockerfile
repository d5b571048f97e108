# syntax=docker/dockerfile:1
#
# The function's runtime image, for those who build with Docker. `make xpkg` builds the same
# image without Docker (cmd/runtime-image): keep the two in step. Build one platform at a time
# and embed it in a package:
#
#   docker buildx build --platform=linux/arm64 --load -t function-memcached-runtime:arm64 .
#   crossplane xpkg build --package-root=package --examples-root=example \
#     --ignore=observed.yaml,xr.yaml \
#     --embed-runtime-image=function-memcached-runtime:arm64 -o function-memcached-arm64.xpkg

# The builder runs on the build machine's platform and cross-compiles, which is much faster than
# compiling under emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS TARGETARCH
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -ldflags="-s -w" -o /function ./cmd/function-memcached

# Static binary, so no libc; distroless adds CA certificates and an /etc/passwd with nonroot.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /function /function
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["/function"]
