// Package ssapply server-side applies Kubernetes objects the way GitOps tools do (Argo CD with
// ServerSideApply=true, Flux's kustomize-controller): every object with one field manager, taking
// over fields another manager set (force), the resource found through discovery so that custom
// resources (OCM's CRDs) apply like built-in kinds. `make demo` and the e2e suite apply the
// examples' kustomize output with it, as a user's GitOps tool would.
package ssapply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/addonops/addonops/internal/testing/localhub"
)

// Applier applies objects with one field manager.
type Applier struct {
	fieldManager string
	dyn          dynamic.Interface
	mapper       meta.ResettableRESTMapper
}

// New returns an Applier that writes as fieldManager. Discovery results are cached and refreshed
// when an object's kind is unknown (a CRD installed since the last lookup).
func New(dyn dynamic.Interface, disc discovery.DiscoveryInterface, fieldManager string) (*Applier, error) {
	if fieldManager == "" {
		return nil, errors.New("ssapply: a field manager name is required: server-side apply records who owns each field")
	}
	if dyn == nil || disc == nil {
		return nil, errors.New("ssapply: a dynamic client and a discovery client are required")
	}
	return &Applier{
		fieldManager: fieldManager,
		dyn:          dyn,
		mapper:       restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
	}, nil
}

// Apply server-side applies o and returns the object the server holds afterwards. Applying the
// same object again changes nothing (the server keeps its resourceVersion).
func (a *Applier) Apply(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := o.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("ssapply: %s: apiVersion and kind are required", Name(o))
	}
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("ssapply: %s %s: the API server does not serve %s (is its CRD installed?): %w", gvk.Kind, Name(o), gvk.GroupVersion(), err)
	}
	var res dynamic.ResourceInterface = a.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if o.GetNamespace() == "" {
			return nil, fmt.Errorf("ssapply: %s %s is namespaced but has no metadata.namespace; set it in the manifest", gvk.Kind, o.GetName())
		}
		res = a.dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		return nil, fmt.Errorf("ssapply: %s %s: encoding: %w", gvk.Kind, Name(o), err)
	}
	force := true // a GitOps tool owns what it applies, whoever set the field before
	out, err := res.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: a.fieldManager, Force: &force})
	if err != nil {
		return nil, fmt.Errorf("ssapply: server-side apply of %s %s: %w", gvk.Kind, Name(o), err)
	}
	return out, nil
}

// ApplyAll applies objs in order and returns what the server holds for each. It stops at the
// first error, which names the object; the objects before it stay applied (as with kubectl apply).
func (a *Applier) ApplyAll(ctx context.Context, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		applied, err := a.Apply(ctx, o)
		if err != nil {
			return out, err
		}
		out = append(out, applied)
	}
	return out, nil
}

// Decode reads a stream of YAML (or JSON) documents, such as `kustomize build` prints. Empty
// documents are skipped; a document that is not a Kubernetes object (apiVersion, kind and
// metadata.name) is an error naming its position.
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("ssapply: document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("ssapply: document %d is not a Kubernetes object: apiVersion, kind and metadata.name are required", i)
		}
		out = append(out, u)
	}
}

// DecodeFile reads the objects of a YAML file (Decode), such as an example's committed
// `kustomize build` output. A relative path is taken from the repository's root
// (localhub.RepoRoot), so tests in any package name a file of the repository the same way.
func DecodeFile(path string) ([]*unstructured.Unstructured, error) {
	if !filepath.IsAbs(path) {
		root, err := localhub.RepoRoot("")
		if err != nil {
			return nil, fmt.Errorf("ssapply: finding %s: %w", path, err)
		}
		path = filepath.Join(root, filepath.FromSlash(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ssapply: %w", err)
	}
	defer f.Close()
	objs, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return objs, nil
}

// Name is "namespace/name", or "name" for a cluster-scoped object.
func Name(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
