#!/usr/bin/env bash
# Builds a release of addonops into RELEASE_DIR (`make release` runs it; see hack/release.mk):
#
#   addonops_VERSION_OS_ARCH.tar.gz         per platform: the user binaries (the KRM functions,
#                                            addonops-controller, addonops, kubectl-addonops and
#                                            kubectl_complete-addonops), LICENSE, README.md
#   addonops-controller_VERSION_linux_ARCH.image.tar
#                                            per linux platform: the controller image as a
#                                            docker-archive tagged IMAGE_REPO:VERSION
#                                            (hack/imagebuild, as `make image`), for `docker load`
#   addonops-controller_VERSION.oci.tar      the controller image of every linux platform as one
#                                            multi-architecture index, an OCI image layout archive
#                                            tagged VERSION: what to push (`skopeo copy --all
#                                            --preserve-digests oci-archive:...`), since a copy that
#                                            keeps its manifests keeps its digest
#   addonops_VERSION.yaml                    config/default running IMAGE_REPO:VERSION@DIGEST, the
#                                            index's digest: the image is pinned, so a tag moved in
#                                            the registry later changes nothing that runs
#   addonops_VERSION_deploy-templates.yaml   the same with config/components/deploy-templates
#   SHA256SUMS                               of every file above (`sha256sum -c SHA256SUMS`)
#
# Inputs (environment): VERSION, PLATFORMS (space-separated OS/ARCH), RELEASE_DIR, IMAGE_REPO,
# GO_LDFLAGS (the version stamp), GO (default go). Run from the repository root. Needs GNU tar,
# gzip, sha256sum and realpath (coreutils): a Linux build machine.
set -euo pipefail

GO=${GO:-go}
: "${VERSION:?VERSION is not set (make release sets it from git describe)}"
: "${PLATFORMS:?PLATFORMS is not set, e.g. \"linux/amd64 darwin/arm64\"}"
: "${RELEASE_DIR:?RELEASE_DIR is not set}"
: "${IMAGE_REPO:?IMAGE_REPO is not set, e.g. ghcr.io/addonops/addonops-controller}"
: "${GO_LDFLAGS:?GO_LDFLAGS is not set (the version stamp)}"

# The binaries a user runs; addonops-demo only works inside a checkout and is never released.
functions=(config-hash addon-template rollout-strategy)
commands=(addonops-controller addonops)

if [[ "$VERSION" == *-dirty ]] && [[ "${ALLOW_DIRTY:-}" != 1 ]]; then
	echo "release: VERSION $VERSION: the work tree has uncommitted changes; commit them (or set VERSION, or ALLOW_DIRTY=1)" >&2
	exit 1
fi
if [ ! -f go.mod ] || [ ! -d functions ]; then
	echo "release: run from the repository root (make release does)" >&2
	exit 1
fi
image="$IMAGE_REPO:$VERSION"
# ARCH=PATH of the controller binary of every linux platform, for the multi-architecture image.
arch_binaries=()

work=$(mktemp -d "${TMPDIR:-/tmp}/addonops-release.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf "$RELEASE_DIR"
mkdir -p "$RELEASE_DIR"
out=$(cd "$RELEASE_DIR" && pwd)

# Archives hold the same bytes for the same inputs: sorted names, one mtime, no owner names.
pack() { # DIR-IN-WORK ARCHIVE
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf - "$1" | gzip -n -9 >"$2"
}

for platform in $PLATFORMS; do
	os=${platform%%/*}
	arch=${platform#*/}
	if [ -z "$os" ] || [ -z "$arch" ] || [ "$os/$arch" != "$platform" ] || [[ "$arch" == */* ]]; then
		echo "release: platform \"$platform\" is not OS/ARCH (e.g. linux/amd64)" >&2
		exit 1
	fi
	if [ "$os" = windows ]; then
		echo "release: $platform: windows is not a release platform (the archives are tar.gz with executables without .exe)" >&2
		exit 1
	fi
	name="addonops_${VERSION}_${os}_${arch}"
	stage="$work/$name"
	mkdir -p "$stage"
	echo "release: building $name"
	# One go build for every binary of the platform: it links them in parallel. CGO_ENABLED=0 and
	# -trimpath are make's GO_BUILD_ENV too, so for the build machine's platform the packages come
	# from the build cache `make build` and the tests filled.
	pkgs=()
	for f in "${functions[@]}"; do pkgs+=("./functions/$f"); done
	for c in "${commands[@]}"; do pkgs+=("./cmd/$c"); done
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "-s -w $GO_LDFLAGS" -o "$stage/" "${pkgs[@]}"
	# The kubectl plugin is the same program under the name kubectl looks for; it knows by its
	# name that it runs as `kubectl addonops`.
	ln -s addonops "$stage/kubectl-addonops"
	install -m 755 hack/kubectl_complete-addonops "$stage/kubectl_complete-addonops"
	install -m 644 LICENSE README.md "$stage/"
	pack "$name" "$out/$name.tar.gz"

	if [ "$os" = linux ]; then
		# The image ships the controller binary of this archive (static, stripped, stamped).
		"$GO" run ./hack/imagebuild --binary "$stage/addonops-controller" --arch "$arch" \
			--version "$VERSION" --tag "$image" --output "$out/addonops-controller_${VERSION}_linux_${arch}.image.tar"
		arch_binaries+=(--arch-binary "$arch=$stage/addonops-controller")
	fi
done

# The multi-architecture image and its digest, which the manifests pin. Without a linux platform
# there is no image, and the manifests can only name the tag: say so.
digest=""
if [ ${#arch_binaries[@]} -gt 0 ]; then
	"$GO" run ./hack/imagebuild "${arch_binaries[@]}" --version "$VERSION" --tag "$image" \
		--oci-archive "$out/addonops-controller_${VERSION}.oci.tar" --digest-file "$work/digest"
	digest=$(cat "$work/digest")
	if [[ ! "$digest" =~ ^sha256:[0-9a-f]{64}$ ]]; then
		echo "release: imagebuild wrote no image digest (got \"$digest\")" >&2
		exit 1
	fi
else
	echo "release: warning: PLATFORMS has no linux platform, so no controller image is built and the manifests name $image by tag, not by digest" >&2
fi

# The manifests, with the release's image: a throw-away overlay of config/ (never edited in place).
# kustomize takes only relative paths to other kustomizations.
render() { # OUTPUT [COMPONENT]
	local overlay
	overlay=$(mktemp -d "$work/overlay.XXXXXX")
	{
		echo "apiVersion: kustomize.config.k8s.io/v1beta1"
		echo "kind: Kustomization"
		echo "resources:"
		echo "- $(realpath --relative-to="$overlay" config/default)"
		if [ -n "${2:-}" ]; then
			echo "components:"
			echo "- $(realpath --relative-to="$overlay" "$2")"
		fi
		echo "images:"
		echo "- name: ghcr.io/addonops/addonops-controller" # what config/manager sets
		echo "  newName: $IMAGE_REPO"
		echo "  newTag: \"$VERSION\""
		if [ -n "$digest" ]; then
			# IMAGE_REPO:VERSION@DIGEST: the runtime pulls the digest; the tag is for people.
			echo "  digest: $digest"
		fi
	} >"$overlay/kustomization.yaml"
	"$GO" tool kustomize build "$overlay" >"$1"
}
render "$out/addonops_${VERSION}.yaml"
render "$out/addonops_${VERSION}_deploy-templates.yaml" config/components/deploy-templates
pinned="$image${digest:+@$digest}"
for m in "$out/addonops_${VERSION}.yaml" "$out/addonops_${VERSION}_deploy-templates.yaml"; do
	if ! grep -q "image: $pinned\$" "$m"; then
		echo "release: $m does not run $pinned: does config/manager still name the image ghcr.io/addonops/addonops-controller?" >&2
		exit 1
	fi
done

(cd "$out" && find . -maxdepth 1 -type f ! -name SHA256SUMS -printf '%f\n' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
echo "release: wrote $out"
(cd "$out" && ls -l)
