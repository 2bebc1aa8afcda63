//go:build integration

package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/addonops/addonops/internal/testing/localhub"
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
