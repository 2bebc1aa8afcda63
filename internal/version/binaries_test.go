//go:build integration

package version_test

import (
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// TestEveryBinaryPrintsItsStampedVersion builds every product command (cmd/..., functions/...)
// the way the Makefile does, with the version stamped through -ldflags -X, and runs `NAME
// --version`: each prints "NAME <version> (...)". A new command without --version fails here.
func TestEveryBinaryPrintsItsStampedVersion(t *testing.T) {
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	list := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./cmd/...", "./functions/...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		// Commands under internal/ are the repository's own tools (config-hash's benchmark driver),
		// not product binaries.
		if !strings.Contains(p, "/internal/") {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) < 4 {
		t.Fatalf("go list found only the commands %v", pkgs)
	}
	const stamped = "v0.0.0-versiontest"
	dir := t.TempDir()
	build := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator),
		"-ldflags", "-X github.com/addonops/addonops/internal/version.Version=" + stamped}, pkgs...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, p := range pkgs {
		name := path.Base(p)
		out, err := exec.Command(filepath.Join(dir, name), "--version").CombinedOutput()
		if err != nil {
			t.Errorf("%s --version: %v\n%s", name, err, out)
			continue
		}
		if want := name + " " + stamped + " ("; !strings.HasPrefix(string(out), want) {
			t.Errorf("%s --version printed %q, want %q...", name, out, want)
		}
	}
}
