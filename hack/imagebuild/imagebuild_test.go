package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type file struct {
	mode    int64
	content []byte
}

// extract reads the image's flattened filesystem, as a container runtime unpacks it.
func extract(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading the image's layers: %v", err)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, tr); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(h.Name, "/")] = file{mode: h.Mode, content: buf.Bytes()}
	}
}

func keys(m map[string]file) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}

// TestBuildRefusesBadInput: the errors say what to fix, and nothing is written.
func TestBuildRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.tar")
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Output: out}, "--binary and --output are required"},
		{Options{Binary: filepath.Join(dir, "missing"), Output: out, Entrypoint: "/x", Tag: "a/b:c", OS: "linux", Arch: "amd64"}, "build it with CGO_ENABLED=0 GOOS=linux GOARCH=amd64"},
		{Options{Binary: "x", Output: out, Entrypoint: "x", Tag: "a/b:c"}, "want an absolute path"},
		{Options{Binary: "x", Output: out, Entrypoint: "/x", Tag: "Not A Tag"}, "--tag"},
	} {
		err := Build(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%+v) = %v, want an error containing %q", tc.o, err, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused build left %s: %v", out, err)
	}
}

// TestReproducible: the same binary gives the same image, byte for byte (fixed file times and
// creation date), so a rebuild of a release can be checked against the published digest.
func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var digests []string
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("image-%d.tar", i))
		if err := Build(Options{Binary: bin, Entrypoint: "/usr/bin/x", Tag: "example.com/addonops/x:v1", Version: "v1", OS: "linux", Arch: "amd64", Output: out}); err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(out, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
		if i == 1 {
			files := extract(t, img)
			if f, ok := files["usr/bin/x"]; !ok || f.mode != 0o755 {
				t.Errorf("/usr/bin/x in the image: %v %o", ok, f.mode)
			}
			for _, d := range []string{"usr", "usr/bin"} {
				if _, ok := files[d]; !ok {
					t.Errorf("no directory /%s for the entrypoint; files %v", d, keys(files))
				}
			}
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binary: digests %s and %s", digests[0], digests[1])
	}
}

// TestBuildIndex: the multi-architecture OCI layout archive holds one index, tagged, over a linux
// image per architecture; the digest BuildIndex returns is the index's, the same for the same
// binaries, and what a registry serves once the layout is pushed as it is (an in-memory
// registry, go-containerregistry's, standing in for the user's).
func TestBuildIndex(t *testing.T) {
	dir := t.TempDir()
	bins := map[string]string{}
	for _, arch := range []string{"amd64", "arm64"} {
		bins[arch] = filepath.Join(dir, "bin-"+arch)
		if err := os.WriteFile(bins[arch], []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var digests []v1.Hash
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("image-%d.oci.tar", i))
		d, err := BuildIndex(IndexOptions{Binaries: bins, Entrypoint: "/addonops-controller", Version: "v1", Tag: "example.com/addonops/x:v1", Output: out})
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binaries: index digests %s and %s", digests[0], digests[1])
	}
	a, _ := os.ReadFile(filepath.Join(dir, "image-0.oci.tar"))
	b, _ := os.ReadFile(filepath.Join(dir, "image-1.oci.tar"))
	if !bytes.Equal(a, b) {
		t.Errorf("two builds of the same binaries wrote different archives")
	}

	// Read back as a user's tool reads the archive: an OCI layout whose index.json names one
	// index, tagged v1.
	unpacked := untarAll(t, filepath.Join(dir, "image-0.oci.tar"))
	lp, err := layout.FromPath(unpacked)
	if err != nil {
		t.Fatalf("the archive is no OCI layout: %v", err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digests[0] || im.Manifests[0].MediaType != types.OCIImageIndex ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Fatalf("index.json %+v, want one OCI image index %s tagged v1", im.Manifests, digests[0])
	}
	idx, err := top.ImageIndex(digests[0])
	if err != nil {
		t.Fatal(err)
	}
	if d, err := idx.Digest(); err != nil || d != digests[0] {
		t.Fatalf("the index read back has digest %s (%v), want %s", d, err, digests[0])
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range manifest.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS+"/"+cfg.Architecture != m.Platform.String() || cfg.Config.User != "65532:65532" {
			t.Errorf("image %s for %s: config %s/%s user %s", m.Digest, m.Platform, cfg.OS, cfg.Architecture, cfg.Config.User)
		}
		if f := extract(t, img)["addonops-controller"]; string(f.content) != "binary for "+cfg.Architecture {
			t.Errorf("the %s image holds /addonops-controller %q", cfg.Architecture, f.content)
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("index platforms %v, want %v", platforms, want)
	}

	// Pushed as it is, a registry serves the index under the digest the release pins.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/addonops/addonops-controller:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != digests[0] {
		t.Errorf("the registry serves %s as %s, want the digest BuildIndex returned, %s", ref, desc.Digest, digests[0])
	}
}

// TestArchBinaryFlag: --arch-binary takes ARCH=PATH, once per architecture.
func TestArchBinaryFlag(t *testing.T) {
	var f archBinaryFlag
	if err := f.Set("amd64=a/b"); err != nil || f["amd64"] != "a/b" {
		t.Fatalf("Set(amd64=a/b): %v %v", err, f)
	}
	for _, bad := range []string{"amd64", "=x", "arm64=", "amd64=c"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
	if _, err := BuildIndex(IndexOptions{Output: "x"}); err == nil || !strings.Contains(err.Error(), "--arch-binary") {
		t.Errorf("BuildIndex without binaries: %v", err)
	}
}

// untarAll unpacks a tar archive into a new directory.
func untarAll(t *testing.T, archive string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
