# Image with addonops' KRM functions (config-hash, addon-template, rollout-strategy) and kustomize
# (the version go.mod pins as a tool, v5.8.2), for Argo CD's repo-server: copied in by the init
# container of repo-server-patch.yaml, or run as the Config Management Plugin sidecar of
# cmp-plugin.yaml. Build from the repository root:
#   docker build -f health/argocd/tools.Dockerfile --build-arg VERSION=$(git describe --tags --always) \
#     -t registry.example/addonops-tools:v0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Every function of functions/ (health's TestToolsImageBuildsEveryFunction fails when one is
# missing), and kustomize at the version go.mod requires. VERSION stamps `--version`.
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/addonops/addonops/internal/version.Version=${VERSION}" \
      -o /out/ ./functions/config-hash ./functions/addon-template ./functions/rollout-strategy && \
    CGO_ENABLED=0 go build -trimpath -o /out/kustomize sigs.k8s.io/kustomize/kustomize/v5

# busybox: the init container needs cp.
FROM busybox:1.37
COPY --from=build /out/ /usr/local/bin/
# Argo CD runs repo-server and plugins as user 999.
USER 999
