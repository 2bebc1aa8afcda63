#!/bin/sh
# Renders kustomize packages that run addonops' KRM functions, for a GitOps tool that cannot run
# them itself (Flux's kustomize-controller allows no exec functions): CI runs this and publishes
# OUT (an OCI artifact, or a branch) for Flux to apply. See health/README.md, "Flux".
#
#   hack/render.sh OUT PKG...
#
# writes OUT/<basename of PKG>.yaml per package: `kustomize build --enable-alpha-plugins
# --enable-exec PKG`, the flags without which kustomize skips the functions silently. The
# functions (config-hash, addon-template, rollout-strategy: `make install`, or a release archive)
# and kustomize ($KUSTOMIZE, default `kustomize`) must be on the PATH. OUT must be empty or absent,
# so a package removed from the list cannot linger in what is published.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 OUT PKG..." >&2
	exit 2
fi
out=$1
shift
kustomize=${KUSTOMIZE:-kustomize}

# Without a function on the PATH the build fails only when a package uses it; checking first
# gives one clear message instead.
for f in "$kustomize" config-hash addon-template rollout-strategy; do
	if ! command -v "$f" >/dev/null 2>&1; then
		echo "render: $f is not on the PATH ($PATH): install addonops' functions (make install, or a release archive) and kustomize" >&2
		exit 1
	fi
done
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
	echo "render: $out is not empty: render into a fresh directory, so that nothing stale is published" >&2
	exit 1
fi
mkdir -p "$out"

for pkg in "$@"; do
	name=$(basename "$pkg")
	if [ -e "$out/$name.yaml" ]; then
		echo "render: two packages are named $name ($pkg and an earlier one): each renders to $out/$name.yaml" >&2
		exit 1
	fi
	if ! "$kustomize" build --enable-alpha-plugins --enable-exec "$pkg" >"$out/$name.yaml.tmp"; then
		rm -f "$out/$name.yaml.tmp"
		echo "render: kustomize build of $pkg failed (above)" >&2
		exit 1
	fi
	mv "$out/$name.yaml.tmp" "$out/$name.yaml"
	echo "render: $pkg -> $out/$name.yaml" >&2
done
