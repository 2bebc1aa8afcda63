# Flux for the GitOps end-to-end suite (internal/testing/flux, e2e TestFlux): Flux's own
# source-controller v1.9.4 and kustomize-controller v1.9.4, the flux CLI v2.9.5 (`flux push
# artifact`, `flux tag artifact`, as health/flux/render-workflow.yaml runs them) and the CNCF
# distribution registry v3.1.1 (the OCI registry the recipe pushes to). Included from the top-level
# Makefile; paths are relative to the repository root. internal/testing/flux looks for exactly
# these paths:
#   bin/flux-source-controller     github.com/fluxcd/source-controller
#   bin/flux-kustomize-controller  github.com/fluxcd/kustomize-controller
#   bin/flux                       github.com/fluxcd/flux2/v2/cmd/flux
#   bin/oci-registry               github.com/distribution/distribution/v3/cmd/registry
#
# Built from the separate tools module in tools/flux (Flux's dependency graph never touches ours;
# tools/flux/go.mod says which replace directives it repeats from the controllers' go.mod and why).
# Built only when missing: after changing tools/flux/go.mod, rebuild with
# `rm bin/flux-source-controller bin/flux-kustomize-controller bin/flux bin/oci-registry && make flux`.
# Written to a temporary name first, so an interrupted build never leaves a binary make trusts.

FLUX_BUILD_ENV := GOWORK=off

.PHONY: flux
flux: bin/flux-source-controller bin/flux-kustomize-controller bin/flux bin/oci-registry ## Build Flux's controllers, the flux CLI and an OCI registry for the GitOps e2e suite.

bin/flux-source-controller bin/flux-kustomize-controller: bin/flux-%:
	@mkdir -p $(@D)
	cd tools/flux && $(FLUX_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp github.com/fluxcd/$*
	mv $@.tmp $@

# The CLI prints its version from main.VERSION (`flux version --client`); stamped with the pinned one.
bin/flux:
	@mkdir -p $(@D)
	cd tools/flux && export $(FLUX_BUILD_ENV) && \
	  v=$$(go list -m -f '{{.Version}}' github.com/fluxcd/flux2/v2) && \
	  $(or $(GO),go) build -ldflags "-X main.VERSION=$${v#v}" -o $(CURDIR)/$@.tmp github.com/fluxcd/flux2/v2/cmd/flux
	mv $@.tmp $@

bin/oci-registry:
	@mkdir -p $(@D)
	cd tools/flux && $(FLUX_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp github.com/distribution/distribution/v3/cmd/registry
	mv $@.tmp $@
