# Argo CD v3.2.6's application controller, repo server and config management plugin server, and
# Debian's redis-server, for the GitOps end-to-end test (internal/testing/argocd, e2e/argocd_test.go).
# Included from the top-level Makefile; paths are relative to the repository root.
#
# Built from the separate tools module in tools/argocd (Argo CD's dependency graph never touches
# ours) into one binary, bin/argocd, which picks its command from $ARGOCD_BINARY_NAME (or its own
# name) as Argo CD's cmd/main.go does: argocd-application-controller, argocd-repo-server or
# argocd-cmp-server. internal/testing/argocd looks for exactly this path; $ADDONOPS_ARGOCD
# overrides it at run time.
#
# Why v3.2.6: from v3.3 Argo CD replaces github.com/argoproj/gitops-engine with its in-tree
# ./gitops-engine, which the module zip does not hold, so v3.3+ cannot be built from the module;
# v3.2.7, v3.2.8 and v3.2.10 are refused by the module proxy and v3.2.9 has no checksum.
#
# Built only when missing (after changing tools/argocd: `rm bin/argocd && make argocd`): about 4.5
# minutes with an empty Go build cache (modules already downloaded; 7.5 minutes while other builds
# shared the 2 cores), 17 seconds from a warm one. Written to a temporary name first, so an
# interrupted build never leaves a binary make trusts.

ARGOCD_REDIS := $(or $(ADDONOPS_REDIS_SERVER),/usr/bin/redis-server)
ARGOCD_SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: argocd redis
argocd: bin/argocd redis ## Build Argo CD's controller, repo and CMP servers; install redis-server (~5 min the first time).

bin/argocd:
	@mkdir -p $(@D)
	cd tools/argocd && GOWORK=off $(or $(GO),go) build -o $(CURDIR)/$@.tmp .
	mv $@.tmp $@

# Debian's redis-server: Argo CD's cache. Installed only when missing. The package may also start a
# system redis on the default port 6379; the harness never uses it (it runs its own on a free port
# with a private directory).
redis: ## Install Debian's redis-server for the Argo CD test when /usr/bin/redis-server is missing.
	@if [ -x "$(ARGOCD_REDIS)" ]; then \
	  echo "redis: $(ARGOCD_REDIS) present"; \
	elif [ -n "$(ADDONOPS_REDIS_SERVER)" ]; then \
	  echo "redis: ADDONOPS_REDIS_SERVER=$(ADDONOPS_REDIS_SERVER) is not an executable file; fix or unset it" >&2; exit 1; \
	else \
	  echo "redis: $(ARGOCD_REDIS) missing, installing Debian's redis-server"; \
	  { $(ARGOCD_SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	    $(ARGOCD_SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server; } || \
	    { echo "redis: installing redis-server failed (needs root or sudo)" >&2; exit 1; }; \
	  test -x "$(ARGOCD_REDIS)" || { echo "redis: redis-server installed but $(ARGOCD_REDIS) is still missing" >&2; exit 1; }; \
	fi
