# The addonops-controller image, for users who build with a container engine:
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t addonops-controller .
#
# `make image` builds the same image without one (hack/imagebuild). The result is a static binary on
# a distroless base, run as the nonroot user 65532, ready for the restricted Pod Security Standard.
#
# Both base images are pinned by the digest of their multi-architecture index, so a tag moved
# upstream changes nothing until the pin is bumped on purpose (the tag stays in front for people and
# tools such as Renovate). To bump one, resolve the tag's index digest, e.g.
#   crane digest golang:1.26
#   crane digest gcr.io/distroless/static-debian12:nonroot
# (or `docker buildx imagetools inspect <tag>`) and replace it here.
FROM --platform=$BUILDPLATFORM golang:1.26@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79 AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=devel
WORKDIR /src
# Modules first: this layer is reused while only the sources change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/addonops/addonops/internal/version.Version=${VERSION}" \
      -o /out/addonops-controller ./cmd/addonops-controller

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/addonops-controller /addonops-controller
USER 65532:65532
ENTRYPOINT ["/addonops-controller"]
