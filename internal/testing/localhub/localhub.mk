# Binaries of the test hub (internal/testing/localhub): a real kube-apiserver and etcd for the integration
# tests, the e2e suite and `make demo`. Included from the top-level Makefile; paths are relative to
# the repository root. localhub looks for exactly these paths; $ADDONOPS_KUBE_APISERVER and
# $ADDONOPS_ETCD override them, at run time as here.

LOCALHUB_ETCD := $(or $(ADDONOPS_ETCD),/usr/bin/etcd)
LOCALHUB_SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: hub-binaries etcd

hub-binaries: bin/kube-apiserver etcd ## Build or install what the test hub runs (kube-apiserver, etcd).

# kube-apiserver v1.35.4, built from the k8s.io/kubernetes module in its own tools module so that
# its huge dependency graph never enters ours. Built only when missing or when the tools module
# changes: about 10 minutes the first time (downloads included), under a minute from a warm cache.
# Written to a temporary name first, so an interrupted build never leaves a binary make trusts.
# The version is stamped as Kubernetes' own build does; without it /version (kubectl version,
# clients that parse it) reports "v0.0.0-master+$Format:%H$", which is not valid semver.
LOCALHUB_VERSION_PKG := k8s.io/component-base/version
bin/kube-apiserver: tools/kube-apiserver/go.mod tools/kube-apiserver/go.sum ## Build kube-apiserver for the test hub.
	@mkdir -p $(@D)
	cd tools/kube-apiserver && export GOWORK=off && \
	  v=$$(go list -m -f '{{.Version}}' k8s.io/kubernetes) && \
	  major=$${v#v} && major=$${major%%.*} && minor=$${v#v*.} && minor=$${minor%%.*} && \
	  go build -ldflags "-X $(LOCALHUB_VERSION_PKG).gitVersion=$$v -X $(LOCALHUB_VERSION_PKG).gitMajor=$$major \
	    -X $(LOCALHUB_VERSION_PKG).gitMinor=$$minor -X $(LOCALHUB_VERSION_PKG).gitTreeState=clean" \
	    -o $(CURDIR)/$@.tmp k8s.io/kubernetes/cmd/kube-apiserver
	mv $@.tmp $@

# Debian's etcd-server (etcd 3.4), installed only when missing. The package may also start a system
# etcd on the default ports 2379/2380; the hub never uses it (it runs its own etcd on free ports
# with a private data directory).
etcd: ## Install Debian's etcd-server for the test hub when /usr/bin/etcd is missing.
	@if [ -x "$(LOCALHUB_ETCD)" ]; then \
	  echo "etcd: $(LOCALHUB_ETCD) present"; \
	elif [ -n "$(ADDONOPS_ETCD)" ]; then \
	  echo "etcd: ADDONOPS_ETCD=$(ADDONOPS_ETCD) is not an executable file; fix or unset it" >&2; exit 1; \
	else \
	  echo "etcd: $(LOCALHUB_ETCD) missing, installing Debian's etcd-server"; \
	  { $(LOCALHUB_SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	    $(LOCALHUB_SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server; } || \
	    { echo "etcd: installing etcd-server failed (needs root or sudo)" >&2; exit 1; }; \
	  test -x "$(LOCALHUB_ETCD)" || { echo "etcd: etcd-server installed but $(LOCALHUB_ETCD) is still missing" >&2; exit 1; }; \
	fi
