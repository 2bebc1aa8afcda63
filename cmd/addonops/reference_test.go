package main

import (
	"flag"
	"io"
	"testing"

	"github.com/spf13/pflag"

	"github.com/addonops/addonops/internal/refdocs"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/reference from the code (make docs)")

// TestReferenceDocs generates the CLI reference (docs/reference/cli.md and a page per command in
// docs/reference/cli/) from the command tree and fails when the committed pages differ: a flag,
// a command or a help text changed without `make docs`.
func TestReferenceDocs(t *testing.T) {
	root, err := refdocs.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := refdocs.Sync(root, cliPages(), []string{"docs/reference/cli"}, *updateDocs); err != nil {
		t.Fatal(err)
	}
}

func cliPages() []refdocs.Page {
	c := &cli{prog: "addonops", stdout: io.Discard, stderr: io.Discard}
	statusOwn, _, _ := statusFlags("addonops", &statusOptions{})
	return refdocs.CLIPages(c.rootCommand(), refdocs.CLI{
		Index:  "docs/reference/cli.md",
		Dir:    "docs/reference/cli",
		Source: "cmd/addonops",
		Intro: "It reaches the hub as kubectl does (`--kubeconfig`, `$KUBECONFIG`, `--context`, ...). Installed as `kubectl-addonops` " +
			"on the PATH it is also a kubectl plugin: `kubectl addonops status ADDON`. Every day-2 command writes one annotation on the " +
			"ClusterManagementAddOn, the same a GitOps user can commit instead ([annotations](annotations.md)).",
		OwnFlags: map[string]*pflag.FlagSet{"status": statusOwn},
	})
}
