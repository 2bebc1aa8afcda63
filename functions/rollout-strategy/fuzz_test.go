package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/krmfn"
)

// FuzzRolloutStrategy feeds arbitrary input and an arbitrary functionConfig to the function.
// Whatever the input: no panic; a failure exits 1 with a message on stderr and writes nothing; a
// success is idempotent (a second run gives identical bytes), leaves no seed type behind, and every
// canary annotation it wrote reads back with the shared parser, in canonical form, without cycles.
// The seeds are every golden case's input and functionConfig, so `go test` runs them.
func FuzzRolloutStrategy(f *testing.F) {
	dirs, err := filepath.Glob("testdata/*/resources")
	if err != nil {
		f.Fatal(err)
	}
	more, _ := filepath.Glob("examples/*/resources")
	for _, d := range append(dirs, more...) {
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
		f.Add(strings.Join(docs, "\n---\n"), config)
	}
	f.Add("", "")
	f.Add("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata: {name: a}\nspec: {installStrategy: {placements: [{name: p, namespace: n, rolloutStrategy: {type: RollingUpdate, rollingUpdate: null}}]}}\n", "")

	f.Fuzz(func(t *testing.T, input, config string) {
		var fc *yaml.RNode
		if n, err := yaml.Parse(config); err == nil && !n.IsNilOrEmpty() {
			fc = n
		}
		// kyaml's reader and writer are not a fixed point on every input (a flow-style null such as
		// {installStrategy} comes out as ''): the property is about this function, so it runs on
		// what kyaml itself writes back unchanged.
		input, stable := kyamlFixedPoint(t, input)
		if !stable {
			t.Skip("kyaml does not read back what it writes for this input")
		}
		out, stderr, code := run(t, input, fc)
		switch code {
		case 0:
			again, stderr2, code2 := run(t, out, fc)
			if code2 != 0 || again != out {
				t.Fatalf("second run differs (exit %d, stderr %s):\ninput:\n%s\nfirst:\n%s\nsecond:\n%s", code2, stderr2, input, out, again)
			}
			checkOutput(t, out)
		case 1:
			if stderr == "" {
				t.Fatalf("failed without a message; input:\n%s", input)
			}
			if out != "" {
				t.Fatalf("failed run wrote output:\n%s\nstderr: %s", out, stderr)
			}
		default:
			t.Fatalf("exit code %d", code)
		}
	})
}

// kyamlFixedPoint passes input through krmfn without a function twice and tells whether the
// second pass changed nothing; it returns the first pass's output.
func kyamlFixedPoint(t *testing.T, input string) (string, bool) {
	identity := func(in string) (string, int) {
		var out, errw bytes.Buffer
		code := krmfn.Execute("identity", krmfn.Input{Stdin: strings.NewReader(in)}, func(*krmfn.Request) error { return nil }, &out, &errw)
		return out.String(), code
	}
	once, code := identity(input)
	if code != 0 {
		return input, true // unreadable: the function must fail on it, which the caller checks
	}
	twice, code := identity(once)
	return once, code == 0 && twice == once
}

// checkOutput checks what a successful run promises about every ClusterManagementAddOn it wrote.
func checkOutput(t *testing.T, out string) {
	for _, doc := range strings.Split(out, "\n---\n") {
		n, err := yaml.Parse(doc)
		if err != nil || n.IsNilOrEmpty() || n.YNode().Kind != yaml.MappingNode {
			continue
		}
		if group(n) != addonGroup || n.GetKind() != "ClusterManagementAddOn" {
			continue
		}
		list, _ := n.Pipe(yaml.Lookup("spec", "installStrategy", "placements"))
		if list != nil && list.YNode().Kind == yaml.SequenceNode {
			for _, e := range list.YNode().Content {
				rs, _ := yaml.NewRNode(e).Pipe(yaml.Lookup("rolloutStrategy", "type"))
				if rs != nil {
					switch v := yaml.GetValue(rs); v {
					case seedUpdateAll, seedRollingUpdate, seedRollingUpdateWithCanary:
						t.Fatalf("seed type %s left in the output:\n%s", v, doc)
					}
				}
			}
		}
		raw, ok := n.GetAnnotations()[canary.Annotation]
		if !ok {
			continue
		}
		m, err := canary.ParseValue(raw)
		if err != nil {
			t.Fatalf("written annotation does not parse: %v\n%s", err, doc)
		}
		if cyc := canary.Cycles(m); len(cyc) > 0 {
			t.Fatalf("accepted a canary cycle %v:\n%s", cyc, doc)
		}
	}
}
