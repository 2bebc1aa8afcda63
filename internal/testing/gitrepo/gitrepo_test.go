package gitrepo

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

func TestPathsStayInTheWorkTree(t *testing.T) {
	r, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../x", "/etc/x", ".git/config", "a/../../x", ".git"} {
		if err := r.WriteFile(p, []byte("x")); err == nil {
			t.Errorf("WriteFile(%q) succeeded; want a refusal", p)
		}
		if err := r.Remove(p); err == nil {
			t.Errorf("Remove(%q) succeeded; want a refusal", p)
		}
	}
	if err := Step(r, "../outside"); err == nil {
		t.Error("Step(../outside) succeeded; want a refusal")
	}
}

// TestCommitsAndRevert: rendered objects committed as one YAML stream, a step's kustomization with
// a recipe's patch, and a revert checked against what it must restore.
func TestCommitsAndRevert(t *testing.T) {
	r, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cm := func(name, v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "data": map[string]any{"v": v}}}
	}
	good, err := render.YAMLStream([]*unstructured.Unstructured{cm("a", "1"), cm("b", "1")})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ssapply.Decode(bytes.NewReader(good))
	if err != nil || len(objs) != 2 || objs[1].GetName() != "b" {
		t.Fatalf("render.YAMLStream wrote %q: decoded %d objects (%v), want a then b", good, len(objs), err)
	}
	if _, err := r.CommitFile("rendered/hub.yaml", good, "good"); err != nil {
		t.Fatal(err)
	}
	bad, err := render.YAMLStream([]*unstructured.Unstructured{cm("a", "2"), cm("b", "1")})
	if err != nil {
		t.Fatal(err)
	}
	badSHA, err := r.CommitFile("rendered/hub.yaml", bad, "bad")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CommitFile("rendered/hub.yaml", bad, "no change"); err == nil {
		t.Error("CommitFile of an unchanged file: no error, want one (an engine would see no change)")
	}
	if got, err := r.Show(badSHA, "rendered/hub.yaml"); err != nil || !bytes.Equal(got, bad) {
		t.Errorf("Show(bad): %q, %v; want the bad render", got, err)
	}
	if _, err := r.RevertRestoring(badSHA, "rendered/hub.yaml", bad); err == nil || !strings.Contains(err.Error(), "does not restore rendered/hub.yaml") {
		t.Errorf("RevertRestoring to the bad render: %v, want an error saying the revert does not restore it", err)
	}
	// The revert made above is a commit; reverting the bad commit again restores nothing new, so
	// a fresh repository checks the good case.
	r2, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.CommitFile("rendered/hub.yaml", good, "good"); err != nil {
		t.Fatal(err)
	}
	badSHA, err = r2.CommitFile("rendered/hub.yaml", bad, "bad")
	if err != nil {
		t.Fatal(err)
	}
	revert, err := r2.RevertRestoring(badSHA, "rendered/hub.yaml", good)
	if err != nil {
		t.Fatalf("RevertRestoring to the good render: %v", err)
	}
	if head, _ := r2.Head(); head != revert {
		t.Errorf("RevertRestoring returned %s, HEAD is %s", revert, head)
	}

	sha, err := CommitStep(r2, "pkg/v1", []byte("# patch\n"), "step")
	if err != nil {
		t.Fatal(err)
	}
	k, err := r2.Show(sha, HubDir+"/kustomization.yaml")
	if err != nil || !strings.Contains(string(k), "- ../pkg/v1\n") || !strings.HasSuffix(string(k), "# patch\n") {
		t.Errorf("CommitStep wrote %q (%v), want the step's resource and the patch at the end", k, err)
	}
}
