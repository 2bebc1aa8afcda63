package argocd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// Paths in Argo CD's module (manifests/, the source of its install.yaml).
const (
	crdDir             = "manifests/crds"
	clusterRBACDir     = "manifests/cluster-rbac/application-controller"
	controllerRolesDir = "manifests/base/application-controller-roles"
	configDir          = "manifests/base/config"
	controllerManifest = "manifests/base/application-controller/argocd-application-controller-statefulset.yaml"
	repoServerManifest = "manifests/base/repo-server/argocd-repo-server-deployment.yaml"
)

// Paths in this repository.
const (
	// ArgoCMPatch is the README's argocd-cm patch: our Lua health checks and kustomize options.
	ArgoCMPatch = "health/argocd/argocd-cm.yaml"
	// CMPPlugin holds the plugin's ConfigMap (its plugin.yaml) and the sidecar patch.
	CMPPlugin = "health/argocd/cmp-plugin.yaml"
)

// fieldManager owns what the harness installs: Argo CD's manifests, as a user's `kubectl apply
// --server-side` of its install would.
const fieldManager = "addonops-argocd-install"

// Resources of Argo CD's API.
var (
	ApplicationResource = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	AppProjectResource  = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

var moduleDirs sync.Map // repository root -> the module's directory

// ModuleDir returns the directory of the Argo CD module tools/argocd/go.mod pins
// ($ADDONOPS_ARGOCD_MODULE overrides it), located as tools/argocd/argocd.mk builds it: its own
// module, no workspace.
func ModuleDir(ctx context.Context, root string) (string, error) {
	if env := os.Getenv("ADDONOPS_ARGOCD_MODULE"); env != "" {
		return env, nil
	}
	if d, ok := moduleDirs.Load(root); ok {
		return d.(string), nil
	}
	tools := filepath.Join(root, "tools", "argocd")
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", module)
	cmd.Dir = tools
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("argocd: `go list -m -json %s` in %s: %w: %s (run `make argocd`, which downloads it, or set $ADDONOPS_ARGOCD_MODULE to its directory)",
			module, tools, err, strings.TrimSpace(stderr.String()))
	}
	var m struct{ Dir, Version string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("argocd: decoding `go list -m -json %s`: %w", module, err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("argocd: module %s %s is not downloaded: run `make argocd` or `GOWORK=off go mod download %s` in %s", module, m.Version, module, tools)
	}
	moduleDirs.Store(root, m.Dir)
	return m.Dir, nil
}

// settings are keys the harness adds to argocd-cm and argocd-cmd-params-cm.
type settings struct{ cm, params map[string]string }

// install applies what Argo CD's install gives the parts the harness runs, then the README's
// argocd-cm patch and the test's settings, and the project every Application names.
func install(ctx context.Context, hub *localhub.Hub, moduleDir, root string, s settings) error {
	applier, err := ssapply.New(hub.Clients.Dynamic, hub.Clients.Kube.Discovery(), fieldManager)
	if err != nil {
		return err
	}
	crds, err := readKustomization(moduleDir, crdDir, "")
	if err != nil {
		return err
	}
	if err := localhub.ApplyCRDs(ctx, hub.Clients, fieldManager, crds); err != nil {
		return fmt.Errorf("argocd: installing Argo CD's CRDs from %s: %w", filepath.Join(moduleDir, crdDir), err)
	}
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, Namespace); err != nil {
		return fmt.Errorf("argocd: %w", err)
	}
	var objs []*unstructured.Unstructured
	for _, dir := range []string{clusterRBACDir, controllerRolesDir, configDir} {
		o, err := readKustomization(moduleDir, dir, Namespace)
		if err != nil {
			return err
		}
		objs = append(objs, o...)
	}
	if _, err := applier.ApplyAll(ctx, objs); err != nil {
		return fmt.Errorf("argocd: applying Argo CD's install manifests: %w", err)
	}

	// The README's recipe, as `kubectl -n argocd patch configmap argocd-cm --type merge
	// --patch-file health/argocd/argocd-cm.yaml` runs it.
	raw, err := os.ReadFile(filepath.Join(root, ArgoCMPatch))
	if err != nil {
		return fmt.Errorf("argocd: %w", err)
	}
	patch, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return fmt.Errorf("argocd: %s: %w", ArgoCMPatch, err)
	}
	cms := hub.Clients.Kube.CoreV1().ConfigMaps(Namespace)
	if _, err := cms.Patch(ctx, "argocd-cm", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("argocd: merging %s into argocd-cm: %w", ArgoCMPatch, err)
	}
	for name, data := range map[string]map[string]string{"argocd-cm": s.cm, "argocd-cmd-params-cm": s.params} {
		p, err := json.Marshal(map[string]any{"data": data})
		if err != nil {
			return fmt.Errorf("argocd: %w", err)
		}
		if _, err := cms.Patch(ctx, name, types.MergePatchType, p, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("argocd: setting the test's keys in %s: %w", name, err)
		}
	}

	// The key Argo CD's API server generates into argocd-secret at its first start (settings'
	// InitializeSettings: 32 random bytes); the controller refuses to resolve a destination
	// without it ("server.secretkey is missing").
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("argocd: generating server.secretkey: %w", err)
	}
	secretPatch, err := json.Marshal(map[string]any{"data": map[string][]byte{"server.secretkey": key}})
	if err != nil {
		return fmt.Errorf("argocd: %w", err)
	}
	if _, err := hub.Clients.Kube.CoreV1().Secrets(Namespace).Patch(ctx, "argocd-secret", types.MergePatchType, secretPatch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("argocd: writing server.secretkey into argocd-secret: %w", err)
	}

	// The default project, as Argo CD's API server creates it at its first start (the controller
	// does not, and refuses Applications of a project that does not exist).
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": Namespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	if _, err := applier.Apply(ctx, project); err != nil {
		return fmt.Errorf("argocd: creating the default AppProject: %w", err)
	}
	return nil
}

// readKustomization reads the resources a kustomization of Argo CD's manifests lists (plain files
// only; none of the directories read here lists more), setting namespace on namespaced objects
// as the install's kustomization does.
func readKustomization(moduleDir, dir, namespace string) ([]*unstructured.Unstructured, error) {
	path := filepath.Join(moduleDir, dir, "kustomization.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("argocd: %w", err)
	}
	var k struct{ Resources []string }
	if err := yaml.Unmarshal(raw, &k); err != nil {
		return nil, fmt.Errorf("argocd: %s: %w", path, err)
	}
	if len(k.Resources) == 0 {
		return nil, fmt.Errorf("argocd: %s lists no resources", path)
	}
	var out []*unstructured.Unstructured
	for _, r := range k.Resources {
		f := filepath.Join(moduleDir, dir, r)
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("argocd: %s lists %s: %w", path, r, err)
		}
		objs, err := ssapply.Decode(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("argocd: %s: %w", f, err)
		}
		if namespace != "" {
			for _, o := range objs {
				setNamespace(o, namespace)
			}
		}
		out = append(out, objs...)
	}
	return out, nil
}

// setNamespace does to o what the install's `namespace:` does (kustomize's namespace transformer):
// namespaced objects get the namespace, and so do the ServiceAccount subjects of bindings that
// name none.
func setNamespace(o *unstructured.Unstructured, namespace string) {
	switch o.GetKind() {
	case "CustomResourceDefinition", "ClusterRole":
		return
	case "RoleBinding", "ClusterRoleBinding":
		subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["namespace"] == nil {
				m["namespace"] = namespace
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
	}
	if o.GetKind() != "ClusterRoleBinding" {
		o.SetNamespace(namespace)
	}
}

// installEnv is the environment Argo CD's install gives container in the manifest at path (a
// StatefulSet or Deployment): literal values, with container paths (an absolute value, such as
// KUBECACHEDIR=/tmp/kubecache) moved under dir; values from ConfigMaps and Secrets read from the hub
// now, as the kubelet does when it starts the pod. A missing optional key is left out; a missing
// required one is an error, as the kubelet refuses to start such a pod.
func installEnv(ctx context.Context, kube kubernetes.Interface, path, container, dir string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("argocd: %w", err)
	}
	var w struct {
		Spec struct {
			Template struct {
				Spec corev1.PodSpec
			}
		}
	}
	if err := yaml.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("argocd: %s: %w", path, err)
	}
	var ctr *corev1.Container
	for i := range w.Spec.Template.Spec.Containers {
		if w.Spec.Template.Spec.Containers[i].Name == container {
			ctr = &w.Spec.Template.Spec.Containers[i]
		}
	}
	if ctr == nil {
		return nil, fmt.Errorf("argocd: %s has no container %s", path, container)
	}
	cms := map[string]*corev1.ConfigMap{}
	secrets := map[string]*corev1.Secret{}
	var env []string
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			v := e.Value
			if filepath.IsAbs(v) {
				v = filepath.Join(dir, "root", v)
				if err := os.MkdirAll(v, 0o700); err != nil {
					return nil, fmt.Errorf("argocd: %w", err)
				}
			}
			env = append(env, e.Name+"="+v)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := cms[ref.Name]
			if !ok {
				got, err := kube.CoreV1().ConfigMaps(Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return nil, fmt.Errorf("argocd: reading ConfigMap %s for %s's %s: %w", ref.Name, container, e.Name, err)
				}
				cm, cms[ref.Name] = got, got
			}
			v, found := "", false
			if cm != nil {
				v, found = cm.Data[ref.Key]
			}
			if !found {
				if ref.Optional != nil && *ref.Optional {
					continue
				}
				return nil, fmt.Errorf("argocd: %s's %s needs key %s of ConfigMap %s/%s, which is missing", container, e.Name, ref.Key, Namespace, ref.Name)
			}
			env = append(env, e.Name+"="+v)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := secrets[ref.Name]
			if !ok {
				got, err := kube.CoreV1().Secrets(Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
				if err != nil && !apierrors.IsNotFound(err) {
					return nil, fmt.Errorf("argocd: reading Secret %s for %s's %s: %w", ref.Name, container, e.Name, err)
				}
				s, secrets[ref.Name] = got, got
			}
			var v []byte
			found := false
			if s != nil {
				v, found = s.Data[ref.Key]
			}
			if !found {
				// The install's only secret reference is REDIS_PASSWORD from argocd-redis, which its
				// redis-secret-init job creates; the harness's redis has no password.
				continue
			}
			env = append(env, e.Name+"="+string(v))
		default:
			return nil, fmt.Errorf("argocd: %s's %s takes its value from %v, which the harness cannot give", container, e.Name, e.ValueFrom)
		}
	}
	return env, nil
}

// pluginConfig is the CMP's configuration as the sidecar reads it.
type pluginConfig struct {
	name string // metadata.name-spec.version, as Applications select it and its socket is named
	yaml []byte // the plugin.yaml mounted into the sidecar
}

// readPlugin reads the plugin.yaml of the ConfigMap in health/argocd/cmp-plugin.yaml.
func readPlugin(root string) (pluginConfig, error) {
	path := filepath.Join(root, CMPPlugin)
	raw, err := os.ReadFile(path)
	if err != nil {
		return pluginConfig{}, fmt.Errorf("argocd: %w", err)
	}
	objs, err := ssapply.Decode(bytes.NewReader(raw))
	if err != nil {
		return pluginConfig{}, fmt.Errorf("argocd: %s: %w", path, err)
	}
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", "plugin.yaml")
		if data == "" {
			return pluginConfig{}, fmt.Errorf("argocd: ConfigMap %s in %s has no data plugin.yaml", o.GetName(), path)
		}
		var p struct {
			Metadata struct{ Name string }
			Spec     struct{ Version string }
		}
		if err := yaml.Unmarshal([]byte(data), &p); err != nil {
			return pluginConfig{}, fmt.Errorf("argocd: plugin.yaml of %s: %w", path, err)
		}
		name := p.Metadata.Name
		if p.Spec.Version != "" {
			name += "-" + p.Spec.Version
		}
		return pluginConfig{name: name, yaml: []byte(data)}, nil
	}
	return pluginConfig{}, fmt.Errorf("argocd: %s holds no ConfigMap with the plugin's plugin.yaml", path)
}
