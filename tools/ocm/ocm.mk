# OCM's own placement controller, work agent and addon-manager, open-cluster-management.io/ocm
# v1.2.1, for the end-to-end suite and the demo (the placement controller; internal/testing/ocmhub). Included from the top-level Makefile; paths are
# relative to the repository root. internal/ocmhub looks for exactly these paths;
# $ADDONOPS_OCM_PLACEMENT, $ADDONOPS_OCM_WORK and $ADDONOPS_OCM_ADDON override them at run time.
#
# Built from the separate tools module in tools/ocm (OCM's dependency graph never touches ours).
# GONOSUMDB: one dependency of OCM, a pseudo-version of sigs.k8s.io/about-api, is missing from the
# checksum database; without it the build fails with "verifying module ... 404". go.sum still
# pins its hash.
#
# Built only when missing: a fresh machine (CI) needs about 7.5 minutes for the three, downloads
# included; from a warm Go build cache, well under a minute. After changing tools/ocm/go.mod, rebuild
# with `rm bin/ocm-placement bin/ocm-work bin/ocm-addon && make ocm-binaries`.
# Written to a temporary name first, so an interrupted build never leaves a binary make trusts.

OCM_BUILD_ENV := GOWORK=off GONOSUMDB=sigs.k8s.io/about-api

.PHONY: ocm-binaries
ocm-binaries: bin/ocm-placement bin/ocm-work bin/ocm-addon ## Build OCM's placement controller, work agent and addon-manager for the e2e suite (~7.5 min the first time).

bin/ocm-placement bin/ocm-work bin/ocm-addon: bin/ocm-%:
	@mkdir -p $(@D)
	cd tools/ocm && $(OCM_BUILD_ENV) $(or $(GO),go) build -o $(CURDIR)/$@.tmp open-cluster-management.io/ocm/cmd/$*
	mv $@.tmp $@
