package krmfn

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/krmfn/krmfntest"
)

// rename appends "-x" to every name, or fails on an object named "bad".
func rename(req *Request) error {
	for _, it := range req.Items {
		if it.GetName() == "bad" {
			req.Errorf(it, "metadata.name", "name %q is not allowed", it.GetName())
			continue
		}
		req.Infof(it, "", "renamed %s", Describe(it))
		if err := it.SetName(it.GetName() + "-x"); err != nil {
			return err
		}
	}
	return nil
}

const resourceList = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
    annotations:
      config.kubernetes.io/index: '0'
      internal.config.kubernetes.io/index: '0'
  data:
    k: v # comment
functionConfig:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: cfg}
`

func TestResourceListMode(t *testing.T) {
	var out, errw bytes.Buffer
	code := Execute("t", Input{Stdin: strings.NewReader(resourceList)}, rename, &out, &errw)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errw.String())
	}
	rl := yaml.MustParse(out.String())
	if rl.GetKind() != "ResourceList" {
		t.Fatalf("output is not a ResourceList:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "name: a-x") || !strings.Contains(out.String(), "k: v # comment") || !strings.Contains(out.String(), "renamed ConfigMap a") {
		t.Fatalf("output lacks renamed item or info result:\n%s", out.String())
	}
	if errw.Len() != 0 {
		t.Fatalf("info results leaked to stderr under a ResourceList caller: %s", errw.String())
	}
}

func TestErrorWritesNoResources(t *testing.T) {
	in := strings.Replace(resourceList, "name: a\n", "name: bad\n", 1)
	var out, errw bytes.Buffer
	if code := Execute("t", Input{Stdin: strings.NewReader(in)}, rename, &out, &errw); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(errw.String(), `t: name "bad" is not allowed (ConfigMap bad, field metadata.name)`) {
		t.Fatalf("stderr = %q", errw.String())
	}
	if !strings.Contains(out.String(), "items: []") || !strings.Contains(out.String(), "severity: error") {
		t.Fatalf("error output must carry results only:\n%s", out.String())
	}
}

func TestPlainFilesMode(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(f, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	if code := Run("t", "test", []string{f}, strings.NewReader(""), &out, &errw, rename); code != 0 {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	want := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-x\n"
	if out.String() != want {
		t.Fatalf("plain output:\n%s\nwant:\n%s", out.String(), want)
	}
	if !strings.Contains(errw.String(), "info: renamed ConfigMap a (file "+f+")") {
		t.Fatalf("plain mode must show infos on stderr with the file: %q", errw.String())
	}
}

func TestPlainErrorWritesNothing(t *testing.T) {
	var out, errw bytes.Buffer
	code := Run("t", "test", nil, strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n"), &out, &errw, rename)
	if code != 1 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

func TestMalformedInput(t *testing.T) {
	var out, errw bytes.Buffer
	code := Execute("t", Input{Stdin: strings.NewReader("a: [b\n")}, rename, &out, &errw)
	if code != 1 || !strings.Contains(errw.String(), "t: reading input") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errw.String())
	}
}

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
