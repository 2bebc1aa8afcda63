package localhub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// apiModule is the OCM API module whose CRD YAMLs the hub installs.
const apiModule = "open-cluster-management.io/api"

// crdDirs are the api module folders whose *.crd.yaml files make the hub: the add-on API (storage
// version v1alpha1, what every OCM hub serves), ManifestWork, and everything OCM's placement
// controller and work agent watch (ManagedClusterSet/Binding in v1beta2, ClusterClaim and
// AddOnPlacementScore in v1alpha1).
//
// addon/v1beta1 is left out on purpose: it holds the same three CRDs again, serving v1beta1 next to
// v1alpha1, which only works behind OCM's conversion webhook. Without it the server would hand out
// v1alpha1-shaped objects labelled v1beta1. operator/v1 (klusterlet, cluster-manager) is for OCM's
// installer, which no hub here runs.
var crdDirs = []string{
	"addon/v1alpha1",
	"cluster/v1",
	"cluster/v1alpha1",
	"cluster/v1beta1",
	"cluster/v1beta2",
	"work/v1",
	"work/v1alpha1",
}

// requiredCRDs must all be found in crdDirs; a different api module layout fails loudly instead of
// giving a hub that lacks a kind.
var requiredCRDs = []string{
	"clustermanagementaddons.addon.open-cluster-management.io",
	"managedclusteraddons.addon.open-cluster-management.io",
	"addondeploymentconfigs.addon.open-cluster-management.io",
	"addontemplates.addon.open-cluster-management.io",
	"managedclusters.cluster.open-cluster-management.io",
	"clusterclaims.cluster.open-cluster-management.io",
	"addonplacementscores.cluster.open-cluster-management.io",
	"placements.cluster.open-cluster-management.io",
	"placementdecisions.cluster.open-cluster-management.io",
	"managedclustersets.cluster.open-cluster-management.io",
	"managedclustersetbindings.cluster.open-cluster-management.io",
	"manifestworks.work.open-cluster-management.io",
	"appliedmanifestworks.work.open-cluster-management.io",
	"manifestworkreplicasets.work.open-cluster-management.io",
}

// crdFile is one CRD read from the api module.
type crdFile struct {
	path string
	name string
	json []byte
	crd  *apiextensionsv1.CustomResourceDefinition
}

// findCRDFiles reads every CRD of crdDirs from the api module and checks the set is complete.
func findCRDFiles(ctx context.Context, opts Options) ([]crdFile, error) {
	root, err := crdRoot(ctx, opts)
	if err != nil {
		return nil, err
	}
	var files []crdFile
	seen := map[string]string{}
	for _, dir := range crdDirs {
		paths, err := filepath.Glob(filepath.Join(root, dir, "*.crd.yaml"))
		if err != nil {
			return nil, fmt.Errorf("listing CRDs in %s: %w", filepath.Join(root, dir), err)
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("localhub: no *.crd.yaml in %s: %s is not the root of %s v1.3.0 "+
				"(set $ADDONOPS_OCM_CRDS to that module's directory, or unset it to use `go list -m`)",
				filepath.Join(root, dir), root, apiModule)
		}
		sort.Strings(paths)
		for _, p := range paths {
			f, err := readCRD(p)
			if err != nil {
				return nil, err
			}
			if other, dup := seen[f.name]; dup {
				return nil, fmt.Errorf("localhub: CRD %s is defined twice, in %s and %s", f.name, other, p)
			}
			seen[f.name] = p
			files = append(files, f)
		}
	}
	var missing []string
	for _, name := range requiredCRDs {
		if _, ok := seen[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("localhub: CRDs %s not found under %s (folders %s): is it %s v1.3.0?",
			strings.Join(missing, ", "), root, strings.Join(crdDirs, ", "), apiModule)
	}
	return files, nil
}

func readCRD(path string) (crdFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return crdFile{}, fmt.Errorf("reading CRD: %w", err)
	}
	// One CRD per file, possibly behind a leading "---".
	reader := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return crdFile{}, fmt.Errorf("localhub: %s holds no CustomResourceDefinition", path)
		}
		if err != nil {
			return crdFile{}, fmt.Errorf("localhub: parsing %s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return crdFile{}, fmt.Errorf("localhub: parsing %s: %w", path, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(js, crd); err != nil {
			return crdFile{}, fmt.Errorf("localhub: decoding %s: %w", path, err)
		}
		if crd.APIVersion != "apiextensions.k8s.io/v1" || crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
			return crdFile{}, fmt.Errorf("localhub: %s is %s %s named %q, want an apiextensions.k8s.io/v1 CustomResourceDefinition",
				path, crd.APIVersion, crd.Kind, crd.Name)
		}
		return crdFile{path: path, name: crd.Name, json: js, crd: crd}, nil
	}
}

// crdRoots caches `go list` answers per repository: it costs a few hundred milliseconds and every
// test package's start would pay it.
var crdRoots sync.Map // repo root -> string

// crdRoot returns the api module's directory: Options.CRDRoot, $ADDONOPS_OCM_CRDS, or what
// `go list -m` reports in the repository (so it is always the version go.mod pins).
func crdRoot(ctx context.Context, opts Options) (string, error) {
	if opts.CRDRoot != "" {
		return opts.CRDRoot, nil
	}
	if env := os.Getenv("ADDONOPS_OCM_CRDS"); env != "" {
		return env, nil
	}
	repo, err := RepoRoot(opts.RepoRoot)
	if err != nil {
		return "", fmt.Errorf("localhub: locating the %s module for its CRDs: %w (set $ADDONOPS_OCM_CRDS to its directory)",
			apiModule, err)
	}
	if dir, ok := crdRoots.Load(repo); ok {
		return dir.(string), nil
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", apiModule)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("localhub: `go list -m %s` in %s: %w: %s (set $ADDONOPS_OCM_CRDS to the module's directory instead)",
			apiModule, repo, err, strings.TrimSpace(stderr.String()))
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("localhub: module %s is not downloaded: run `go mod download %s` in %s",
			apiModule, apiModule, repo)
	}
	crdRoots.Store(repo, dir)
	return dir, nil
}

// APIModuleDir returns the directory of the open-cluster-management.io/api module whose CRDs a hub
// started with opts installs (Options.CRDRoot, $ADDONOPS_OCM_CRDS, or `go list -m` in the
// repository), for callers that install more of its CRDs (internal/testing/ocmwebhook serves
// addon/v1beta1 through OCM's conversion webhook).
func APIModuleDir(ctx context.Context, opts Options) (string, error) {
	return crdRoot(ctx, opts)
}

// InstallCRDs installs OCM's CRDs on a hub started with Options.WithoutCRDs (on any other it
// changes nothing) and waits until they are Established and discoverable.
func (h *Hub) InstallCRDs(ctx context.Context) error {
	return installCRDs(ctx, h.Clients, h.crdFiles)
}

// fieldManager owns the CRDs the hub applies.
const fieldManager = "addonops-localhub"

// installCRDs server-side applies every CRD (idempotent: a second apply changes nothing) and waits
// until each is Established and its resources are in discovery, so informers, dynamic clients and
// kubectl can use them as soon as Start returns.
func installCRDs(ctx context.Context, c *Clients, files []crdFile) error {
	for _, f := range files {
		if err := applyCRD(ctx, c, fieldManager, f.name, f.json); err != nil {
			return fmt.Errorf("%w (from %s)", err, f.path)
		}
	}
	for _, f := range files {
		if err := waitCRD(ctx, c, f.name); err != nil {
			return err
		}
	}
	return warmUp(ctx, c)
}

// ApplyCRDs server-side applies crds (CustomResourceDefinitions as decoded from their YAML) as
// fieldManager, forcing (idempotent: applying them again changes nothing), and waits until each is
// Established with its names accepted and its served versions' resources in discovery: informers,
// dynamic clients and kubectl can use them as soon as it returns. Every part of the tests that
// installs CRDs on a hub (Argo CD's, Flux's, the verification gates', a test's own) goes through
// it, as the hub's own OCM CRDs do.
func ApplyCRDs(ctx context.Context, c *Clients, fieldManager string, crds []*unstructured.Unstructured) error {
	for _, crd := range crds {
		if crd.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("localhub: %s %s is not a CustomResourceDefinition", crd.GetKind(), crd.GetName())
		}
		data, err := json.Marshal(crd.Object)
		if err != nil {
			return fmt.Errorf("localhub: encoding CRD %s: %w", crd.GetName(), err)
		}
		if err := applyCRD(ctx, c, fieldManager, crd.GetName(), data); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		if err := waitCRD(ctx, c, crd.GetName()); err != nil {
			return err
		}
	}
	return nil
}

// applyCRD server-side applies the CRD name (its JSON) as fieldManager, forcing.
func applyCRD(ctx context.Context, c *Clients, fieldManager, name string, data []byte) error {
	force := true
	if _, err := c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
		return fmt.Errorf("localhub: applying CRD %s: %w", name, err)
	}
	return nil
}

// warmUp makes one dry-run write to a custom resource. The server's first write to any custom
// resource takes about 2 s more than the next ones; paying it here keeps it out of the first test
// that writes one, where it would skew anything timed.
func warmUp(ctx context.Context, c *Clients) error {
	gvr := schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta2", Resource: "managedclustersets"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.open-cluster-management.io/v1beta2",
		"kind":       "ManagedClusterSet",
		"metadata":   map[string]any{"name": "localhub-warm-up"},
	}}
	_, err := c.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("localhub: dry-run write of a ManagedClusterSet after installing the CRDs: %w", err)
	}
	return nil
}

// waitCRD waits until the CRD name is Established with its names accepted and its served
// versions' resources are in discovery.
func waitCRD(ctx context.Context, c *Clients, name string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd, err := c.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, want := range []apiextensionsv1.CustomResourceDefinitionConditionType{
			apiextensionsv1.Established, apiextensionsv1.NamesAccepted,
		} {
			if !crdCondition(crd, want) {
				last = fmt.Sprintf("condition %s is not True", want)
				return false, nil
			}
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			list, err := c.Kube.Discovery().ServerResourcesForGroupVersion(gv)
			if err != nil {
				last = fmt.Sprintf("discovery of %s: %v", gv, err)
				return false, nil
			}
			found := false
			for _, r := range list.APIResources {
				found = found || r.Name == crd.Spec.Names.Plural
			}
			if !found {
				last = fmt.Sprintf("%s not yet in discovery of %s", crd.Spec.Names.Plural, gv)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("localhub: CRD %s not ready (%s): %w", name, last, err)
	}
	return nil
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
