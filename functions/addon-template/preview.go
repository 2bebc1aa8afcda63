package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/addonwork"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/spechash"
)

// previewDir is where kpt writes preview objects, inside the package.
const previewDir = "preview"

// preview adds, for every AddOnTemplate of the input and every cluster of the functionConfig,
// what the cluster gets: the rendered agent manifests or the ManifestWorks. They are local
// configuration, never applied. Earlier previews in the input are replaced.
func preview(req *krmfn.Request, s *settings) error {
	var items []*yaml.RNode
	kpt, kustomize := false, false
	for _, it := range req.Items {
		if isPreviewObject(it) {
			continue
		}
		if p, _, _ := kioutil.GetFileAnnotations(it); p != "" {
			kpt = true
		}
		if _, ok := it.GetAnnotations()[kustomizeIDAnnotation]; ok {
			kustomize = true
		}
		items = append(items, it)
	}
	req.Items = items
	tpls, adcs := decodeInputs(req)
	if req.HasErrors() {
		return nil
	}
	if len(s.Templates) > 0 {
		var picked []template
		for _, name := range s.Templates {
			i := slices.IndexFunc(tpls, func(t template) bool { return t.node.GetName() == name })
			if i < 0 {
				return fmt.Errorf("preview: spec.templates names AddOnTemplate %q, which is not in the input", name)
			}
			picked = append(picked, tpls[i])
		}
		tpls = picked
	}
	if len(tpls) == 0 {
		return fmt.Errorf("preview: no AddOnTemplate in the input")
	}
	clusterADCs := make([][]deploymentConfig, len(s.Clusters))
	for i, c := range s.Clusters {
		refs := c.DeploymentConfigs
		if refs == nil {
			refs = s.DeploymentConfigs
		}
		chosen, err := chooseADCs(adcs, refs, c.Name)
		if err != nil {
			return err
		}
		clusterADCs[i] = chosen
	}

	var out []*yaml.RNode
	warned := map[string]bool{}
	for _, t := range tpls {
		r, err := render.Compile(t.obj)
		if err != nil {
			reportRenderError(req, t, "", err)
			continue
		}
		tplHash, err := specHashOf(t.node)
		if err != nil {
			return err
		}
		for ci, c := range s.Clusters {
			cluster := render.Cluster{Name: c.Name, ImageRegistries: c.ImageRegistries}
			for _, a := range clusterADCs[ci] {
				cluster.DeploymentConfigs = append(cluster.DeploymentConfigs, a.obj)
			}
			res, err := r.Render(cluster)
			if err != nil {
				reportRenderError(req, t, "cluster "+c.Name+": ", err)
				continue
			}
			for _, w := range res.Warnings {
				if !warned[w] {
					warned[w] = true
					req.Warningf(t.node, "", "%s: %s", krmfn.Describe(t.node), w)
				}
			}
			objects := res.Objects
			var maps []map[string]any
			if s.Output == OutputManifestWork {
				maps, err = manifestWorks(t, tplHash, c.Name, clusterADCs[ci], objects)
				if err != nil {
					req.Errorf(t.node, "", "%s: cluster %s: %v", krmfn.Describe(t.node), c.Name, err)
					continue
				}
			} else {
				for _, o := range objects {
					maps = append(maps, o.Object)
				}
			}
			for i, m := range maps {
				n, err := yaml.FromMap(m)
				if err != nil {
					return fmt.Errorf("encoding the preview of %s for %s: %w", krmfn.Describe(t.node), c.Name, err)
				}
				// In a fixed order: kpt writes files as they come, and a second run must not change them.
				annotations := [][2]string{
					{localConfigAnnotation, "true"},
					{PreviewClusterAnnotation, c.Name},
					{PreviewTemplateAnnotation, t.node.GetName()},
				}
				if kpt {
					file := fmt.Sprintf("%s/%s/%s.yaml", previewDir, t.node.GetName(), c.Name)
					annotations = append(annotations,
						[2]string{kioutil.PathAnnotation, file}, [2]string{kioutil.LegacyPathAnnotation, file},
						[2]string{kioutil.IndexAnnotation, strconv.Itoa(i)}, [2]string{kioutil.LegacyIndexAnnotation, strconv.Itoa(i)})
				}
				for _, kv := range annotations {
					if err := n.PipeE(yaml.SetAnnotation(kv[0], kv[1])); err != nil {
						return err
					}
				}
				out = append(out, n)
			}
		}
	}
	if req.HasErrors() {
		return nil
	}
	if kustomize {
		if err := checkUniqueForKustomize(req.Items, out); err != nil {
			return err
		}
	}
	req.Items = append(req.Items, out...)
	return nil
}

// kustomizeIDAnnotation is set by kustomize on the items it passes to a transformer.
const kustomizeIDAnnotation = "kustomize.config.k8s.io/id"

// checkUniqueForKustomize fails with advice when the preview would give kustomize the same object
// twice (the same agent manifest for two clusters), which kustomize rejects with a bare
// "generated duplicate resource".
func checkUniqueForKustomize(items, out []*yaml.RNode) error {
	seen := map[string]string{}
	id := func(n *yaml.RNode) string {
		return strings.Join([]string{configref.GroupOf(n.GetApiVersion()), n.GetKind(), n.GetNamespace(), n.GetName()}, "/")
	}
	for _, it := range items {
		seen[id(it)] = "the input"
	}
	for _, n := range out {
		k := id(n)
		from := "cluster " + n.GetAnnotations()[PreviewClusterAnnotation]
		if first, dup := seen[k]; dup {
			return fmt.Errorf("preview: %s would be emitted for %s and for %s, and kustomize cannot hold the same object twice; "+
				"with kustomize preview one cluster per AddOnTemplateFunction, or set spec.output: ManifestWork (one work per cluster namespace)",
				krmfn.Describe(n), first, from)
		}
		seen[k] = from
	}
	return nil
}

// chooseADCs picks the AddOnDeploymentConfigs a cluster renders with.
func chooseADCs(adcs []deploymentConfig, refs []ObjectRef, cluster string) ([]deploymentConfig, error) {
	if refs == nil {
		switch len(adcs) {
		case 0:
			return nil, nil
		case 1:
			return adcs, nil
		}
		var names []string
		for _, a := range adcs {
			names = append(names, a.ref().String())
		}
		return nil, fmt.Errorf("preview: the input has %d AddOnDeploymentConfigs (%s); say which cluster %s renders with in spec.deploymentConfigs or spec.clusters[].deploymentConfigs",
			len(adcs), strings.Join(names, ", "), cluster)
	}
	var out []deploymentConfig
	for _, ref := range refs {
		var match []deploymentConfig
		for _, a := range adcs {
			if a.node.GetName() == ref.Name && (ref.Namespace == "" || a.node.GetNamespace() == ref.Namespace) {
				match = append(match, a)
			}
		}
		switch len(match) {
		case 0:
			return nil, fmt.Errorf("preview: AddOnDeploymentConfig %s (for cluster %s) is not in the input", ref, cluster)
		case 1:
			out = append(out, match[0])
		default:
			return nil, fmt.Errorf("preview: AddOnDeploymentConfig name %q (for cluster %s) is in several namespaces; write namespace/name", ref.Name, cluster)
		}
	}
	return out, nil
}

// specHashOf is OCM's spec hash of an input config as the hub's API server would hold it: without
// orchestrator annotations, with every default of its CRD applied (an ADC's agentInstallNamespace,
// a template's manifestConfigs defaults...).
func specHashOf(n *yaml.RNode) (string, error) {
	m, _, err := stored(n)
	if err != nil {
		return "", err
	}
	return spechash.Of(m)
}

// manifestWorks builds the ManifestWorks the controller would create for one cluster.
func manifestWorks(t template, tplHash, cluster string, adcs []deploymentConfig, objects []*unstructured.Unstructured) ([]map[string]any, error) {
	refs := []addonwork.ConfigReference{}
	for _, a := range adcs {
		h, err := specHashOf(a.node)
		if err != nil {
			return nil, err
		}
		refs = append(refs, addonwork.ConfigReference{
			GroupResource: configref.GroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"},
			Desired:       &addonwork.DesiredConfig{Namespace: a.node.GetNamespace(), Name: a.node.GetName(), SpecHash: h},
		})
	}
	refs = append(refs, addonwork.ConfigReference{
		GroupResource: configref.GroupResource{Group: configref.AddonGroup, Resource: "addontemplates"},
		Desired:       &addonwork.DesiredConfig{Name: t.node.GetName(), SpecHash: tplHash},
	})
	works, err := addonwork.Build(objects, addonwork.Options{
		AddonName:        t.obj.Spec.AddonName,
		ClusterName:      cluster,
		ConfigReferences: refs,
		ManifestConfigs:  t.obj.Spec.AgentSpec.ManifestConfigs,
	})
	if err != nil {
		return nil, err
	}
	all := append([]*workv1.ManifestWork{}, works.Deploy...)
	if works.PreDelete != nil {
		all = append(all, works.PreDelete)
	}
	var out []map[string]any
	for _, w := range all {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
		if err != nil {
			return nil, fmt.Errorf("encoding ManifestWork %s: %w", w.Name, err)
		}
		delete(m, "status")
		if meta, ok := m["metadata"].(map[string]any); ok {
			delete(meta, "creationTimestamp")
		}
		out = append(out, m)
	}
	return out, nil
}
