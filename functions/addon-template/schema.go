package main

import (
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/krmfn"
)

// stored returns an input object as the hub's API server would store it: without orchestrator
// annotations and, for a kind of OCM's CRDs (internal/crdschema), with the CRD's defaults applied.
// Numbers are int64 or float64, as the server decodes them.
func stored(n *yaml.RNode) (map[string]any, *crdschema.Kind, error) {
	j, err := cleanJSON(n)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		return nil, nil, err
	}
	k, ok := crdschema.OCM().Lookup(n.GetApiVersion(), n.GetKind())
	if ok {
		k.Default(m)
	}
	return m, k, nil
}

// checkSchema checks an input object against its OCM CRD schema, as the hub's API server would on
// create, and reports every field error on the object. It returns the object as the server would
// store it (see stored) and whether it passed; nil when it cannot be checked at all (reported). A
// kind the OCM CRDs do not define passes unchecked; an apiVersion its CRD does not serve fails.
func checkSchema(req *krmfn.Request, n *yaml.RNode) (map[string]any, bool) {
	if err := crdschema.OCM().CheckVersion(n.GetApiVersion(), n.GetKind()); err != nil {
		req.Errorf(n, "apiVersion", "%s: %v", krmfn.Describe(n), err)
		return nil, false
	}
	m, k, err := stored(n)
	if err != nil {
		req.Errorf(n, "", "%s: %v", krmfn.Describe(n), err)
		return nil, false
	}
	if k == nil {
		return m, true
	}
	// A ClusterManagementAddOn or ManagedClusterAddOn field of the other API version: said with
	// its migration (docs/v1beta1.md) instead of as an unknown field.
	probs := configref.VersionProblems(n)
	for _, p := range probs {
		req.Errorf(n, p.Path, "%s: %s: %s", krmfn.Describe(n), p.Path, p.Message)
	}
	errs := configref.DropCovered(k.Validate(m), probs)
	req.FieldErrors(n, "", errs)
	return m, len(errs) == 0 && len(probs) == 0
}
