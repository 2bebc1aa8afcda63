//go:build integration

package krmfn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// TestKustomizeShowsOnlyStderr pins down, with the real kustomize (v5.8.2, the go.mod's), why
// Execute writes warnings and errors to stderr itself: kustomize prints no result of an exec
// function, whatever its severity, but passes the function's stderr through.
func TestKustomizeShowsOnlyStderr(t *testing.T) {
	kustomize, err := krmfntest.KustomizePath("")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	krmfntest.WriteFile(t, filepath.Join(dir, "fn.sh"), `#!/bin/sh
cat >/dev/null
echo "STDERR-LINE" >&2
cat <<'EOF'
apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
results:
- {message: WARNING-RESULT, severity: warning}
- {message: ERROR-RESULT, severity: error}
EOF
`)
	if err := os.Chmod(filepath.Join(dir, "fn.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	krmfntest.WriteFile(t, filepath.Join(dir, "fn.yaml"), "apiVersion: x/v1\nkind: Fn\nmetadata:\n  name: fn\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: "+filepath.Join(dir, "fn.sh")+"\n")
	krmfntest.WriteFile(t, filepath.Join(dir, "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	krmfntest.WriteFile(t, filepath.Join(dir, "kustomization.yaml"), "resources: [cm.yaml]\ntransformers: [fn.yaml]\n")
	stdout, stderr, ok := krmfntest.Tools{Kustomize: kustomize}.KustomizeBuild(t, dir)
	if !ok || !strings.Contains(stdout, "name: a") {
		t.Fatalf("build failed (ok=%t): %s", ok, stderr)
	}
	if !strings.Contains(stderr, "STDERR-LINE") {
		t.Errorf("kustomize no longer passes the function's stderr through: %q", stderr)
	}
	if strings.Contains(stdout+stderr, "RESULT") {
		t.Errorf("kustomize now prints results; Execute could stop duplicating them on stderr:\nstdout %s\nstderr %s", stdout, stderr)
	}
}
