# Image with addonops' KRM functions (config-hash, addon-template) and kustomize v5.8.2, for
# Argo CD's repo-server: copied in by the init container of repo-server-patch.yaml, or run as the
# Config Management Plugin sidecar of cmp-plugin.yaml. Build from the repository root:
#   docker build -f health/argocd/tools.Dockerfile -t registry.example/addonops-tools:v0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/config-hash ./functions/config-hash && \
    CGO_ENABLED=0 go build -trimpath -o /out/addon-template ./functions/addon-template && \
    CGO_ENABLED=0 go build -trimpath -o /out/kustomize sigs.k8s.io/kustomize/kustomize/v5

# busybox: the init container needs cp.
FROM busybox:1.37
COPY --from=build /out/ /usr/local/bin/
# Argo CD runs repo-server and plugins as user 999.
USER 999
