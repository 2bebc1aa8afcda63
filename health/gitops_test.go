package health

// The GitOps wiring: Argo CD's config management plugin (argocd/cmp-plugin.yaml) and tools image
// (argocd/tools.Dockerfile, argocd/repo-server-patch.yaml), the Flux render workflow
// (flux/render-workflow.yaml with hack/render.sh) and the Argo CD / Flux objects the READMEs show.
// Each is run or validated the way its tool would: the plugin's own commands from its
// ConfigMap, the workflow's own steps, the objects against the tools' CRDs.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/testing/localhub"
)

func gitopsRoot(t *testing.T) string {
	t.Helper()
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// functionNames lists the KRM functions: the main packages under functions/.
func functionNames(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./functions/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./functions/...: %v", err)
	}
	var names []string
	for _, p := range strings.Fields(string(out)) {
		if !strings.Contains(p, "/internal/") { // the functions' own tools, e.g. benchmark drivers
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) < 3 {
		t.Fatalf("go list found only the functions %q", names)
	}
	slices.Sort(names)
	return names
}

// yamlDocs splits a multi-document YAML file.
func yamlDocs(t *testing.T, file string) [][]byte {
	t.Helper()
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return splitYAML(t, file, content)
}

func splitYAML(t *testing.T, what string, content []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// TestToolsImageBuildsEveryFunction: the tools image builds every function of functions/ and
// kustomize, and the init container copies and mounts every function: adding a function without
// updating the image fails here.
func TestToolsImageBuildsEveryFunction(t *testing.T) {
	root := gitopsRoot(t)
	functions := functionNames(t, root)
	dockerfile, err := os.ReadFile(filepath.Join(root, "health/argocd/tools.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Instructions with their continuation lines joined, comments dropped.
	var instructions []string
	var cur strings.Builder
	for _, line := range strings.Split(string(dockerfile), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		if s := strings.TrimSpace(cur.String()); s != "" {
			instructions = append(instructions, s)
		}
		cur.Reset()
	}
	var built []string
	kustomize := false
	for _, in := range instructions {
		if !strings.HasPrefix(in, "RUN ") {
			continue
		}
		for _, cmd := range strings.Split(in, "&&") {
			fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(cmd), "RUN "))
			i := slices.Index(fields, "go")
			if i < 0 || i+1 >= len(fields) || fields[i+1] != "build" {
				continue
			}
			for _, f := range fields[i+2:] {
				if name, ok := strings.CutPrefix(f, "./functions/"); ok {
					built = append(built, name)
				}
				if f == "sigs.k8s.io/kustomize/kustomize/v5" {
					kustomize = true
				}
			}
		}
	}
	slices.Sort(built)
	if !slices.Equal(built, functions) {
		t.Errorf("tools.Dockerfile builds the functions %q, functions/ has %q", built, functions)
	}
	if !kustomize {
		t.Error("tools.Dockerfile does not build kustomize (sigs.k8s.io/kustomize/kustomize/v5, the go.mod tool)")
	}
	if !slices.Contains(instructions, "COPY --from=build /out/ /usr/local/bin/") {
		t.Error("tools.Dockerfile does not copy the built tools onto the PATH (/usr/local/bin/)")
	}
	// The version the image's kustomize has is go.mod's: the comment must say which.
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/kustomize/kustomize/v5")
	cmd.Dir = root
	version, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m kustomize: %v", err)
	}
	if v := strings.TrimSpace(string(version)); !bytes.Contains(dockerfile, []byte("kustomize\n# (the version go.mod pins as a tool, "+v+")")) {
		t.Errorf("tools.Dockerfile does not say it builds kustomize %s, the version go.mod pins", v)
	}

	patch, err := os.ReadFile(filepath.Join(root, "health/argocd/repo-server-patch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range functions {
		if !bytes.Contains(patch, []byte(" /usr/local/bin/"+f+",")) || !bytes.Contains(patch, []byte("mountPath: /usr/local/bin/"+f+"\n          subPath: "+f+"\n")) {
			t.Errorf("repo-server-patch.yaml does not copy and mount %s", f)
		}
	}
}

// gitopsSchemas are the CRDs of the Argo CD and Flux kinds the READMEs and health/ show, copied
// from the tools' releases into testdata/crds (the file names say which).
func gitopsSchemas(t *testing.T) *crdschema.Schemas {
	t.Helper()
	files, err := filepath.Glob("testdata/crds/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("testdata/crds: %v %v", files, err)
	}
	s := crdschema.OCM()
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			obj := jsonObject(t, f, doc)
			if s, err = s.WithCRD(obj); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		}
	}
	return s
}

func jsonObject(t *testing.T, what string, doc []byte) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var obj map[string]any
	if err := json.Unmarshal(j, &obj); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return obj
}

// validate checks every object of docs against the CRDs as the API server would on create, with
// strict field validation, and returns them by kind.
func validate(t *testing.T, s *crdschema.Schemas, what string, docs [][]byte) map[string][]map[string]any {
	t.Helper()
	byKind := map[string][]map[string]any{}
	for _, doc := range docs {
		obj := jsonObject(t, what, doc)
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		k, ok := s.Lookup(apiVersion, kind)
		if !ok {
			t.Errorf("%s: no CRD in testdata/crds for %s %s", what, apiVersion, kind)
			continue
		}
		for _, e := range k.Validate(obj) {
			t.Errorf("%s: %s: %s", what, kind, e)
		}
		byKind[kind] = append(byKind[kind], obj)
	}
	return byKind
}

func nested(obj map[string]any, path ...string) any {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// deployGuide is the page with the recipes for deploying the controller.
const deployGuide = "docs/guides/deploy-on-a-hub.md"

// TestDeploySnippets: the Argo CD Application and Flux GitRepository/Kustomization of
// docs/guides/deploy-on-a-hub.md, and flux/addonops-hub.yaml, are valid objects of those tools' CRDs
// (unknown fields are errors), and they follow a ref that exists: the main branch (the repository
// has no tags yet).
func TestDeploySnippets(t *testing.T) {
	root := gitopsRoot(t)
	s := gitopsSchemas(t)
	readme, err := os.ReadFile(filepath.Join(root, deployGuide))
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(readme, -1) {
		if bytes.Contains(block[1], []byte("argoproj.io/")) || bytes.Contains(block[1], []byte("toolkit.fluxcd.io/")) {
			docs = append(docs, splitYAML(t, deployGuide, block[1])...)
		}
	}
	byKind := validate(t, s, deployGuide, docs)
	apps, repos, kss := byKind["Application"], byKind["GitRepository"], byKind["Kustomization"]
	if len(apps) != 1 || len(repos) != 1 || len(kss) != 1 {
		t.Fatalf(deployGuide+": want one Argo CD Application, one Flux GitRepository and Kustomization, got %d, %d, %d", len(apps), len(repos), len(kss))
	}
	if rev := nested(apps[0], "spec", "source", "targetRevision"); rev != "main" {
		t.Errorf(deployGuide+": the Application's targetRevision is %v, want main (no tag exists)", rev)
	}
	if ref := nested(repos[0], "spec", "ref"); !equalJSON(ref, map[string]any{"branch": "main"}) {
		t.Errorf(deployGuide+": the GitRepository's ref is %v, want {branch: main} (no tag exists)", ref)
	}
	if p := nested(apps[0], "spec", "source", "path"); p != "config/default" {
		t.Errorf(deployGuide+": the Application deploys %v, want config/default", p)
	}
	if p := nested(kss[0], "spec", "path"); p != "./config/default" {
		t.Errorf(deployGuide+": the Kustomization deploys %v, want ./config/default", p)
	}

	hub := validate(t, s, "health/flux/addonops-hub.yaml", yamlDocs(t, filepath.Join(root, "health/flux/addonops-hub.yaml")))
	if len(hub["OCIRepository"]) != 1 || len(hub["Kustomization"]) != 1 {
		t.Errorf("flux/addonops-hub.yaml: want one OCIRepository and one Kustomization, got %v", hub)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
