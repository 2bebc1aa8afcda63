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
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
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
	fs := flag.NewFlagSet("imagebuild", flag.ExitOnError)
	fs.StringVar(&o.Binary, "binary", "", "static linux binary to put in the image (required)")
	fs.StringVar(&o.Entrypoint, "entrypoint", "/addonops-controller", "path of the binary in the image, its entrypoint")
	fs.StringVar(&o.Tag, "tag", "ghcr.io/addonops/addonops-controller:latest", "image name and tag recorded in the archive")
	fs.StringVar(&o.Version, "version", "devel", "version label of the image")
	fs.StringVar(&o.OS, "os", "linux", "OS of the binary")
	fs.StringVar(&o.Arch, "arch", "amd64", "architecture of the binary (GOARCH)")
	fs.StringVar(&o.Output, "output", "", "image archive to write (required)")
	_ = fs.Parse(os.Args[1:])
	if err := Build(o); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// Build writes the image archive o describes.
func Build(o Options) error {
	if o.Binary == "" || o.Output == "" {
		return errors.New("--binary and --output are required")
	}
	if !path.IsAbs(o.Entrypoint) {
		return fmt.Errorf("--entrypoint %q: want an absolute path in the image", o.Entrypoint)
	}
	tag, err := name.NewTag(o.Tag)
	if err != nil {
		return fmt.Errorf("--tag %q: %w", o.Tag, err)
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return fmt.Errorf("reading the binary: %w (build it with CGO_ENABLED=0 GOOS=%s GOARCH=%s)", err, o.OS, o.Arch)
	}
	files, err := rootFS(o.Entrypoint, bin)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(files)), nil })
	if err != nil {
		return fmt.Errorf("making the layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = o.OS, o.Arch, v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{o.Entrypoint}
	cfg.Config.User = fmt.Sprintf("%d:%d", Nonroot, Nonroot)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    path.Base(o.Entrypoint),
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.source":   "https://github.com/addonops/addonops",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return fmt.Errorf("setting the image configuration: %w", err)
	}
	// Written next to the output and renamed: a failed run leaves no half-written archive.
	tmp := o.Output + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", o.Output, err)
	}
	return os.Rename(tmp, o.Output)
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
