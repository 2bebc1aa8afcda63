# The addonops-controller image, for users who build with a container engine:
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t addonops-controller .
#
# `make image` builds the same image without one (hack/imagebuild). The result is a static binary on
# a distroless base, run as the nonroot user 65532, ready for the restricted Pod Security Standard.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
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

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/addonops-controller /addonops-controller
USER 65532:65532
ENTRYPOINT ["/addonops-controller"]
