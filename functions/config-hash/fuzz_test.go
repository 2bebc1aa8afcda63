package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/spechash"
)

// FuzzConfigHash feeds arbitrary input (plain YAML or a ResourceList, well-formed or not) and an
// arbitrary functionConfig to the function. Whatever the input: no panic; a failure exits 1 with a
// message on stderr and writes no resources (malformed input: nothing at all; a ResourceList
// caller whose input the function rejects gets error results only); a success is idempotent, its
// output coming back unchanged from a second run.
// The seeds are every golden case's input, plain and as a ResourceList, so `go test` runs them.
func FuzzConfigHash(f *testing.F) {
	dirs, err := filepath.Glob("testdata/*/resources")
	if err != nil {
		f.Fatal(err)
	}
	for _, d := range dirs {
		files, err := filepath.Glob(filepath.Join(d, "*.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		var docs []string
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			docs = append(docs, string(b))
		}
		config := ""
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(d), "fnconfig.yaml")); err == nil {
			config = string(b)
		}
		plain := strings.Join(docs, "\n---\n")
		f.Add(plain, config)
		f.Add(asResourceList(plain, config), "")
	}
	f.Add("", "")
	f.Add("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n", "")
	f.Add("kind: AddOnDeploymentConfig\napiVersion: addon.open-cluster-management.io/v1alpha1\nmetadata: {name: a, namespace: b}\nspec: [1, {a: .nan}]\n", "")
	f.Add("apiVersion: v1\nkind: List\nitems: [{kind: X}]\n", "apiVersion: v1\nkind: ConfigMap\ndata: {kinds: '[{group: \"\", kind: X}]'}\n")
	// ResourceList shapes that once panicked, were read as empty or dropped documents.
	rl := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
	for _, shape := range []string{"items: [[x]]\n", "items: hello\n", "items: [~]\n", "items: [x, {kind: X}]\n", "functionConfig: {kind: X}\n",
		"items: []\nfunctionConfig: [x]\n", "items: []\n---\nkind: X\n", "items: []\nresults: 5\n"} {
		f.Add(rl+shape, "")
	}
	f.Add("\xff\xfea\x00:\x00 \x00b\x00\n\x00", "")

	f.Fuzz(func(t *testing.T, input, config string) {
		var fc *yaml.RNode
		if n, err := yaml.Parse(config); err == nil && !n.IsNilOrEmpty() {
			fc = n
		}
		out, stderr, code := execute(input, fc)
		wrapped := strings.Contains(out, "kind: ResourceList")
		switch code {
		case 0:
			checkNames(t, out)
			again, stderr2, code2 := execute(out, fc)
			if code2 != 0 || withoutResults(t, again) != withoutResults(t, out) {
				t.Fatalf("second run differs (exit %d, stderr %s):\ninput:\n%s\nfirst:\n%s\nsecond:\n%s", code2, stderr2, input, out, again)
			}
		case 1:
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
				t.Fatalf("stack trace on stderr:\n%s", stderr)
			}
			if stderr == "" {
				t.Fatalf("failed without a message; input:\n%s", input)
			}
			if out != "" && !(wrapped && strings.Contains(out, "severity: error") && strings.Contains(out, "items: []")) {
				t.Fatalf("failed run wrote resources:\n%s\nstderr: %s", out, stderr)
			}
		default:
			t.Fatalf("exit code %d", code)
		}
	})
}

// checkNames asserts that every hashed object of a successful run is named for its own content:
// its content-hash annotation is the hash of the content it carries as the hub stores it, and its name is its base name
// plus the suffix of that hash. A name that outlives its content is the one failure config-hash
// exists to prevent.
func checkNames(t *testing.T, out string) {
	t.Helper()
	items, err := (&kio.ByteReader{Reader: strings.NewReader(out), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatalf("output does not read back: %v\n%s", err, out)
	}
	for _, it := range items {
		if !isObject(it) {
			continue
		}
		ann := it.GetAnnotations()
		stored, stamped := ann[AnnotationContentHash]
		builtIn := configref.GroupOf(it.GetApiVersion()) == configref.AddonGroup && (it.GetKind() == "AddOnDeploymentConfig" || it.GetKind() == "AddOnTemplate")
		// Only what config-hash hashes (the built-in kinds, or opted in) is named for its content;
		// opted-out and local objects keep whatever annotations they carry.
		if !stamped || ann[annotationLocalConfig] == "true" || ann[AnnotationHashSuffix] == "false" || !builtIn && ann[AnnotationHashSuffix] != "true" {
			continue
		}
		// As the hub stores it: with its kind's defaults, when OCM's CRDs define the kind.
		obj, err := jsonObject(it)
		if err != nil {
			t.Fatalf("%s: %v", it.GetName(), err)
		}
		if k, _ := schemaOf(it.GetApiVersion(), it.GetKind()); k != nil {
			k.Default(obj)
		}
		got, err := spechash.Of(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got != stored {
			t.Fatalf("%s carries content hash %s but its content hashes to %s:\n%s", it.GetName(), stored, got, out)
		}
		suffix, err := spechash.Suffix(stored)
		if err != nil {
			t.Fatal(err)
		}
		if want := ann[AnnotationBaseName] + "-" + suffix; it.GetName() != want {
			t.Fatalf("%s should be named %s for its content:\n%s", it.GetName(), want, out)
		}
	}
}

// withoutResults drops a ResourceList's results, which tell what a run did and so differ
// between a first run and a re-run; the resources must not.
func withoutResults(t *testing.T, out string) string {
	rl, err := yaml.Parse(out)
	if err != nil || !isObject(rl) || rl.GetKind() != "ResourceList" {
		return out // plain YAML (possibly several documents): compared as it is
	}
	if err := rl.PipeE(yaml.Clear("results")); err != nil {
		t.Fatal(err)
	}
	return rl.MustString()
}

func execute(input string, fc *yaml.RNode) (string, string, int) {
	var out, errw bytes.Buffer
	code := krmfn.ExecuteStream("config-hash", krmfn.Input{Stdin: strings.NewReader(input), FunctionConfig: fc}, process, &out, &errw)
	return out.String(), errw.String(), code
}

// asResourceList wraps a YAML stream the way kustomize and kpt hand it to the function.
func asResourceList(stream, config string) string {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	for _, doc := range strings.Split(stream, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		b.WriteString("- " + strings.ReplaceAll(strings.TrimRight(doc, "\n"), "\n", "\n  ") + "\n")
	}
	if config != "" {
		b.WriteString("functionConfig:\n  " + strings.ReplaceAll(strings.TrimRight(config, "\n"), "\n", "\n  ") + "\n")
	}
	return b.String()
}
