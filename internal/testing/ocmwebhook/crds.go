package ocmwebhook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// V1beta1 is the add-on API version this package makes the hub serve.
var V1beta1 = schema.GroupVersion{Group: "addon.open-cluster-management.io", Version: "v1beta1"}

// The api module's CRD files of the add-on kinds that serve v1beta1, and the v1alpha1-only files
// localhub installs for the same kinds.
var (
	v1beta1Files = []string{
		"addon/v1beta1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml",
		"addon/v1beta1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml",
		"addon/v1beta1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml",
	}
	v1alpha1Files = []string{
		"addon/v1alpha1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml",
		"addon/v1alpha1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml",
		"addon/v1alpha1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml",
	}
)

// converted are the CRDs OCM's cluster-manager patches to convert through the webhook
// (ocm hack/0000_00_*clustermanagementaddons* and 0000_01_*managedclusteraddons* .yaml-patch).
var converted = []string{
	"clustermanagementaddons.addon.open-cluster-management.io",
	"managedclusteraddons.addon.open-cluster-management.io",
}

// fieldManager owns what this package applies to the CRDs.
const fieldManager = "addonops-ocmwebhook"

// crdFile is one CRD of the api module, as its file says.
type crdFile struct {
	path string
	name string
	obj  map[string]any
}

func readCRDs(ctx context.Context, opts Options, rel []string) ([]crdFile, error) {
	root, err := localhub.APIModuleDir(ctx, localhub.Options{CRDRoot: opts.CRDRoot, RepoRoot: opts.RepoRoot})
	if err != nil {
		return nil, fmt.Errorf("ocmwebhook: %w", err)
	}
	var out []crdFile
	for _, r := range rel {
		p := filepath.Join(root, r)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("ocmwebhook: reading the CRD %s of open-cluster-management.io/api: %w (is %s that module, v1.3.0?)", r, err, root)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			return nil, fmt.Errorf("ocmwebhook: parsing %s: %w", p, err)
		}
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if obj["kind"] != "CustomResourceDefinition" || name == "" {
			return nil, fmt.Errorf("ocmwebhook: %s is no CustomResourceDefinition", p)
		}
		out = append(out, crdFile{path: p, name: name, obj: obj})
	}
	return out, nil
}

// InstallAsShipped installs the api module's addon/v1beta1 CRDs exactly as its files are, which is
// what `kubectl apply -f addon/v1beta1/` of open-cluster-management.io/api does: v1alpha1 and
// v1beta1 served, conversion None. Without OCM's webhook the API server then only relabels
// objects between the versions: fields of one version that the other lacks are lost (see the
// tests). For showing that; a hub that is to serve v1beta1 wants Start.
func InstallAsShipped(ctx context.Context, hub *localhub.Hub, opts Options) error {
	crds, err := readCRDs(ctx, opts, v1beta1Files)
	if err != nil {
		return err
	}
	return installCRDs(ctx, hub, crds, nil, timeoutOf(opts))
}

// RestoreV1alpha1 puts back the add-on CRDs localhub installs (addon/v1alpha1: v1alpha1 only), so
// the hub serves no v1beta1 again. Every object is stored in v1alpha1 under all three installs,
// so none is lost.
func RestoreV1alpha1(ctx context.Context, hub *localhub.Hub, opts Options) error {
	crds, err := readCRDs(ctx, opts, v1alpha1Files)
	if err != nil {
		return err
	}
	return installCRDs(ctx, hub, crds, nil, timeoutOf(opts))
}

func timeoutOf(opts Options) time.Duration {
	if opts.ReadyTimeout == 0 {
		return 2 * time.Minute
	}
	return opts.ReadyTimeout
}

// installCRDs server-side applies crds (forcing: localhub's field manager owns them before), with
// conversion set on those OCM converts when it is given, and waits until each is Established and
// exactly its served versions are in discovery.
func installCRDs(ctx context.Context, hub *localhub.Hub, crds []crdFile, conversion *apiextensionsv1.CustomResourceConversion, timeout time.Duration) error {
	api := hub.Clients.APIExtensions.ApiextensionsV1().CustomResourceDefinitions()
	force := true
	for _, c := range crds {
		obj := c.obj
		if conversion != nil && slices.Contains(converted, c.name) {
			obj = withConversion(obj, conversion)
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("ocmwebhook: encoding CRD %s: %w", c.name, err)
		}
		if _, err := api.Patch(ctx, c.name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("ocmwebhook: applying CRD %s from %s: %w", c.name, c.path, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, c := range crds {
		if err := waitServing(ctx, hub, c); err != nil {
			return err
		}
	}
	return nil
}

// withConversion returns a copy of the CRD obj whose spec.conversion is c.
func withConversion(obj map[string]any, c *apiextensionsv1.CustomResourceConversion) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	spec := map[string]any{}
	for k, v := range obj["spec"].(map[string]any) {
		spec[k] = v
	}
	spec["conversion"] = c
	out["spec"] = spec
	return out
}

// waitServing waits until the CRD is Established and discovery lists its resource in exactly the
// versions it serves.
func waitServing(ctx context.Context, hub *localhub.Hub, c crdFile) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		crd, err := hub.Clients.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if (cond.Type == apiextensionsv1.Established || cond.Type == apiextensionsv1.NamesAccepted) && cond.Status != apiextensionsv1.ConditionTrue {
				last = fmt.Sprintf("condition %s is %s: %s", cond.Type, cond.Status, cond.Message)
				return false, nil
			}
		}
		for _, v := range crd.Spec.Versions {
			gv := crd.Spec.Group + "/" + v.Name
			list, err := hub.Clients.Kube.Discovery().ServerResourcesForGroupVersion(gv)
			listed := false
			if err == nil {
				for _, r := range list.APIResources {
					listed = listed || r.Name == crd.Spec.Names.Plural
				}
			}
			if listed != v.Served {
				last = fmt.Sprintf("discovery of %s lists %s: %t, want %t", gv, crd.Spec.Names.Plural, listed, v.Served)
				return false, nil
			}
		}
		// A version the CRD no longer has must be gone from discovery too.
		for _, gone := range []string{"v1alpha1", "v1beta1"} {
			if slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == gone }) {
				continue
			}
			list, err := hub.Clients.Kube.Discovery().ServerResourcesForGroupVersion(crd.Spec.Group + "/" + gone)
			if err != nil {
				continue // the whole group version is gone
			}
			for _, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					last = fmt.Sprintf("discovery still lists %s in %s/%s", r.Name, crd.Spec.Group, gone)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("ocmwebhook: CRD %s not serving as applied (%s): %w", c.name, strings.TrimSpace(last), err)
	}
	return nil
}
