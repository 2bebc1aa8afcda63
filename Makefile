# addonops — build, test, demo. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)

# The version stamped into every binary (internal/version); `--version` prints it.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
GO_LDFLAGS := -X github.com/addonops/addonops/internal/version.Version=$(VERSION)
# How the shipped controller is built (hack/image.mk; hack/release.sh says the same): static, no
# symbol table. The controller benchmark measures that binary, not bin/'s.
RELEASE_BUILD_FLAGS = -trimpath -ldflags '-s -w $(GO_LDFLAGS)'
# The one build configuration of every compile of this module that make runs: `make build` and
# `make install`, go vet, the tests and what they build themselves (`make image`, `make release`,
# the functions, kustomize: they inherit the environment), the benchmark's controller. It is the
# release's (static, no build-machine paths). Go's build cache keys a compiled package by it, so
# each package compiles once, for whichever asks first; with `make build` in cgo's default and the
# release builds static, `make test` compiled the whole tree twice (the image and release tests
# each again, at the same time). Link flags (-s -w, the version) are not part of it: only linking
# differs. The tools under tools/ are separate modules with their own settings.
GO_BUILD_ENV = CGO_ENABLED=0 GOFLAGS='-trimpath $(filter-out -trimpath,$(GOFLAGS))'

# Binaries of the product; each is `go build`-able on its own.
FUNCTIONS := config-hash addon-template rollout-strategy
COMMANDS := $(FUNCTIONS) $(notdir $(wildcard cmd/*))

.PHONY: help
help: ## List targets.
	@grep -hE '^[a-zA-Z0-9_/.-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-24s %s\n", $$1, $$2}'

.PHONY: build
build: $(addprefix $(BIN)/,$(COMMANDS)) ## Build every binary into bin/.

$(BIN)/%: FORCE
	@mkdir -p $(BIN)
	@if [ -d functions/$* ]; then $(GO_BUILD_ENV) $(GO) build -ldflags '$(GO_LDFLAGS)' -o $@ ./functions/$*; else $(GO_BUILD_ENV) $(GO) build -ldflags '$(GO_LDFLAGS)' -o $@ ./cmd/$*; fi

# `make bin/X` builds it too (the rule above is for the absolute path): without this, make found
# no rule for the relative name and said nothing when the file existed, leaving it stale.
bin/%: $(BIN)/% ;

.PHONY: FORCE
FORCE:

.PHONY: lint
lint: goimports ## gofmt, goimports (import groups) and go vet of both test tiers.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^tools/') 2>/dev/null || true); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@# goimports is built from tools/goimports (pinned there); -local keeps this module's imports in their own group.
	@unsorted=$$($(GOIMPORTS_BIN) -l -local github.com/addonops/addonops $$(git ls-files '*.go' | grep -v '^tools/')); \
	if [ -n "$$unsorted" ]; then echo "goimports -local github.com/addonops/addonops needed:"; echo "$$unsorted"; exit 1; fi
	$(GO_BUILD_ENV) $(GO) vet ./...
	$(GO_BUILD_ENV) $(GO) vet $(INTEGRATION_TAGS) ./...
	@# Binaries and large blobs never belong in Git (bin/ and the root build outputs are ignored).
	@bad=$$(git ls-files -z | LC_ALL=C xargs -0 -r grep -lsaP '\A\x7fELF' -- || true); \
	if [ -n "$$bad" ]; then echo "binaries tracked by git (git rm --cached them):"; echo "$$bad"; exit 1; fi
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' -- 2>/dev/null | awk '$$1 > 2000000 {print $$2}'); \
	if [ -n "$$big" ]; then echo "files over 2 MB tracked by git:"; echo "$$big"; exit 1; fi

# The GitOps engines the e2e suite syncs through, built from their Go modules (tools/argocd, tools/flux).
GITOPS_ENGINES := argocd flux

# Tests that need a binary (a real kube-apiserver and etcd, OCM, kpt, kustomize running the built
# functions, promtool, make, Argo CD, Flux) build only with this tag; `go test ./...` without it is
# the unit tier. docs/testing.md.
INTEGRATION_TAGS := -tags integration

.PHONY: test-unit
test-unit: ## Only the unit tier: pure and fake-client tests, no binary built or run (docs/testing.md).
	$(GO_BUILD_ENV) $(GO) test -count=1 -timeout 10m ./...

.PHONY: test
test: hub-binaries ocm-binaries kubectl kpt prometheus-tools prometheus-server $(GITOPS_ENGINES) build lint ## Run every test (unit, golden, integration on a real API server, e2e with Argo CD and Flux).
	$(GO_BUILD_ENV) $(GO) test $(INTEGRATION_TAGS) -count=1 -timeout 45m ./...

.PHONY: test-gitops
test-gitops: hub-binaries ocm-binaries $(GITOPS_ENGINES) build ## Only the GitOps end-to-end tests: the examples synced from a Git repository by real Argo CD and Flux.
	$(GO_BUILD_ENV) $(GO) test $(INTEGRATION_TAGS) -count=1 -timeout 30m -v -run 'TestArgoCD|TestFlux' ./e2e

.PHONY: docs
docs: ## Regenerate the reference pages under docs/reference from the code (the CLI, flags, annotations, conditions, metrics).
	@# Each page's TestReferenceDocs fails when the committed page drifts; -update-docs rewrites it instead.
	$(GO_BUILD_ENV) $(GO) test -count=1 -run '^TestReferenceDocs$$' ./cmd/addonops ./cmd/addonops-controller ./internal/refdocs -args -update-docs

.PHONY: demo
demo: hub-binaries bin/ocm-placement build $(filter flux argocd,$(DEMO_ENGINE)) ## The main job: see docs/getting-started.md (DEMO_ENGINE=flux|argocd: docs/demo-engines.md).
	@bash hack/demo.sh

include $(wildcard internal/*/*.mk internal/testing/*/*.mk functions/*/*.mk cmd/*/*.mk tools/*/*.mk hack/*.mk config/*.mk)
