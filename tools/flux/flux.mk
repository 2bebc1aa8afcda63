# Flux for the GitOps end-to-end suite (internal/testing/flux, e2e TestFlux): Flux's own
# source-controller v1.9.4 and kustomize-controller v1.9.4, the flux CLI v2.9.5 (`flux push
# artifact`, `flux tag artifact`, as health/flux/render-workflow.yaml runs them) and the CNCF
# distribution registry v3.1.1 (the OCI registry the recipe pushes to). Included from the top-level
# Makefile; paths are relative to the repository root. internal/testing/flux looks for exactly
# these paths:
#   bin/flux-source-controller     github.com/fluxcd/source-controller
#   bin/flux-kustomize-controller  github.com/fluxcd/kustomize-controller
#   bin/flux                       github.com/fluxcd/flux2/v2/cmd/flux (module tools/flux-cli)
#   bin/oci-registry               github.com/distribution/distribution/v3/cmd/registry
#
# Built from the separate tools modules tools/flux and tools/flux-cli (Flux's dependency graph
# never touches ours; their go.mod files say which replace directives they repeat and why, and why
# the CLI needs a graph of its own). Built only when missing: after changing either go.mod, rebuild
# with `rm bin/flux-source-controller bin/flux-kustomize-controller bin/flux bin/oci-registry &&
# make flux`. From a warm Go build cache the four take about a minute.
# Written to a temporary name first, so an interrupted build never leaves a binary make trusts.

FLUX_BUILD_ENV := GOWORK=off

.PHONY: flux
flux: bin/flux-source-controller bin/flux-kustomize-controller bin/flux bin/oci-registry ## Build Flux's controllers, the flux CLI and an OCI registry for the GitOps e2e suite.

bin/flux-source-controller bin/flux-kustomize-controller: bin/flux-%:
	@mkdir -p $(@D)
	cd tools/flux && $(FLUX_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp github.com/fluxcd/$*
	mv $@.tmp $@

# The CLI, from tools/flux-cli (its own graph). It embeds cmd/flux/manifests/*.yaml (`flux
# install`'s manifests), which Flux's release build generates by downloading them
# (manifests/scripts/bundle.sh): the module has none, so `go build` of it fails ("pattern
# manifests/*.yaml: no matching files found"), and -overlay may not add files under GOMODCACHE. So
# it is built from a copy of the module with tools/flux/cli-manifests.yaml there (which says what
# is missing), through a copy of tools/flux-cli with a replace directive pointing at that copy:
# tools/flux-cli's graph, the module's code. Stamped with its version (`flux version --client`
# prints main.VERSION).
bin/flux:
	@mkdir -p $(@D)
	set -euo pipefail; tmp=$$(mktemp -d); trap 'chmod -R u+w "$$tmp"; rm -rf "$$tmp"' EXIT; \
	  cd tools/flux-cli; export $(FLUX_BUILD_ENV); \
	  go mod download github.com/fluxcd/flux2/v2; \
	  v=$$(go list -m -f '{{.Version}}' github.com/fluxcd/flux2/v2); dir=$$(go list -m -f '{{.Dir}}' github.com/fluxcd/flux2/v2); \
	  cp -R "$$dir" "$$tmp/flux2"; chmod -R u+w "$$tmp/flux2"; \
	  mkdir -p "$$tmp/flux2/cmd/flux/manifests" "$$tmp/build"; cp ../flux/cli-manifests.yaml "$$tmp/flux2/cmd/flux/manifests/"; \
	  cp go.mod go.sum tools.go "$$tmp/build/"; \
	  cd "$$tmp/build"; go mod edit -replace "github.com/fluxcd/flux2/v2=$$tmp/flux2"; \
	  $(or $(GO),go) build -ldflags "-X main.VERSION=$${v#v}" -o $(CURDIR)/$@.tmp github.com/fluxcd/flux2/v2/cmd/flux
	mv $@.tmp $@

bin/oci-registry:
	@mkdir -p $(@D)
	cd tools/flux && $(FLUX_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp github.com/distribution/distribution/v3/cmd/registry
	mv $@.tmp $@
