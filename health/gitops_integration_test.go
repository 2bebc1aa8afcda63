//go:build integration

package health

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/krmfntest"
)

// functionTools returns a directory holding freshly built function binaries and the go.mod's
// kustomize under the name `kustomize`: what the tools image puts on the PATH.
func functionTools(t *testing.T) string {
	t.Helper()
	root := gitopsRoot(t)
	bin := t.TempDir()
	var pkgs []string
	for _, f := range functionNames(t, root) {
		pkgs = append(pkgs, "./functions/"+f)
	}
	if err := krmfntest.Build(root, bin+string(filepath.Separator), pkgs...); err != nil {
		t.Fatalf("building the functions: %v", err)
	}
	kustomize, err := krmfntest.KustomizePath(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(kustomize, filepath.Join(bin, "kustomize")); err != nil {
		t.Fatal(err)
	}
	return bin
}

// pluginCommand is Argo CD's cmpserver/plugin Command: the argv is Command followed by Args.
type pluginCommand struct {
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
}

func (c pluginCommand) argv() []string { return append(slices.Clone(c.Command), c.Args...) }

// pluginConfig is Argo CD's ConfigManagementPlugin (cmpserver/plugin/config.go), for a strict
// decoding of plugin.yaml.
type pluginConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version  string        `json:"version"`
		Init     pluginCommand `json:"init"`
		Generate pluginCommand `json:"generate"`
		Discover struct {
			FileName string `json:"fileName"`
			Find     struct {
				pluginCommand `json:",inline"`
				Glob          string `json:"glob"`
			} `json:"find"`
		} `json:"discover"`
		PreserveFileMode bool `json:"preserveFileMode"`
		ProvideGitCreds  bool `json:"provideGitCreds"`
	} `json:"spec"`
}

// loadPlugin reads plugin.yaml out of the ConfigMap of argocd/cmp-plugin.yaml, and checks that the
// sidecar mounts it where argocd-cmp-server reads it.
func loadPlugin(t *testing.T, root string) pluginConfig {
	t.Helper()
	var plugin pluginConfig
	found := false
	mounted := false
	for _, doc := range yamlDocs(t, filepath.Join(root, "health/argocd/cmp-plugin.yaml")) {
		var obj struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		switch obj.Kind {
		case "ConfigMap":
			if err := yaml.UnmarshalStrict([]byte(obj.Data["plugin.yaml"]), &plugin); err != nil {
				t.Fatalf("cmp-plugin.yaml: plugin.yaml is not a ConfigManagementPlugin Argo CD reads: %v", err)
			}
			found = true
		case "Deployment":
			mounted = bytes.Contains(doc, []byte("mountPath: /home/argocd/cmp-server/config/plugin.yaml\n          subPath: plugin.yaml"))
		}
	}
	if !found {
		t.Fatal("cmp-plugin.yaml has no ConfigMap with plugin.yaml")
	}
	if !mounted {
		t.Error("cmp-plugin.yaml: the sidecar does not mount plugin.yaml at /home/argocd/cmp-server/config/plugin.yaml")
	}
	if plugin.APIVersion != "argoproj.io/v1alpha1" || plugin.Kind != "ConfigManagementPlugin" {
		t.Errorf("plugin.yaml is %s %s, want argoproj.io/v1alpha1 ConfigManagementPlugin", plugin.APIVersion, plugin.Kind)
	}
	// Argo CD evaluates fileName, then find.glob, then find.command: only the first set counts.
	if plugin.Spec.Discover.FileName != "" || plugin.Spec.Discover.Find.Glob != "" || len(plugin.Spec.Discover.Find.Command) == 0 {
		t.Fatalf("plugin.yaml: want a discover.find.command rule and no fileName or glob, got %+v", plugin.Spec.Discover)
	}
	return plugin
}

// TestCMPPlugin runs the plugin's discover command where Argo CD runs it (the Application's
// directory inside the whole repository) and its generate command with the tools image's PATH:
// every example package matches and renders exactly its expected output; plain kustomizations,
// and packages with other functions only, do not match.
func TestCMPPlugin(t *testing.T) {
	root := gitopsRoot(t)
	plugin := loadPlugin(t, root)
	if got := plugin.Metadata.Name + "-" + plugin.Spec.Version; got != "addonops-kustomize-v1" {
		t.Errorf("the plugin's name for Applications is %s, the READMEs say addonops-kustomize-v1", got)
	}
	env := append(os.Environ(), "PATH="+functionTools(t)+string(os.PathListSeparator)+os.Getenv("PATH"))
	discover := plugin.Spec.Discover.Find.argv()
	generate := plugin.Spec.Generate.argv()
	if want := []string{"kustomize", "build", "--enable-alpha-plugins", "--enable-exec", "."}; !slices.Equal(generate, want) {
		t.Errorf("generate runs %q, want %q", generate, want)
	}

	for pkg, expected := range examplePackages(t, root) {
		dir := filepath.Join(root, pkg)
		d := runIn(dir, env, discover...)
		if why, ok := notAddonPackages[pkg]; ok {
			// Plain kustomize renders it: the plugin must leave it to Argo CD's own kustomize.
			if d.err == nil && strings.TrimSpace(d.stdout) != "" {
				t.Errorf("%s (%s): discover matches it as an addonops package: stdout %q", pkg, why, d.stdout)
			}
			continue
		}
		if d.err != nil || strings.TrimSpace(d.stdout) == "" {
			t.Errorf("%s: discover does not match an addonops package: %v, stdout %q, stderr %q", pkg, d.err, d.stdout, d.stderr)
			continue
		}
		g := runIn(dir, env, generate...)
		if g.err != nil {
			t.Errorf("%s: generate: %v\n%s", pkg, g.err, g.stderr)
			continue
		}
		want, err := os.ReadFile(filepath.Join(root, expected))
		if err != nil {
			t.Fatal(err)
		}
		if g.stdout != string(want) {
			t.Errorf("%s: generate printed something else than %s:\n%s", pkg, expected, g.stdout)
		}
	}

	// Not for the plugin: plain kustomizations in this repository, and two made here (plain,
	// and one running another exec function).
	other := t.TempDir()
	krmfntest.WriteFile(t, filepath.Join(other, "plain/kustomization.yaml"), "resources:\n- cm.yaml\n")
	krmfntest.WriteFile(t, filepath.Join(other, "plain/cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	krmfntest.WriteFile(t, filepath.Join(other, "otherfn/kustomization.yaml"), "resources:\n- ../plain\ntransformers:\n- fn.yaml\n")
	krmfntest.WriteFile(t, filepath.Join(other, "otherfn/fn.yaml"), "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: fn\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: config-hash-lookalike\n")
	for _, dir := range []string{
		filepath.Join(root, "config/default"),
		filepath.Join(root, "examples/hello-template/agent"),
		filepath.Join(root, "examples/hello-template/hub"),
		filepath.Join(other, "plain"),
		filepath.Join(other, "otherfn"),
	} {
		d := runIn(dir, env, discover...)
		if d.err != nil || d.stdout != "" || d.stderr != "" {
			t.Errorf("%s: discover must print nothing and succeed for a package without addonops functions: %v, stdout %q, stderr %q", dir, d.err, d.stdout, d.stderr)
		}
	}

	// A function declared in a file a kustomization lists (not a directory) is found too.
	krmfntest.WriteFile(t, filepath.Join(other, "filefn/kustomization.yaml"), "resources:\n- ../plain\ntransformers:\n- \"hash.yaml\" # quoted\n")
	krmfntest.WriteFile(t, filepath.Join(other, "filefn/hash.yaml"), "apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nmetadata:\n  name: h\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /usr/local/bin/config-hash\n")
	if d := runIn(filepath.Join(other, "filefn"), env, discover...); d.err != nil || !strings.Contains(d.stdout, "hash.yaml") {
		t.Errorf("discover misses a function declared in a listed file: %v, stdout %q, stderr %q", d.err, d.stdout, d.stderr)
	}
}

// TestRenderWorkflow runs the install and render steps of flux/render-workflow.yaml as GitHub
// Actions runs them (bash -eo pipefail, $GITHUB_PATH, the workflow's env), in a work tree laid out
// as in the workflow (the repository with addonops checked out in .addonops), on every example
// package, and compares what it renders with the package's expected output. It also checks that
// the published directory is the rendered one and that Flux's OCIRepository follows the tag the
// workflow pushes.
func TestRenderWorkflow(t *testing.T) {
	root := gitopsRoot(t)
	content, err := os.ReadFile(filepath.Join(root, "health/flux/render-workflow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(content, &wf); err != nil {
		t.Fatalf("render-workflow.yaml: %v", err)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("render-workflow.yaml: want one job, got %d", len(wf.Jobs))
	}
	var install, render, publish = -1, -1, -1
	var steps []string
	for _, job := range wf.Jobs {
		for i, s := range job.Steps {
			steps = append(steps, s.Run)
			switch {
			case strings.Contains(s.Run, "make -C .addonops install"):
				install = i
			case strings.Contains(s.Run, "hack/render.sh"):
				render = i
			case strings.Contains(s.Run, "flux push artifact"):
				publish = i
			}
		}
	}
	if install < 0 || render < 0 || publish < 0 || !(install < render && render < publish) {
		t.Fatalf("render-workflow.yaml: want an install step (make -C .addonops install), then a render step (hack/render.sh), then a publish step (flux push artifact); got steps %d, %d, %d", install, render, publish)
	}
	renderArgs := strings.Fields(steps[render])
	if len(renderArgs) != 3 || renderArgs[0] != ".addonops/hack/render.sh" || renderArgs[2] != "$PACKAGES" {
		t.Fatalf("the render step runs %q, want .addonops/hack/render.sh OUT $PACKAGES", steps[render])
	}
	out := renderArgs[1]
	if !strings.Contains(steps[publish], "--path="+out+" ") {
		t.Errorf("the publish step does not push the rendered directory %s: %s", out, steps[publish])
	}

	// The work tree: the repository of packages (here: this one's examples) with addonops in
	// .addonops; HOME and GITHUB_PATH as on a runner.
	work := t.TempDir()
	for _, link := range []string{"examples", "kustomize-rollout-examples"} {
		if err := os.Symlink(filepath.Join(root, link), filepath.Join(work, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(root, filepath.Join(work, ".addonops")); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(work, "home")
	githubPath := filepath.Join(work, "github_path")
	krmfntest.WriteFile(t, githubPath, "")
	// Go keeps this machine's build and module caches (a runner's setup-go has its own): with the
	// new HOME it would rebuild everything and download every module.
	goEnv := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH")
	goEnv.Dir = root
	caches, err := goEnv.Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	c := strings.Split(strings.TrimSpace(string(caches)), "\n")
	if len(c) != 3 {
		t.Fatalf("go env printed %q", caches)
	}
	baseEnv := []string{"HOME=" + home, "GITHUB_PATH=" + githubPath, "GOCACHE=" + c[0], "GOMODCACHE=" + c[1], "GOPATH=" + c[2], "GOPROXY=off"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !slices.Contains([]string{"HOME", "PATH", "GOBIN", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY"}, k) {
			baseEnv = append(baseEnv, kv)
		}
	}
	// GitHub runs `run:` with bash --noprofile --norc -eo pipefail {0}; later steps get the
	// directories written to $GITHUB_PATH first on their PATH.
	step := func(script string, extra ...string) run {
		paths, err := os.ReadFile(githubPath)
		if err != nil {
			t.Fatal(err)
		}
		path := os.Getenv("PATH")
		for _, p := range strings.Fields(string(paths)) {
			path = p + string(os.PathListSeparator) + path
		}
		env := append(slices.Clone(baseEnv), "PATH="+path)
		for k, v := range wf.Env {
			env = append(env, k+"="+v)
		}
		return runIn(work, append(env, extra...), "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	}

	if r := step(steps[install]); r.err != nil {
		t.Fatalf("the install step: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	bin := filepath.Join(home, ".local/bin")
	for _, f := range append(functionNames(t, root), "kustomize") {
		if _, err := os.Stat(filepath.Join(bin, f)); err != nil {
			t.Errorf("the install step did not install %s: %v", f, err)
		}
	}

	// The workflow's own PACKAGES first, then every example package.
	packages := examplePackages(t, root)
	runs := []string{wf.Env["PACKAGES"]}
	for pkg := range packages {
		runs = append(runs, pkg)
	}
	if _, ok := packages[wf.Env["PACKAGES"]]; !ok {
		t.Fatalf("the workflow's PACKAGES %q is not an example package with expected output", wf.Env["PACKAGES"])
	}
	for _, pkg := range runs {
		if err := os.RemoveAll(filepath.Join(work, out)); err != nil {
			t.Fatal(err)
		}
		r := step(steps[render], "PACKAGES="+pkg)
		if r.err != nil {
			t.Errorf("the render step with PACKAGES=%s: %v\n%s", pkg, r.err, r.stderr)
			continue
		}
		got, err := os.ReadFile(filepath.Join(work, out, filepath.Base(pkg)+".yaml"))
		if err != nil {
			t.Errorf("the render step with PACKAGES=%s: %v", pkg, err)
			continue
		}
		want, err := os.ReadFile(filepath.Join(root, packages[pkg]))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the render step rendered %s differently from %s:\n%s", pkg, packages[pkg], got)
		}
		if entries, _ := os.ReadDir(filepath.Join(work, out)); len(entries) != 1 {
			t.Errorf("the render step with one package wrote %d files into %s, want 1", len(entries), out)
		}
	}

	// render.sh refuses what would publish something stale or wrong, saying why.
	if r := step(steps[render], "PACKAGES=examples/hello-template"); r.err == nil || !strings.Contains(r.stderr, "is not empty") {
		t.Errorf("the render step into a non-empty %s: want a refusal saying so, got %v\n%s", out, r.err, r.stderr)
	}
	_ = os.RemoveAll(filepath.Join(work, out))
	if r := runIn(work, []string{"PATH=/usr/bin:/bin"}, filepath.Join(root, "hack/render.sh"), out, "examples/hello-template"); r.err == nil || !strings.Contains(r.stderr, "is not on the PATH") {
		t.Errorf("render.sh without the functions on the PATH: want a refusal naming the missing program, got %v\n%s", r.err, r.stderr)
	}

	// Flux follows the tag the workflow moves, at the address it pushes to.
	artifact := strings.ReplaceAll(wf.Env["ARTIFACT"], "${{ github.repository_owner }}", "example")
	tag := regexp.MustCompile(`flux tag artifact \S+ --tag (\S+)`).FindStringSubmatch(steps[publish])
	if tag == nil {
		t.Fatalf("the publish step does not tag the artifact: %s", steps[publish])
	}
	var repo struct {
		Kind string `json:"kind"`
		Spec struct {
			URL string `json:"url"`
			Ref struct {
				Tag string `json:"tag"`
			} `json:"ref"`
		} `json:"spec"`
	}
	for _, doc := range yamlDocs(t, filepath.Join(root, "health/flux/addonops-hub.yaml")) {
		if err := yaml.Unmarshal(doc, &repo); err != nil {
			t.Fatal(err)
		}
		if repo.Kind == "OCIRepository" {
			break
		}
	}
	if repo.Spec.URL != artifact || repo.Spec.Ref.Tag != tag[1] {
		t.Errorf("flux/addonops-hub.yaml follows %s tag %s; the workflow pushes to %s (owner example) and tags %s", repo.Spec.URL, repo.Spec.Ref.Tag, artifact, tag[1])
	}
}

// examplePackages are the packages with a committed expected hub output: the directory and the
// file.
// notAddonPackages are example packages that run no addonops function (so the plugin does not
// discover them), with why.
var notAddonPackages = map[string]string{
	"kustomize-rollout-examples/notifications": "the controller's notification configuration, no add-on",
}

func examplePackages(t *testing.T, root string) map[string]string {
	t.Helper()
	pkgs := map[string]string{}
	for _, pattern := range []string{"examples/*/expected/hub.yaml", "examples/*/*/expected/hub.yaml", "kustomize-rollout-examples/*/expected/hub.yaml"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			pkgs[filepath.Dir(filepath.Dir(rel))] = rel
		}
	}
	if len(pkgs) < 5 {
		t.Fatalf("found only the example packages %v", pkgs)
	}
	return pkgs
}

type run struct {
	stdout, stderr string
	err            error
}

// runIn runs argv in dir with exactly env, finding the program on env's PATH (as the sidecar's
// process, and a CI runner's shell, would; exec.Command alone looks on the test's PATH).
func runIn(dir string, env []string, argv ...string) run {
	var stdout, stderr bytes.Buffer
	prog := argv[0]
	path := ""
	for _, kv := range env { // the last PATH wins, as in exec.Cmd's environment
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	if !strings.Contains(prog, "/") {
		for _, d := range filepath.SplitList(path) {
			if fi, err := os.Stat(filepath.Join(d, prog)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				prog = filepath.Join(d, prog)
				break
			}
		}
	}
	cmd := exec.Command(prog, argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return run{stdout.String(), stderr.String(), err}
}

// workflow is the part of a GitHub Actions workflow the test reads.
type workflow struct {
	Env  map[string]string `json:"env"`
	Jobs map[string]struct {
		Steps []struct {
			Name string            `json:"name"`
			Uses string            `json:"uses"`
			Run  string            `json:"run"`
			With map[string]any    `json:"with"`
			Env  map[string]string `json:"env"`
		} `json:"steps"`
	} `json:"jobs"`
}
