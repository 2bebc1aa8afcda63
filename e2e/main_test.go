//go:build integration

package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// tools are the programs the suite runs, prepared by TestMain.
var tools struct {
	// Root is the repository root; kustomize builds run there.
	Root string
	// Bin holds freshly built config-hash, addon-template, rollout-strategy and addonops; it is
	// first on $PATH, where the examples' kustomizations find the functions (as the READMEs tell
	// users to arrange).
	Bin string
	// Kustomize is the go.mod's kustomize (v5.8.2).
	Kustomize string
}

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		code = 1
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	root, err := localhub.RepoRoot("")
	if err != nil {
		return 0, fmt.Errorf("finding the repository root: %w", err)
	}
	bin, err := os.MkdirTemp("", "addonops-e2e-bin-")
	if err != nil {
		return 0, fmt.Errorf("creating a directory for the function binaries: %w", err)
	}
	defer os.RemoveAll(bin)
	// Built from this tree, not taken from bin/: the suite tests the code under test. The addonops
	// CLI too, once for every test: the day-2 commands, status, history and plan as a user runs them.
	if err := krmfntest.BuildFunctions(root, bin, "./cmd/addonops"); err != nil {
		return 0, fmt.Errorf("building the functions and the addonops CLI: %w", err)
	}
	kustomize, err := krmfntest.KustomizePath(root)
	if err != nil {
		return 0, err
	}
	if err := os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return 0, fmt.Errorf("setting PATH: %w", err)
	}
	tools.Root, tools.Bin, tools.Kustomize = root, bin, kustomize
	return localhub.RunTests(m), nil
}
