package gitrepo

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ExampleTrees are the directories of the addonops tree that RolloutExamples copies, at the same
// paths: the rollout examples and the e2e suite's overlays of them, which refer to each other by
// relative paths.
var ExampleTrees = []string{"kustomize-rollout-examples", "e2e/testdata"}

// HubDir is the directory of the repository a GitOps engine syncs (an Argo CD Application's
// path, the package CI renders for Flux).
const HubDir = "hub"

// RolloutExamples copies ExampleTrees from the addonops tree at root into the repository, as a
// user's repository of add-on packages would hold them. It commits nothing.
func RolloutExamples(r *Repo, root string) error {
	for _, dir := range ExampleTrees {
		if err := r.CopyTree(filepath.Join(root, dir), dir); err != nil {
			return fmt.Errorf("laying out the examples: %w", err)
		}
	}
	return nil
}

// Step points HubDir at dir (a package of the repository, e.g.
// "e2e/testdata/rollout-examples/02-rolling-update"): hub/kustomization.yaml becomes a
// kustomization whose only resource is dir. It commits nothing.
func Step(r *Repo, dir string) error {
	clean := filepath.ToSlash(filepath.Clean(dir))
	if filepath.IsAbs(dir) || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("step %s: must be a directory of the repository", dir)
	}
	k := "# The add-on package the hub runs: each step of the test is a commit that changes this line.\n" +
		"apiVersion: kustomize.config.k8s.io/v1beta1\n" +
		"kind: Kustomization\n" +
		"resources:\n" +
		"- ../" + clean + "\n"
	return r.WriteFile(filepath.Join(HubDir, "kustomization.yaml"), []byte(k))
}
