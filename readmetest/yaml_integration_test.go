//go:build integration

package readmetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/testing/mdblock"
)

// validateYAML validates an object or fragment block (see the package documentation).
func validateYAML(t *testing.T, b mdblock.Block) {
	t.Helper()
	content := dedentAll(b.Content)
	m := b.Marker
	// The strict reader every function uses: a key twice, a List, a non-string label...
	var stderr bytes.Buffer
	if code := krmfn.Run("readme", "", nil, strings.NewReader(content), io.Discard, &stderr, func(*krmfn.Request) error { return nil }); code != 0 {
		t.Errorf("%s: the YAML does not pass the strict reader (internal/krmfn) the functions use:\n%s", b.Where(), strings.ReplaceAll(stderr.String(), "stdin", b.Where()))
		return
	}
	docs, err := documents(content)
	if err != nil {
		t.Errorf("%s: %v", b.Where(), err)
		return
	}
	if m.Verb == "fragment" {
		if len(docs) != 1 {
			t.Errorf("%s: a fragment must be one YAML document, got %d", b.Where(), len(docs))
			return
		}
		var path string
		if len(m.Args) == 2 {
			path = m.Args[1]
		}
		obj, err := embed(m.Args[0], path, docs[0])
		if err != nil {
			t.Errorf("%s: fragment %s %s: %v", b.Where(), m.Args[0], path, err)
			return
		}
		docs = []map[string]any{obj}
	}
	fnconfig := ""
	if len(m.Args) == 1 && strings.HasPrefix(m.Args[0], "fnconfig=") {
		fnconfig = strings.TrimPrefix(m.Args[0], "fnconfig=")
	}
	for i, obj := range docs {
		where := b.Where()
		if len(docs) > 1 {
			where += fmt.Sprintf(" (document %d)", i+1)
		}
		if err := validateObject(t, obj, fnconfig); err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
}

// dedentAll removes the indentation common to every non-blank line (a fragment cut out of a
// deeper object).
func dedentAll(s string) string {
	lines := strings.Split(s, "\n")
	n := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if ind := len(l) - len(strings.TrimLeft(l, " ")); n < 0 || ind < n {
			n = ind
		}
	}
	for i, l := range lines {
		if len(l) >= n && n > 0 {
			lines[i] = l[n:]
		}
	}
	return strings.Join(lines, "\n")
}

// documents decodes a YAML stream into JSON-like objects (int64 and float64 numbers, as the API
// server and crdschema see them).
func documents(s string) ([]map[string]any, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(s)))
	var docs []map[string]any
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if string(j) == "null" {
			continue
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(j, &obj); err != nil {
			return nil, fmt.Errorf("a YAML document that is not a mapping: %v", err)
		}
		docs = append(docs, obj)
	}
}

var segRE = regexp.MustCompile(`^([^\[]+)(?:\[(\d+)\])?$`)

// embed puts a fragment at path (a.b[0].c) in KIND's skeleton: a mapping is merged into the
// mapping there, anything else replaces it.
func embed(kind, path string, frag map[string]any) (map[string]any, error) {
	obj, err := documents(skeletons[kind])
	if err != nil || len(obj) != 1 {
		return nil, fmt.Errorf("skeleton of %s: %v", kind, err)
	}
	cur := obj[0]
	if path != "" && path != "." {
		for _, seg := range strings.Split(path, ".") {
			sm := segRE.FindStringSubmatch(seg)
			if sm == nil {
				return nil, fmt.Errorf("bad path segment %q", seg)
			}
			next, ok := cur[sm[1]].(map[string]any)
			if sm[2] != "" {
				list, _ := cur[sm[1]].([]any)
				idx, _ := strconv.Atoi(sm[2])
				if idx >= len(list) {
					return nil, fmt.Errorf("%s has no item %d in the skeleton", sm[1], idx)
				}
				next, ok = list[idx].(map[string]any)
			} else if !ok {
				next = map[string]any{}
				cur[sm[1]] = next
				ok = true
			}
			if !ok {
				return nil, fmt.Errorf("%s is not a mapping in the skeleton", seg)
			}
			cur = next
		}
	}
	merge(cur, frag)
	return obj[0], nil
}

// merge puts src into dst, mappings merged key by key, anything else replaced.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// functionConfigKinds are the addonops functions' config kinds and the function that reads each.
var functionConfigKinds = map[string]string{"ConfigHash": "config-hash", "AddOnTemplateFunction": "addon-template", "RolloutStrategyFunction": "rollout-strategy"}

// validateObject validates one object by its kind.
func validateObject(t *testing.T, obj map[string]any, fnconfig string) error {
	t.Helper()
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	group, _, _ := strings.Cut(apiVersion, "/")
	if !strings.Contains(apiVersion, "/") {
		group = ""
	}
	switch {
	case fnconfig != "":
		return runFunctionConfig(t, fnconfig, obj)
	case apiVersion == "" && kind == "" || group == "kustomize.config.k8s.io":
		return strictDecode(obj, &kusttypes.Kustomization{}, "kustomize's Kustomization (sigs.k8s.io/kustomize/api/types)")
	case group == "kpt.dev" && kind == "Kptfile":
		return strictDecode(obj, &kptfile{}, "the Kptfile fields the READMEs use (readmetest kptfile)")
	case group == "addonops.io":
		fn, ok := functionConfigKinds[kind]
		if !ok {
			return fmt.Errorf("%s %s: no addonops function reads this kind (%v)", apiVersion, kind, functionConfigKinds)
		}
		return runFunctionConfig(t, fn, obj)
	case group == "argoproj.io" && kind == "Application":
		return strictDecode(obj, &argoApplication{}, "the Argo CD Application fields the READMEs use (readmetest argoApplication; Argo CD's CRDs are not vendored)")
	case group == "source.toolkit.fluxcd.io" && (kind == "GitRepository" || kind == "OCIRepository"):
		return strictDecode(obj, &fluxSource{}, "the Flux source fields the READMEs use (readmetest fluxSource)")
	case group == "kustomize.toolkit.fluxcd.io" && kind == "Kustomization":
		return strictDecode(obj, &fluxKustomization{}, "the Flux Kustomization fields the READMEs use (readmetest fluxKustomization)")
	}
	schemas := crdschema.OCM()
	if k, ok := schemas.Lookup(apiVersion, kind); ok {
		if errs := k.Validate(obj); len(errs) > 0 {
			return fmt.Errorf("%s %s: OCM's CRD schema rejects it: %v", apiVersion, kind, errs.ToAggregate())
		}
		return nil
	}
	if err := schemas.CheckVersion(apiVersion, kind); err != nil {
		return err
	}
	if group == "" || strings.HasSuffix(group, ".k8s.io") || !strings.Contains(group, ".") {
		return dryRun(t, obj)
	}
	return fmt.Errorf("%s %s: no validator for this kind: add one to readmetest/yaml_test.go validateObject", apiVersion, kind)
}

// strictDecode decodes obj into v, refusing fields v does not have.
func strictDecode(obj map[string]any, v any, what string) error {
	j, err := utiljson.Marshal(obj)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(j, v); err != nil {
		return fmt.Errorf("not %s: %v", what, err)
	}
	return nil
}

// functionInputs are what a function runs on when a README block is given to it as its
// functionConfig: an example's input, so that every mode has something to work on.
var functionInputs = map[string][]string{
	"config-hash":      {"functions/config-hash/examples/hello-addon/hub"},
	"addon-template":   {"functions/addon-template/examples/generate-hello/resources", "functions/addon-template/examples/preview-hello/resources"},
	"rollout-strategy": {"functions/rollout-strategy/examples/seed-canary/resources"},
}

// runFunctionConfig runs the function with obj as its --config on one ConfigMap: the function
// refuses unknown fields and bad values itself.
func runFunctionConfig(t *testing.T, fn string, obj map[string]any) error {
	t.Helper()
	dir := t.TempDir()
	y, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	cfg, in := filepath.Join(dir, "fnconfig.yaml"), filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(cfg, y, 0o644); err != nil {
		return err
	}
	inputs := []string{in}
	if dirs, ok := functionInputs[fn]; ok {
		inputs = nil
		for _, d := range dirs {
			files, _ := filepath.Glob(filepath.Join(root, d, "*.yaml"))
			inputs = append(inputs, files...)
		}
	} else if err := os.WriteFile(in, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"), 0o644); err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(tools(t), fn), append([]string{"--config", cfg}, inputs...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s refuses it as its functionConfig (%v):\n%s", fn, err, out)
	}
	return nil
}

// dryRun creates obj on the test hub with dryRun=All and strict field validation, creating its
// namespace first (a throw-away hub).
func dryRun(t *testing.T, obj map[string]any) error {
	t.Helper()
	h := testHub(t)
	u := &unstructured.Unstructured{Object: obj}
	dc, err := discovery.NewDiscoveryClientForConfig(h.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	gvk := u.GroupVersionKind()
	mapping, err := mapper.RESTMapping(schema.GroupKind{Group: gvk.Group, Kind: gvk.Kind}, gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: the API server does not serve this kind: %v", gvk, err)
	}
	dyn, err := dynamic.NewForConfig(h.Config)
	if err != nil {
		return err
	}
	ctx := context.Background()
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == "namespace" {
		ns := u.GetNamespace()
		if ns == "" {
			ns = "default"
		}
		nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, nsObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		ri = dyn.Resource(mapping.Resource).Namespace(ns)
	}
	if _, err := ri.Create(ctx, u, opts); err != nil {
		return fmt.Errorf("the API server rejects it (server-side dry-run, strict field validation): %v", err)
	}
	return nil
}

// The shapes of the third-party kinds the READMEs show, as far as the READMEs use them: every field
// a README writes must be here (strict decode), with the type the real CRD gives it.
type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type argoApplication struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		Project string `json:"project"`
		Source  struct {
			RepoURL        string `json:"repoURL"`
			TargetRevision string `json:"targetRevision,omitempty"`
			Path           string `json:"path,omitempty"`
			Kustomize      *struct {
				Components []string `json:"components,omitempty"`
				Images     []string `json:"images,omitempty"` // OLD=NEW:TAG
			} `json:"kustomize,omitempty"`
			Plugin *struct {
				Name string `json:"name,omitempty"`
			} `json:"plugin,omitempty"`
		} `json:"source"`
		Destination struct {
			Server    string `json:"server,omitempty"`
			Name      string `json:"name,omitempty"`
			Namespace string `json:"namespace,omitempty"`
		} `json:"destination"`
		SyncPolicy *struct {
			Automated *struct {
				Prune    bool `json:"prune,omitempty"`
				SelfHeal bool `json:"selfHeal,omitempty"`
			} `json:"automated,omitempty"`
			SyncOptions []string `json:"syncOptions,omitempty"`
		} `json:"syncPolicy,omitempty"`
	} `json:"spec"`
}

type fluxSource struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		Interval string `json:"interval"`
		URL      string `json:"url"`
		Ref      *struct {
			Tag    string `json:"tag,omitempty"`
			Branch string `json:"branch,omitempty"`
			Semver string `json:"semver,omitempty"`
			Commit string `json:"commit,omitempty"`
		} `json:"ref,omitempty"`
	} `json:"spec"`
}

type fluxKustomization struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		Interval  string `json:"interval"`
		SourceRef struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"sourceRef"`
		Path       string   `json:"path,omitempty"`
		Components []string `json:"components,omitempty"`
		Images     []struct {
			Name    string `json:"name"`
			NewName string `json:"newName,omitempty"`
			NewTag  string `json:"newTag,omitempty"`
		} `json:"images,omitempty"`
		Prune            bool   `json:"prune"`
		Wait             bool   `json:"wait,omitempty"`
		Timeout          string `json:"timeout,omitempty"`
		HealthCheckExprs []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Current    string `json:"current,omitempty"`
			InProgress string `json:"inProgress,omitempty"`
			Failed     string `json:"failed,omitempty"`
		} `json:"healthCheckExprs,omitempty"`
	} `json:"spec"`
}

type kptfile struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Pipeline   struct {
		Mutators   []kptFunction `json:"mutators,omitempty"`
		Validators []kptFunction `json:"validators,omitempty"`
	} `json:"pipeline"`
}

type kptFunction struct {
	Exec       string            `json:"exec,omitempty"`
	Image      string            `json:"image,omitempty"`
	ConfigPath string            `json:"configPath,omitempty"`
	ConfigMap  map[string]string `json:"configMap,omitempty"`
}
