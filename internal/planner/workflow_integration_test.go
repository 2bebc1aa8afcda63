//go:build integration

package planner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// workflow is what TestPlanWorkflow reads of a GitHub Actions workflow.
type workflow struct {
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Name string `json:"name"`
			Run  string `json:"run"`
		} `json:"steps"`
	} `json:"jobs"`
}

// TestPlanWorkflow runs the render and plan steps of docs/guides/plan-workflow.yaml as GitHub
// Actions runs them (bash -eo pipefail, the workflow's env), with the functions, addonops and the
// go.mod's kustomize built from this repository on the PATH (what its install step installs), in a
// work tree laid out as in the workflow (the packages' repository, here this one's rollout
// examples, with addonops in .addonops). The snapshot its plan step reads is the hub after step 1 of
// the examples (a fresh install on eight clusters), so the plan of step 2 must be an upgrade of
// placement default/global-placement, a quarter of the clusters at a time.
func TestPlanWorkflow(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(root, "docs/guides/plan-workflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(content, &wf); err != nil {
		t.Fatalf("plan-workflow.yaml: %v", err)
	}
	var render, plan string
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			switch {
			case strings.Contains(s.Run, "hack/render.sh"):
				render = s.Run
			case strings.Contains(s.Run, "addonops plan"):
				plan = s.Run
			}
		}
	}
	if render == "" || plan == "" || wf.Env["PACKAGES"] == "" || wf.Env["SNAPSHOT"] == "" {
		t.Fatalf("plan-workflow.yaml: want a render step (hack/render.sh), a plan step (addonops plan) and env PACKAGES and SNAPSHOT; got %q, %q, %v", render, plan, wf.Env)
	}

	// What the install step installs, built from this repository.
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./functions/config-hash", "./functions/addon-template", "./functions/rollout-strategy", "./cmd/addonops")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the functions and addonops: %v\n%s", err, out)
	}
	kustomize, err := krmfntest.KustomizePath(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kustomize, filepath.Join(bin, "kustomize")); err != nil {
		t.Fatal(err)
	}

	work := t.TempDir()
	for _, link := range []string{"kustomize-rollout-examples", "examples"} {
		if err := os.Symlink(filepath.Join(root, link), filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(root, filepath.Join(work, ".addonops")); err != nil {
		t.Fatal(err)
	}
	step := func(script string, env map[string]string) (string, string) {
		t.Helper()
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("step %q: %v\n%s\n%s", script, err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	withEnv := func(over map[string]string) map[string]string {
		env := map[string]string{}
		for k, v := range wf.Env {
			env[k] = v
		}
		for k, v := range over {
			env[k] = v
		}
		return env
	}

	// The hub: eight clusters in the placement, step 1 of the examples rolled out.
	step(render, withEnv(map[string]string{"PACKAGES": "kustomize-rollout-examples/01-fresh-install"}))
	installed, err := os.Open(filepath.Join(work, "rendered/01-fresh-install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ReadManifests(installed)
	installed.Close()
	if err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for i := range 8 {
		clusters = append(clusters, fmt.Sprintf("cluster-%d", i+1))
	}
	base := snapshotOf(t, hubObjects(placementSpec{name: "global-placement", groups: [][]string{clusters}})...)
	base.TakenAt.Time = time.Now().UTC().Truncate(time.Second) // a current snapshot: no staleness warning
	rep, h, err := planHub(base, objs)
	if err != nil {
		t.Fatal(err)
	}
	if p := placementOf(t, rep, "default/global-placement"); p.Change != ChangeInstall || !p.Completes {
		t.Fatalf("installing step 1: %+v", p)
	}
	snap, err := h.snapshot(base.HistoryNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := snap.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	krmfntest.WriteFile(t, filepath.Join(work, wf.Env["SNAPSHOT"]), string(b))
	if err := os.RemoveAll(filepath.Join(work, "rendered")); err != nil {
		t.Fatal(err)
	}

	// The workflow's steps as written.
	step(render, withEnv(nil))
	step(plan, withEnv(nil))
	md, err := os.ReadFile(filepath.Join(work, "plan.md"))
	if err != nil {
		t.Fatalf("the plan step wrote no plan.md: %v", err)
	}
	t.Logf("plan.md:\n%s", md)
	for _, want := range []string{"| helloworld | default/global-placement | Upgrade |", "- strategy: Progressive, maxConcurrency 2,",
		"- batch 1 (step 1): cluster-1, cluster-2\n", "- batch 4 (step 4): cluster-7, cluster-8\n", "<details><summary>helloworld: config addondeploymentconfigs.addon.open-cluster-management.io default/helloworld-config-77hdhg6tf9 (edit of addondeploymentconfigs.addon.open-cluster-management.io default/helloworld-config-",
		"-    value: v0.10.0\n+    value: v0.11.0\n",
		"<details><summary>manifests of cluster-1, cluster-2, cluster-3, cluster-4, cluster-5, cluster-6, cluster-7, cluster-8: changed</summary>",
		"-        image: quay.io/open-cluster-management/addon-examples:v0.10.0\n+        image: quay.io/open-cluster-management/addon-examples:v0.11.0\n"} {
		if !strings.Contains(string(md), want) || strings.Contains(string(md), "Warning") {
			t.Errorf("plan.md lacks %q:\n%s", want, md)
		}
	}
}

// planHub is plan with the tests' options.
func planHub(s *Snapshot, objs []*unstructured.Unstructured) (*Report, *hub, error) {
	return plan(s, objs, Options{Now: s.TakenAt.Time, Source: "test"})
}
