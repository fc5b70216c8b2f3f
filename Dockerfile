# syntax=docker/dockerfile:1
# The netpol image that deploy/daemonset.yaml runs as the agent:
#
#   docker build -t ghcr.io/netpol/netpol:latest .
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/netpol/netpol:TAG --push .

# The builder runs on the build machine's platform and cross-compiles, which
# a static (CGO_ENABLED=0) Go binary allows: no emulation for other arches.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
ARG TARGETOS TARGETARCH
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd/ cmd/
COPY internal/ internal/
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/netpol ./cmd/netpol

# Not distroless: sigs.k8s.io/knftables runs the nft binary, which comes
# with its libraries from Debian's nftables package.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends nftables \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/netpol /usr/local/bin/netpol
# Root: see the securityContext in deploy/daemonset.yaml.
USER 0
ENTRYPOINT ["netpol"]
