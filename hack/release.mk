# Installing the user binaries, and building a release. See docs/install.md.
#
#   make install         the user binaries into GOBIN, version-stamped like `make build`
#   make release         dist/VERSION/: per-platform archives, controller image archives, the
#                        rendered manifests and SHA256SUMS (hack/release.sh)

# The binaries a user runs (never addonops-demo: it only works inside a checkout).
USER_COMMANDS := $(FUNCTIONS) addonops-controller addonops
USER_PACKAGES := $(addprefix ./functions/,$(FUNCTIONS)) ./cmd/addonops-controller ./cmd/addonops

# Where `go install` puts binaries: GOBIN, else GOPATH/bin. Override: make install GOBIN=/usr/local/bin
GOBIN ?= $(or $(shell $(GO) env GOBIN),$(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin)

.PHONY: install
install: ## Install the functions, addonops-controller, addonops and the kubectl plugin into GOBIN.
	@mkdir -p $(GOBIN)
	GOBIN=$(abspath $(GOBIN)) $(GO_BUILD_ENV) $(GO) install -ldflags '$(GO_LDFLAGS)' $(USER_PACKAGES)
	ln -sfn addonops $(GOBIN)/kubectl-addonops
	install -m 755 hack/kubectl_complete-addonops $(GOBIN)/kubectl_complete-addonops
	@echo "installed $(USER_COMMANDS) kubectl-addonops kubectl_complete-addonops into $(abspath $(GOBIN)) ($(VERSION))"

# The platforms of the release archives; controller images are built for the linux ones.
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
# The image the release's manifests run and its image archives are tagged with (IMAGE_REPO:VERSION).
IMAGE_REPO ?= ghcr.io/addonops/addonops-controller
RELEASE_DIR ?= $(CURDIR)/dist/$(VERSION)

.PHONY: release
release: ## Build a release into dist/VERSION (PLATFORMS, VERSION, IMAGE_REPO, RELEASE_DIR to override).
	@VERSION='$(VERSION)' PLATFORMS='$(PLATFORMS)' RELEASE_DIR='$(RELEASE_DIR)' IMAGE_REPO='$(IMAGE_REPO)' \
		GO_LDFLAGS='$(GO_LDFLAGS)' GO='$(GO)' $(GO_BUILD_ENV) bash hack/release.sh
