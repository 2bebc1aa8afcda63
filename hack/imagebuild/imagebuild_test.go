package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/addonops/addonops/internal/localhub"
)

// TestMakeImage runs `make image` as a user does (into a temporary directory), reads the archive
// back, checks the image's configuration, and runs the binary extracted from the image's layers:
// it is static and prints the version make stamped.
func TestMakeImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image holds a linux binary; run on linux to execute it")
	}
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "image.tar")
	const version, ref = "v0.0.0-imagetest", "example.com/addonops/addonops-controller:v0.0.0-imagetest"
	cmd := exec.Command("make", "--no-print-directory", "image", "VERSION="+version, "IMAGE="+ref,
		"IMAGE_ARCHIVE="+archive, "IMAGE_BUILD_DIR="+filepath.Join(dir, "build"))
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}

	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatalf("reading the archive back as %s: %v", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" {
		t.Errorf("image user %q, want the nonroot 65532:65532", cfg.Config.User)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/addonops-controller" {
		t.Errorf("entrypoint %q, want [/addonops-controller]", cfg.Config.Entrypoint)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || cfg.Config.Labels["org.opencontainers.image.version"] != version {
		t.Errorf("platform %s/%s, version label %q; want linux/%s, %s", cfg.OS, cfg.Architecture, cfg.Config.Labels["org.opencontainers.image.version"], runtime.GOARCH, version)
	}

	files := extract(t, img)
	if passwd := string(files["etc/passwd"].content); !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", passwd)
	}
	bin, ok := files["addonops-controller"]
	if !ok {
		t.Fatalf("no /addonops-controller in the image; files: %v", keys(files))
	}
	if bin.mode&0o111 == 0 {
		t.Errorf("/addonops-controller has mode %o, not executable", bin.mode)
	}
	path := filepath.Join(dir, "extracted-addonops-controller")
	if err := os.WriteFile(path, bin.content, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("the entrypoint is not an ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the entrypoint is dynamically linked (has an ELF interpreter): the empty base has no libc")
		}
	}
	_ = f.Close()
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	if !strings.HasPrefix(string(out), "addonops-controller "+version+" (") {
		t.Errorf("--version printed %q, want addonops-controller %s (...)", out, version)
	}
}

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
