package main

import (
	"encoding/base64"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/crdschema"
	"github.com/addonops/addonops/internal/krmfn"
	"github.com/addonops/addonops/internal/spechash"
)

// A config's name must come from the spec hash OCM computes from what the API server stores, and
// the server applies its schema's defaults before it stores: an AddOnDeploymentConfig without
// spec.agentInstallNamespace is stored with open-cluster-management-agent-addon. So config-hash
// hashes every config with its kind's defaults applied, from OCM's own CRDs (internal/crdschema)
// or a CustomResourceDefinition in the input, and checks every object with a schema the way the
// server would check it on create: what passes config-hash is what the hub accepts.
//
// Checking is the costly part (the API server's validators, ~0.15 ms per config), so it runs on
// worker goroutines while the scan goes on; the results are reported in input order once the
// scan is done.

// jsonObject reads the object the way kubectl and Argo CD read YAML before sending JSON to the
// API server (sigs.k8s.io/yaml; numbers as int64 or float64 like unstructured objects), so the
// hash is that of what the server receives: comments, key order, quoting and indentation never
// change it, and neither does writing 2024-01-01 with or without quotes.
func jsonObject(node *yaml.RNode) (map[string]any, error) {
	text, err := node.String()
	if err != nil {
		return nil, fmt.Errorf("encoding as YAML: %w", err)
	}
	js, err := sigsyaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("content cannot be read as JSON (Kubernetes objects must be JSON-compatible): %w", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, fmt.Errorf("content cannot be read as a JSON object: %w", err)
	}
	return obj, nil
}

// checks runs schema checks on worker goroutines. Each object is checked by one worker, which
// writes only that object's schemaErrs; wait makes them visible to the caller.
type checks struct {
	work chan check
	wg   sync.WaitGroup
}

type check struct {
	o    *object
	kind *crdschema.Kind
	obj  map[string]any // owned by the check from submit on
}

func startChecks() *checks {
	c := &checks{work: make(chan check, 4)}
	for range max(1, runtime.GOMAXPROCS(0)) {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for ch := range c.work {
				ch.o.schemaErrs = ch.kind.Validate(ch.obj)
			}
		}()
	}
	return c
}

func (c *checks) submit(o *object, kind *crdschema.Kind, obj map[string]any) {
	c.work <- check{o, kind, obj}
}

// wait returns once every submitted check is done; no submit may follow.
func (c *checks) wait() {
	close(c.work)
	c.wg.Wait()
}

// schemaOf returns the schema of the object's kind and version from OCM's CRDs, or an error when
// OCM's CRD does not serve that version; nil when OCM has no such kind.
func schemaOf(apiVersion, kind string) (*crdschema.Kind, error) {
	if err := crdschema.OCM().CheckVersion(apiVersion, kind); err != nil {
		return nil, err
	}
	k, _ := crdschema.OCM().Lookup(apiVersion, kind)
	return k, nil
}

// examine hashes a candidate and, when OCM's CRDs define its kind, queues its schema check as the
// scan reaches it (an apiVersion OCM's CRD does not serve is an error for every object). A candidate of another kind keeps its JSON for settle, which
// runs once the input's CustomResourceDefinitions are known.
func (r *run) examine(o *object, n *yaml.RNode, candidate bool) {
	kind, err := schemaOf(o.ref.APIVersion, o.kind)
	if err != nil {
		o.schemaErrs = field.ErrorList{field.Invalid(field.NewPath("apiVersion"), o.ref.APIVersion, err.Error())}
		return
	}
	if !candidate {
		// Only the configs it names are config-hash's to check: rollout-strategy checks the
		// ClusterManagementAddOns and Placements, addon-template validate every OCM object, and
		// converting every add-on too would cost config-hash a third of its time on a fleet.
		return
	}
	obj, err := jsonObject(n)
	if err != nil {
		o.hashErr = err
		return
	}
	if kind == nil {
		o.pending = obj
		return
	}
	kind.Default(obj)
	o.hashVal, o.hashErr = spechash.Of(obj)
	if o.hashErr != nil {
		return
	}
	// Configs of one content (per-cluster copies of an AddOnDeploymentConfig, say) differ only in
	// their metadata: the content is checked once, the metadata of each.
	key := contentKey{o.ref.APIVersion, o.kind, o.hashVal}
	if first, seen := r.checked[key]; seen {
		o.sameContent = first
		o.schemaErrs = kind.ValidateMetadata(obj)
		return
	}
	r.checked[key] = o
	// Validate leaves obj alone and gives the same answer defaulted or not; the check owns it now.
	r.checks.submit(o, kind, obj)
}

// contentKey identifies what a schema check of everything but the metadata depends on.
type contentKey struct{ apiVersion, kind, hash string }

// isMetadataError tells whether e is about apiVersion, kind or metadata: the part of a check that
// is not shared between objects of one content.
func isMetadataError(e *field.Error) bool {
	f := e.Field
	return f == "apiVersion" || f == "kind" || f == "metadata" || strings.HasPrefix(f, "metadata.")
}

// settle (once learnKinds knows every kind) hashes the candidates whose kind OCM's CRDs do not define: with the defaults of their
// CustomResourceDefinition when the input has one (and then checked against it too), with the
// API server's own defaults for Secrets, and as written otherwise, with one warning per kind that
// the hub may compute another hash.
func (r *run) settle() {
	unknown := map[string][]*object{}
	for _, o := range r.objects {
		obj := o.pending
		if obj == nil {
			continue
		}
		o.pending = nil
		kind, ok := r.inputSchemas.Lookup(o.ref.APIVersion, o.kind)
		switch {
		case ok:
			kind.Default(obj)
			o.schemaErrs = kind.Validate(obj)
		case o.group == "" && o.kind == "Secret":
			defaultSecret(obj)
		case o.group == "" && o.kind == "ConfigMap":
			// The API server defaults nothing in a ConfigMap.
		default:
			// A kind config-hash cannot name (no plural known) is an error of its own, later.
			if _, known := r.kinds.Lookup(o.group, o.kind); known {
				unknown[o.kind+"."+o.group] = append(unknown[o.kind+"."+o.group], o)
			}
		}
		o.hashVal, o.hashErr = spechash.Of(obj)
	}
	kinds := make([]string, 0, len(unknown))
	for gk := range unknown {
		kinds = append(kinds, gk)
	}
	sort.Strings(kinds)
	for _, gk := range kinds {
		objs := unknown[gk]
		r.warningf(objs[0], "", "%s: no schema for kind %s (group %q) in the input, so its %d config(s) are hashed as written: if its CustomResourceDefinition defaults fields they leave out, "+
			"the hub computes another spec hash than their names carry; add the CustomResourceDefinition to the input",
			objs[0].describe(), objs[0].kind, objs[0].group, len(objs))
	}
}

// defaultSecret does to a Secret what the API server does before storing it (Kubernetes' core/v1
// defaulting and conversion): type defaults to Opaque, and stringData is merged into data,
// base64-encoded, winning over data's keys.
func defaultSecret(obj map[string]any) {
	if t, ok := obj["type"]; !ok || t == nil || t == "" {
		obj["type"] = "Opaque"
	}
	sd, ok := obj["stringData"].(map[string]any)
	if !ok {
		return
	}
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	obj["data"] = data
	delete(obj, "stringData")
}

// reportSchemaErrors reports what the schema checks found, in input order.
func (r *run) reportSchemaErrors() {
	for _, o := range r.objects {
		errs := o.schemaErrs
		if first := o.sameContent; first != nil {
			for _, e := range first.schemaErrs {
				if !isMetadataError(e) {
					errs = append(errs, e)
				}
			}
		}
		for _, e := range errs {
			at, msg := krmfn.FieldError(e)
			r.errorf(o, at, "%s: %s (the hub's API server would refuse it)", o.describe(), msg)
		}
	}
}
