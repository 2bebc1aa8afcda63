package flux

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// TestStartWithoutBinaries: a repository without the binaries gets an error naming the missing one
// and the make target, before anything is started.
func TestStartWithoutBinaries(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module github.com/addonops/addonops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), nil, Options{RepoRoot: root})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(root, Binaries.SourceController)) || !strings.Contains(err.Error(), "make flux") {
		t.Fatalf("Start without binaries: %v; want an error naming %s and `make flux`", err, Binaries.SourceController)
	}
}

// TestMissingBinaries: every binary `make flux` builds is listed when the tree lacks it.
func TestMissingBinaries(t *testing.T) {
	want := []string{Binaries.SourceController, Binaries.KustomizeController, Binaries.CLI, Binaries.Registry}
	if got := MissingBinaries(t.TempDir()); !slices.Equal(got, want) {
		t.Errorf("MissingBinaries of an empty tree: %v, want %v", got, want)
	}
}
