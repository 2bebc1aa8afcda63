//go:build integration

package krmfntest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildObjects(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	kustomize, err := KustomizePath(wd)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	WriteFile(t, filepath.Join(dir, "ok", "kustomization.yaml"), "resources:\n- cm.yaml\n")
	WriteFile(t, filepath.Join(dir, "ok", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n")
	WriteFile(t, filepath.Join(dir, "empty", "kustomization.yaml"), "resources: []\n")

	objs, out, err := BuildObjects(context.Background(), []string{kustomize}, dir, "ok", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "ConfigMap" || objs[0].GetName() != "a" || !strings.Contains(string(out), "k: v") {
		t.Errorf("got %d objects (%v) and output %q, want ConfigMap a with k: v", len(objs), objs, out)
	}

	_, _, err = BuildObjects(context.Background(), []string{kustomize}, dir, "missing", nil)
	if err == nil || !strings.Contains(err.Error(), "build --enable-alpha-plugins --enable-exec missing") || !strings.Contains(err.Error(), "Error: ") {
		t.Errorf("a folder without a kustomization: error %v, want the command and kustomize's stderr", err)
	}
	_, _, err = BuildObjects(context.Background(), []string{kustomize}, dir, "empty", nil)
	if err == nil || !strings.Contains(err.Error(), "printed no objects") {
		t.Errorf("an empty build: error %v, want 'printed no objects'", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err = BuildObjects(ctx, []string{kustomize}, dir, "ok", nil); err != context.Canceled {
		t.Errorf("a cancelled build: error %v, want context.Canceled", err)
	}
}
