//go:build integration

package gitrepo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestCommitRevertAndServe(t *testing.T) {
	root := t.TempDir()
	r, err := New(filepath.Join(root, "addons"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("hub/a.yaml", []byte("v1\n")); err != nil {
		t.Fatal(err)
	}
	first, err := r.Commit("first")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("hub/a.yaml", []byte("v2\n")); err != nil {
		t.Fatal(err)
	}
	second, err := r.Commit("second")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("nothing changed"); err == nil {
		t.Error("a commit without changes succeeded; want an error")
	}
	reverted, err := r.Revert(second)
	if err != nil {
		t.Fatal(err)
	}
	if reverted == second || reverted == first {
		t.Fatalf("revert returned %s, an existing commit", reverted)
	}
	if got, _ := os.ReadFile(filepath.Join(r.Dir, "hub/a.yaml")); string(got) != "v1\n" {
		t.Errorf("after the revert hub/a.yaml = %q, want %q", got, "v1\n")
	}

	srv, err := ServeHTTP(root)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	clone := filepath.Join(t.TempDir(), "clone")
	out, err := exec.Command("git", "clone", "--quiet", srv.URL+"/addons", clone).CombinedOutput()
	if err != nil {
		t.Fatalf("git clone %s/addons: %v\n%s", srv.URL, err, out)
	}
	log, err := exec.Command("git", "-C", clone, "log", "--format=%H", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join([]string{reverted, second, first}, "\n") + "\n"; string(log) != want {
		t.Errorf("the clone's history over HTTP:\n%s\nwant:\n%s", log, want)
	}
	if out, err := exec.Command("git", "-C", clone, "push", "origin", "HEAD:refs/heads/x").CombinedOutput(); err == nil {
		t.Errorf("a push over HTTP succeeded; the server must be read-only:\n%s", out)
	}

	checkout := filepath.Join(t.TempDir(), "ci")
	if err := r.Checkout(second, checkout); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(checkout, "hub/a.yaml")); string(got) != "v2\n" {
		t.Errorf("checkout of the second commit: hub/a.yaml = %q, want %q", got, "v2\n")
	}
}

func TestRolloutExamplesBuildFromTheRepository(t *testing.T) {
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := RolloutExamples(r, root); err != nil {
		t.Fatal(err)
	}
	const step = "e2e/testdata/rollout-examples/02-rolling-update"
	if err := Step(r, step); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("02"); err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile(filepath.Join(r.Dir, HubDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(k), "- ../"+step+"\n") {
		t.Errorf("hub/kustomization.yaml does not point at %s:\n%s", step, k)
	}
	// The overlays reach the examples by relative paths: both trees must be where they are in
	// the addonops tree.
	for _, p := range []string{
		"kustomize-rollout-examples/02-rolling-update/kustomization.yaml",
		"kustomize-rollout-examples/config-hash/config-hash.yaml",
		step + "/kustomization.yaml",
	} {
		if _, err := os.Stat(filepath.Join(r.Dir, p)); err != nil {
			t.Errorf("the repository lacks %s: %v", p, err)
		}
	}

	// And the hub package builds from a checkout of the commit, as CI or a repo-server builds it.
	bin := t.TempDir()
	if err := krmfntest.BuildFunctions(root, bin); err != nil {
		t.Fatal(err)
	}
	kustomize, err := krmfntest.KustomizePath(root)
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	checkout := filepath.Join(t.TempDir(), "ci")
	if err := r.Checkout(head, checkout); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, out, err := krmfntest.BuildObjects(context.Background(), []string{kustomize}, checkout, HubDir, env)
	if err != nil {
		t.Fatalf("kustomize build hub in a checkout: %v", err)
	}
	if !strings.Contains(string(out), "kind: ClusterManagementAddOn") || !strings.Contains(string(out), "helloworld-agent-{{CLUSTER_NAME}}") {
		t.Errorf("kustomize build hub printed no ClusterManagementAddOn or no per-cluster agent of the e2e overlay:\n%s", out)
	}
}
