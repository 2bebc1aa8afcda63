# goimports (golang.org/x/tools v0.49.0) for `make lint`: import groups, this module's imports in
# their own group (-local). Built from the separate tools module in tools/goimports, so x/tools'
# dependency graph never touches the product's go.mod. Built only when bin/goimports is missing or
# older than tools/goimports/go.mod; written to a temporary name first.
GOIMPORTS_BIN := bin/goimports

.PHONY: goimports
goimports: $(GOIMPORTS_BIN) ## Build bin/goimports (make lint's import-group check).

$(GOIMPORTS_BIN): tools/goimports/go.mod tools/goimports/go.sum
	@mkdir -p bin
	cd tools/goimports && GOWORK=off $(GO) build -o ../../$@.tmp golang.org/x/tools/cmd/goimports
	mv $@.tmp $@
