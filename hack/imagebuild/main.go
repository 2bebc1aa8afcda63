// Command imagebuild writes the container image of addonops-controller as an image archive
// (`docker load`, `podman load`, `skopeo copy docker-archive:...`, `crane push`) without a
// container engine or a registry: an empty base, one layer with the static binary and a nonroot
// user in /etc/passwd, entrypoint the binary, user 65532:65532. `make image` runs it.
//
// It is a build tool of this repository, not a product command: users who build images with a
// container engine use the Dockerfile, which makes the same image from source.
//
//	imagebuild --binary bin/linux_amd64/addonops-controller --version v0.3.0 \
//	    --tag ghcr.io/addonops/addonops-controller:v0.3.0 --output bin/addonops-controller-image.tar
//
// With --oci-archive it writes the release's multi-architecture image instead: an OCI image layout
// archive with one index over an image per --arch-binary, and the index's digest (--digest-file),
// which the release's manifests name the image by (hack/release.sh):
//
//	imagebuild --arch-binary amd64=dist/linux_amd64/addonops-controller --arch-binary arm64=... \
//	    --version v0.3.0 --tag ghcr.io/addonops/addonops-controller:v0.3.0 \
//	    --oci-archive addonops-controller_v0.3.0.oci.tar --digest-file digest
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say what image to write.
type Options struct {
	// Binary is the static linux binary to ship.
	Binary string
	// Entrypoint is where it goes in the image (absolute).
	Entrypoint string
	// Tag names the image in the archive's manifest (what `docker load` tags it as).
	Tag string
	// Version is the org.opencontainers.image.version label.
	Version string
	// OS and Arch are the platform of Binary.
	OS, Arch string
	// Output is the archive's path.
	Output string
}

// Nonroot is the user the image runs as: distroless' nonroot user, which the restricted Pod
// Security Standard (runAsNonRoot) accepts.
const Nonroot = 65532

// epoch is the time of every file and of the image: the archive depends on the binary only.
var epoch = time.Unix(0, 0).UTC()

func main() {
	var o Options
	var archBinaries archBinaryFlag
	var ociOutput, digestFile string
	fs := flag.NewFlagSet("imagebuild", flag.ExitOnError)
	fs.StringVar(&o.Binary, "binary", "", "static linux binary to put in the image (required)")
	fs.StringVar(&o.Entrypoint, "entrypoint", "/addonops-controller", "path of the binary in the image, its entrypoint")
	fs.StringVar(&o.Tag, "tag", "ghcr.io/addonops/addonops-controller:latest", "image name and tag recorded in the archive")
	fs.StringVar(&o.Version, "version", "devel", "version label of the image")
	fs.StringVar(&o.OS, "os", "linux", "OS of the binary")
	fs.StringVar(&o.Arch, "arch", "amd64", "architecture of the binary (GOARCH)")
	fs.StringVar(&o.Output, "output", "", "image archive to write (required)")
	fs.Var(&archBinaries, "arch-binary", "ARCH=PATH: with --oci-archive, the static linux binary of one architecture (repeat per architecture)")
	fs.StringVar(&ociOutput, "oci-archive", "", "instead of --output: write an OCI image layout archive holding a multi-architecture index of the --arch-binary images")
	fs.StringVar(&digestFile, "digest-file", "", "with --oci-archive: write the index's digest (sha256:...) to this file")
	_ = fs.Parse(os.Args[1:])
	err := func() error {
		if ociOutput == "" {
			return Build(o)
		}
		digest, err := BuildIndex(IndexOptions{Binaries: archBinaries, Entrypoint: o.Entrypoint, Version: o.Version, Tag: o.Tag, Output: ociOutput})
		if err != nil || digestFile == "" {
			return err
		}
		return os.WriteFile(digestFile, []byte(digest.String()+"\n"), 0o644)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// archBinaryFlag is the repeated --arch-binary ARCH=PATH.
type archBinaryFlag map[string]string

func (f *archBinaryFlag) String() string { return fmt.Sprint(map[string]string(*f)) }

func (f *archBinaryFlag) Set(v string) error {
	arch, p, ok := strings.Cut(v, "=")
	if !ok || arch == "" || p == "" {
		return fmt.Errorf("%q: want ARCH=PATH, e.g. arm64=dist/linux_arm64/addonops-controller", v)
	}
	if *f == nil {
		*f = archBinaryFlag{}
	}
	if _, dup := (*f)[arch]; dup {
		return fmt.Errorf("%q: architecture %s given twice", v, arch)
	}
	(*f)[arch] = p
	return nil
}

// Build writes the image archive o describes.
func Build(o Options) error {
	if o.Binary == "" || o.Output == "" {
		return errors.New("--binary and --output are required")
	}
	tag, err := name.NewTag(o.Tag)
	if err != nil {
		return fmt.Errorf("--tag %q: %w", o.Tag, err)
	}
	img, err := image(o.Binary, o.Entrypoint, o.Version, o.OS, o.Arch)
	if err != nil {
		return err
	}
	// Written next to the output and renamed: a failed run leaves no half-written archive.
	tmp := o.Output + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", o.Output, err)
	}
	return os.Rename(tmp, o.Output)
}

// image is the image of one static binary: one layer (rootFS), entrypoint the binary, user
// nonroot, every time the epoch. Its manifest, config and layer have OCI media types, so it can
// go into an OCI image index as it is.
func image(binary, entrypoint, version, goos, arch string) (v1.Image, error) {
	if !path.IsAbs(entrypoint) {
		return nil, fmt.Errorf("--entrypoint %q: want an absolute path in the image", entrypoint)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w (build it with CGO_ENABLED=0 GOOS=%s GOARCH=%s)", err, goos, arch)
	}
	files, err := rootFS(entrypoint, bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(files)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = goos, arch, v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{entrypoint}
	cfg.Config.User = fmt.Sprintf("%d:%d", Nonroot, Nonroot)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    path.Base(entrypoint),
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   "https://github.com/addonops/addonops",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, fmt.Errorf("setting the image configuration: %w", err)
	}
	return img, nil
}

// IndexOptions say what multi-architecture image to write.
type IndexOptions struct {
	// Binaries are the static linux binaries to ship, by architecture (GOARCH).
	Binaries map[string]string
	// Entrypoint, Version: as Options'.
	Entrypoint, Version string
	// Tag names the index in the layout (its org.opencontainers.image.ref.name is the tag's
	// identifier, e.g. v0.3.0: `skopeo copy oci-archive:OUTPUT:v0.3.0 ...`).
	Tag string
	// Output is the OCI image layout archive to write (skopeo's oci-archive: a tar of the layout).
	Output string
}

// BuildIndex writes an OCI image layout archive holding one image index over an image per
// architecture of o.Binaries, and returns the index's digest. A copy that keeps the manifests as
// they are (`skopeo copy --all --preserve-digests`, crane, oras) makes a registry serve the index
// under exactly this digest, so manifests can name the image by it before it is pushed. The same
// binaries give the same digest.
func BuildIndex(o IndexOptions) (v1.Hash, error) {
	if len(o.Binaries) == 0 || o.Output == "" {
		return v1.Hash{}, errors.New("--arch-binary and --output are required")
	}
	tag, err := name.NewTag(o.Tag)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("--tag %q: %w", o.Tag, err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range slices.Sorted(maps.Keys(o.Binaries)) {
		img, err := image(o.Binaries[arch], o.Entrypoint, o.Version, "linux", arch)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("%s: %w", arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	dir, err := os.MkdirTemp(filepath.Dir(o.Output), ".oci-layout-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.TagStr()})); err != nil {
		return v1.Hash{}, fmt.Errorf("writing the OCI layout: %w", err)
	}
	tmp := o.Output + ".tmp"
	if err := tarDir(dir, tmp); err != nil {
		_ = os.Remove(tmp)
		return v1.Hash{}, fmt.Errorf("writing %s: %w", o.Output, err)
	}
	return digest, os.Rename(tmp, o.Output)
}

// tarDir writes the files under dir into a tar archive at out, sorted, with fixed times and
// owners, so the archive depends on the files only.
func tarDir(dir, out string) error {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(names)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			return errors.Join(err, f.Close())
		}
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: epoch, Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, n+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return errors.Join(err, f.Close())
			}
			continue
		}
		content, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return errors.Join(err, f.Close())
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(content))
		if err := tw.WriteHeader(h); err != nil {
			return errors.Join(err, f.Close())
		}
		if _, err := tw.Write(content); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return errors.Join(tw.Close(), f.Close())
}

// rootFS is the layer: the binary, /etc/passwd and /etc/group naming root and nonroot (programs
// that look the user up find it), nonroot's home and a /tmp, as in distroless/static.
func rootFS(entrypoint string, bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: epoch, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, content []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(content)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(content)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", Nonroot, Nonroot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", Nonroot)
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("home", 0o755, 0) },
		func() error { return dir("home/nonroot", 0o700, Nonroot) },
		func() error { return dir("tmp", 0o1777, 0) },
	}
	// Every parent of the entrypoint, outermost first (etc, home and tmp are made above).
	var parents []string
	for d := path.Dir(entrypoint[1:]); d != "."; d = path.Dir(d) {
		if d != "etc" && d != "home" && d != "tmp" {
			parents = append([]string{d}, parents...)
		}
	}
	for _, d := range parents {
		steps = append(steps, func() error { return dir(d, 0o755, 0) })
	}
	steps = append(steps, func() error { return file(entrypoint[1:], 0o755, bin) }, tw.Close)
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, fmt.Errorf("making the image's files: %w", err)
		}
	}
	return buf.Bytes(), nil
}
