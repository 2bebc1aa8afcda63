# The controller's container image.
#
#   make image         bin/addonops-controller-image.tar, built here without a container engine or
#                      registry (hack/imagebuild); load it with `docker load -i`, `podman load -i`, or
#                      push it with `skopeo copy docker-archive:bin/addonops-controller-image.tar docker://...`
#   make docker-build  the same image with a container engine, from the Dockerfile
#
# A pushed docker-archive gets a digest of the registry's making. `make release` also writes the
# multi-architecture image as an OCI archive whose digest its manifests pin (hack/release.sh;
# docs/deployment-security.md): push that one to deploy a release.
IMAGE ?= ghcr.io/addonops/addonops-controller:$(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_ARCHIVE ?= $(BIN)/addonops-controller-image.tar
IMAGE_BUILD_DIR ?= $(BIN)/linux_$(IMAGE_ARCH)
CONTAINER_TOOL ?= docker

.PHONY: image
image: ## Build the controller image archive bin/addonops-controller-image.tar (no container engine needed).
	@mkdir -p $(IMAGE_BUILD_DIR) $(dir $(IMAGE_ARCHIVE))
	$(GO_BUILD_ENV) GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build $(RELEASE_BUILD_FLAGS) \
		-o $(IMAGE_BUILD_DIR)/addonops-controller ./cmd/addonops-controller
	$(GO_BUILD_ENV) $(GO) run ./hack/imagebuild --binary $(IMAGE_BUILD_DIR)/addonops-controller --arch $(IMAGE_ARCH) \
		--version $(VERSION) --tag $(IMAGE) --output $(IMAGE_ARCHIVE)
	@echo "wrote $(IMAGE_ARCHIVE) ($(IMAGE), linux/$(IMAGE_ARCH))"

.PHONY: docker-build
docker-build: ## Build the controller image with $(CONTAINER_TOOL) from the Dockerfile.
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) -t $(IMAGE) .
