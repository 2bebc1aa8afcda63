#!/usr/bin/env bash
# `make demo`: runs bin/addonops-demo (cmd/addonops-demo) on a local hub with OCM's placement controller
# and simulated clusters.
# Flags go through DEMO_FLAGS, e.g.
#   make demo DEMO_FLAGS="--clusters 200 --fail-rate 0.1 --speed 2"
#   make demo DEMO_FLAGS="--demo-steps=none" # the four examples only, without the demo's own steps
#                                            # (cmd/addonops-demo/steps: pause, gates, bad version, revert)
#   make demo DEMO_FLAGS="--steps 01-fresh-install,02-rolling-update"  # some steps only
#   make demo DEMO_ENGINE=flux               # the steps delivered by Flux (argocd: by Argo CD) from a local
#                                            # Git repository: docs/demo-engines.md
#   bash hack/demo.sh                      # after `make build`
# See `bin/addonops-demo --help`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# The examples run the rollout-strategy, addon-template and config-hash KRM functions by name:
# kustomize finds them on PATH. The demo prints each step's plan with bin/addonops.
export PATH="$root/bin:$PATH"

# What the hub runs (internal/testing/localhub): `make demo` builds it first; when this script runs on its
# own, build or install what is missing.
etcd="${ADDONOPS_ETCD:-/usr/bin/etcd}"
apiserver="${ADDONOPS_KUBE_APISERVER:-$root/bin/kube-apiserver}"
if [[ ! -x "$etcd" || ! -x "$apiserver" ]]; then
  echo "demo: hub binaries missing ($etcd, $apiserver); running make hub-binaries" >&2
  make --no-print-directory hub-binaries
fi
# OCM's own placement controller decides the demo's Placements (internal/testing/ocmhub).
if [[ ! -x "${ADDONOPS_OCM_PLACEMENT:-$root/bin/ocm-placement}" ]]; then
  echo "demo: bin/ocm-placement (OCM's placement controller) missing; running make bin/ocm-placement (a few minutes the first time)" >&2
  make --no-print-directory bin/ocm-placement
fi
for bin in addonops-demo addonops rollout-strategy addon-template config-hash; do
  if [[ ! -x "$root/bin/$bin" ]]; then
    echo "demo: bin/$bin missing; running make build" >&2
    make --no-print-directory build
    break
  fi
done

# DEMO_ENGINE (none, flux, argocd): what delivers the steps. `make demo` builds the engine first;
# when this script runs on its own, build what is missing (the demo refuses other values).
engine="${DEMO_ENGINE:-none}"
case "$engine" in
  flux) needs=("$root"/bin/{flux-source-controller,flux-kustomize-controller,flux,oci-registry}) ;;
  argocd) needs=("${ADDONOPS_ARGOCD:-$root/bin/argocd}" "${ADDONOPS_REDIS_SERVER:-/usr/bin/redis-server}") ;;
  *) needs=() ;;
esac
for bin in "${needs[@]}"; do
  if [[ ! -x "$bin" ]]; then
    echo "demo: $bin missing; running make $engine" >&2
    make --no-print-directory "$engine"
    break
  fi
done

# exec: Ctrl-C reaches the demo directly, which stops everything it started.
# shellcheck disable=SC2086 # DEMO_FLAGS is a list of flags
exec "$root/bin/addonops-demo" --engine="$engine" ${DEMO_FLAGS:-}
