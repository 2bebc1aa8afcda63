// Command addon-template is a KRM function for OCM AddOnTemplates: it generates a template from
// plain agent manifests, validates templates, and previews what each managed cluster gets,
// rendering with the same package (internal/render) the addonops controller deploys with.
// See README.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/version"
)

const name = "addon-template"

const usage = `addon-template: generate, validate and preview OCM AddOnTemplates. The functionConfig
(apiVersion addonops.io/v1alpha1, kind AddOnTemplateFunction, spec.mode generate|validate|preview)
chooses what it does. Reads a ResourceList (kustomize, kpt) or plain YAML on stdin, or the FILEs.

  addon-template [--config FILE] [FILE...]
  addon-template render --cluster NAME [--cluster NAME...] [--output Manifests|ManifestWork]
                        [--deployment-config NAMESPACE/NAME...] [--image-registries JSON] FILE...`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == "--version" {
		fmt.Fprintln(stdout, version.String(name))
		return 0
	}
	if len(args) > 0 && args[0] == "render" {
		return renderCommand(args[1:], stdin, stdout, stderr)
	}
	return krmfn.Run(name, usage, args, stdin, stdout, stderr, process)
}

// renderCommand is `addon-template render`: a preview for the given clusters, printing only what
// the clusters get.
func renderCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name+" render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var clusters, adcs multiFlag
	fs.Var(&clusters, "cluster", "managed cluster `NAME` to render for (repeatable, required)")
	fs.Var(&adcs, "deployment-config", "AddOnDeploymentConfig `NAMESPACE/NAME` from the input to render with (repeatable, in status order)")
	// Single-valued flags are given once: with the flag package's last-wins, a second --output in a
	// script would silently change what is printed.
	output := krmfn.OnceString{Value: OutputManifests}
	var registries krmfn.OnceString
	fs.Var(&output, "output", "`WHAT` to print: Manifests or ManifestWork")
	fs.Var(&registries, "image-registries", "the ManagedCluster's open-cluster-management.io/image-registries annotation `JSON`")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\nUsage of render:\n", usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if len(clusters) == 0 {
		fmt.Fprintf(stderr, "%s render: --cluster is required\n", name)
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "%s render: give the FILEs holding the AddOnTemplate (and AddOnDeploymentConfigs); \"-\" reads stdin\n", name)
		return 2
	}
	spec := map[string]any{"mode": ModePreview, "output": output.Value}
	var cl []any
	for _, c := range clusters {
		entry := map[string]any{"name": c}
		if registries.Value != "" {
			entry["imageRegistries"] = registries.Value
		}
		cl = append(cl, entry)
	}
	spec["clusters"] = cl
	if len(adcs) > 0 {
		spec["deploymentConfigs"] = []string(adcs)
	}
	fc, err := yaml.FromMap(map[string]any{"apiVersion": ConfigAPIVersion, "kind": ConfigKind,
		"metadata": map[string]any{"name": "render"}, "spec": spec})
	if err != nil {
		fmt.Fprintf(stderr, "%s render: %v\n", name, err)
		return 1
	}
	onlyPreview := func(req *krmfn.Request) error {
		if err := process(req); err != nil {
			return err
		}
		var out []*yaml.RNode
		for _, it := range req.Items {
			if isPreviewObject(it) {
				out = append(out, it)
			}
		}
		req.Items = out
		return nil
	}
	return krmfn.Execute(name, krmfn.Input{Stdin: stdin, Files: fs.Args(), FunctionConfig: fc}, onlyPreview, stdout, stderr)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// process is the function: it dispatches on the functionConfig's mode.
func process(req *krmfn.Request) error {
	s, err := parseConfig(req.FunctionConfig)
	if err != nil {
		return err
	}
	switch s.Mode {
	case ModeGenerate:
		return generate(req, s)
	case ModeValidate:
		validate(req)
		return nil
	default:
		return preview(req, s)
	}
}
