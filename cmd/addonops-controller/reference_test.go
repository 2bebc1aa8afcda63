package main

import (
	"flag"
	"io"
	"testing"

	"github.com/addonops/addonops/internal/refdocs"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/reference from the code (make docs)")

// TestReferenceDocs generates docs/reference/controller-flags.md from the controller's flag set
// and fails when the committed page differs: a flag added, removed, renamed, or its type, default
// or usage changed without `make docs`.
func TestReferenceDocs(t *testing.T) {
	root, err := refdocs.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := newCommand(io.Discard)
	page := refdocs.FlagsPage(cmd, "docs/reference/controller-flags.md", "cmd/addonops-controller")
	if err := refdocs.Sync(root, []refdocs.Page{page}, nil, *updateDocs); err != nil {
		t.Fatal(err)
	}
}
