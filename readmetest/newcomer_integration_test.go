//go:build integration

package readmetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/addonops/addonops/internal/testing/mdblock"
)

// The newcomer's path: README.md sends a reader to docs/getting-started.md, whose first command
// (as the README's) is `make demo`. Both blocks are marked covered by this file.
const (
	newcomerReadme = "README.md"
	gettingStarted = "docs/getting-started.md"
	demoCommand    = "make demo"
)

// newcomerDemoFlags make the demo small enough for a test (6 clusters, 2 of them canaries, the
// simulation ten times faster) without skipping a step: every example, the pause and the bad
// version run as they do for a reader.
const newcomerDemoFlags = "--clusters 6 --canaries 2 --speed 10 --plain"

// TestNewcomerPath follows the path a newcomer takes: the README links the getting-started page,
// both show `make demo` in a block this test covers, and `make demo` then runs in a copy of the
// repository as the reader runs it (it builds the binaries into the copy's bin/ and starts the
// local hub), with DEMO_FLAGS for a small fleet; it must exit 0 (every step ended as expected)
// and print its summary.
func TestNewcomerPath(t *testing.T) {
	readme := readRepoFile(t, newcomerReadme)
	if !strings.Contains(readme, "("+gettingStarted+")") {
		t.Errorf("%s does not link %s, the newcomer's next page", newcomerReadme, gettingStarted)
	}
	for _, page := range []string{newcomerReadme, gettingStarted} {
		if !coversDemo(t, page) {
			t.Errorf("%s: no sh block marked <!-- readme-test: covered-by readmetest/newcomer_integration_test.go --> holds the line %q", page, demoCommand)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	dir := demoCheckout(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", demoCommand)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DEMO_FLAGS="+newcomerDemoFlags, "DEMO_ENGINE=none", "TERM=dumb")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s with DEMO_FLAGS=%q: %v after %s", demoCommand, newcomerDemoFlags, err, time.Since(start).Round(time.Second))
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within 25 minutes; its output:\n%s", demoCommand, tail(out.String(), 60))
	}
	if err != nil {
		t.Fatalf("%s failed (%v): the path docs/getting-started.md gives a newcomer is broken; its output:\n%s", demoCommand, err, tail(out.String(), 60))
	}
	_, summary, ok := strings.Cut(out.String(), "SUMMARY:")
	if !ok {
		t.Fatalf("%s exited 0 without its summary; its output:\n%s", demoCommand, tail(out.String(), 60))
	}
	t.Logf("the demo's summary:\nSUMMARY:%s", summary)
}

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// coversDemo reports whether the page has an sh block, marked covered by this test, with the line
// `make demo`.
func coversDemo(t *testing.T, page string) bool {
	t.Helper()
	blocks, err := mdblock.Extract(page, readRepoFile(t, page))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if b.Marker == nil || b.Marker.Verb != "covered-by" || len(b.Marker.Args) != 1 ||
			b.Marker.Args[0] != "readmetest/newcomer_integration_test.go" {
			continue
		}
		for _, c := range mdblock.Commands(b) {
			if strings.TrimSpace(mdblock.StripComment(c.Text)) == demoCommand {
				return true
			}
		}
	}
	return false
}

// demoCheckout copies the repository as copyRepo does, but with a bin/ of its own, so that `make
// demo` builds the product binaries there as in a reader's checkout; only the hub's
// kube-apiserver (ten minutes to build, `make hub-binaries`, which make test runs first) is linked
// from the repository's bin/, and its tools module's files are dated before it so that make does
// not build it again.
func demoCheckout(t *testing.T) string {
	t.Helper()
	dir := copyRepo(t)
	bin := filepath.Join(dir, "bin")
	if err := os.Remove(bin); err != nil { // copyRepo's link to the shared tools
		t.Fatal(err)
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The two binaries that take minutes to build are the shared ones (make test builds them); the
	// product's are built by make demo in the copy, as a reader's are. kube-apiserver's tools module
	// is made older than the link so that make does not rebuild it (OCM's is built only when missing).
	for _, b := range []struct{ name, target string }{{"kube-apiserver", "hub-binaries"}, {"ocm-placement", "bin/ocm-placement"}} {
		shared := filepath.Join(root, "bin", b.name)
		if _, err := os.Stat(shared); err != nil {
			t.Fatalf("%s is missing: run `make %s` (make test does): %v", shared, b.target, err)
		}
		if err := os.Symlink(shared, filepath.Join(bin, b.name)); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []string{"tools/kube-apiserver/go.mod", "tools/kube-apiserver/go.sum"} {
		if err := os.Chtimes(filepath.Join(dir, f), old, old); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
