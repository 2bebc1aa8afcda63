# The OCM CRDs internal/crdschema embeds (go:embed cannot read the module cache), copied byte for
# byte from the open-cluster-management.io/api module go.mod pins. Included from the top-level
# Makefile; paths are relative to the repository root. TestEmbeddedCRDsMatchModule fails when the
# copies differ from the pinned module: run `make crds` after changing its version.
#
# The add-on group's ClusterManagementAddOn, ManagedClusterAddOn and AddOnDeploymentConfig come
# from addon/v1beta1: those files serve v1alpha1 (the storage version, its schema identical to
# addon/v1alpha1's files) and v1beta1, as an OCM hub does. AddOnTemplate exists in v1alpha1 only.

CRDSCHEMA_DIR := internal/crdschema/crds
CRDSCHEMA_FILES := \
	addon/v1beta1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml \
	addon/v1beta1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml \
	addon/v1beta1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml \
	addon/v1alpha1/0000_03_addon.open-cluster-management.io_addontemplates.crd.yaml \
	cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml \
	cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml

.PHONY: crds
crds: ## Copy the OCM CRDs internal/crdschema embeds from the pinned open-cluster-management.io/api module.
	@src=$$(GOWORK=off $(GO) list -m -f '{{.Dir}}' open-cluster-management.io/api) && \
	  if [ -z "$$src" ]; then echo "crds: open-cluster-management.io/api is not downloaded: run go mod download" >&2; exit 1; fi && \
	  rm -rf $(CRDSCHEMA_DIR) && \
	  for f in $(CRDSCHEMA_FILES); do install -D -m 0644 "$$src/$$f" "$(CRDSCHEMA_DIR)/$$f"; done && \
	  echo "crds: copied $(words $(CRDSCHEMA_FILES)) CRDs from $$src into $(CRDSCHEMA_DIR)"
