//go:build integration

package ocmhub

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/localhub"
)

// TestStartNamesMissingBinaries: Start fails before touching the hub or creating anything, naming
// both binaries and the make target.
func TestStartNamesMissingBinaries(t *testing.T) {
	t.Setenv(placementBinary.env, "")
	t.Setenv(workBinary.env, "")
	t.Setenv("TMPDIR", t.TempDir()) // where a log directory would appear
	root := t.TempDir()
	hub := &localhub.Hub{Clients: &localhub.Clients{}, Kubeconfig: "unused", URL: "https://127.0.0.1:1"}
	o, err := Start(context.Background(), hub, Options{RepoRoot: root})
	if o != nil {
		t.Errorf("Start returned an OCM despite missing binaries")
	}
	assertMentions(t, err, []string{"make ocm-binaries", filepath.Join(root, "bin/ocm-placement"),
		filepath.Join(root, "bin/ocm-work")})
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) > 0 {
		t.Errorf("Start left %v in TMPDIR", left)
	}

	if _, err := Start(context.Background(), nil, Options{}); err == nil || !strings.Contains(err.Error(), "localhub") {
		t.Errorf("Start without a hub: err = %v, want one saying it needs a localhub.Hub", err)
	}
}
