# The manifests a user applies on a hub, rendered to one file (for `kubectl apply --server-side -f`).
.PHONY: manifests
manifests: ## Render config/default into bin/addonops.yaml.
	@mkdir -p $(BIN)
	$(GO) tool kustomize build config/default > $(BIN)/addonops.yaml
	@echo "wrote $(BIN)/addonops.yaml"
