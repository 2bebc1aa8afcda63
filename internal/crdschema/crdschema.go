// Package crdschema checks objects against CustomResourceDefinition schemas the way a Kubernetes
// API server does when it creates a custom resource: it applies the schema's defaults, reports
// fields the schema does not know, and validates the result (OpenAPI schema, list types, object
// metadata, embedded resources, x-kubernetes-validations CEL rules).
//
// It runs k8s.io/apiextensions-apiserver's own code in the order its customresource strategy and
// decoder do, so what passes here is what the server accepts and Default gives what the server
// stores. OCM returns the CRDs of OCM's API that build-time functions meet, embedded from the
// open-cluster-management.io/api module go.mod pins (see crdschema.mk); WithCRD adds CRDs found in
// the input, for custom configuration kinds.
package crdschema

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// crdFiles are the CRD YAMLs of open-cluster-management.io/api, under their paths in that module.
//
//go:embed crds
var crdFiles embed.FS

// crdRoot is the folder of crdFiles that mirrors the api module's root.
const crdRoot = "crds"

// Schemas is a set of kinds with their CRD schemas. It is safe for concurrent use; WithCRD returns
// a new set and leaves the receiver as it was.
type Schemas struct {
	kinds map[schema.GroupKind]*crd
}

// crd is one CustomResourceDefinition: its served versions, each built into a Kind on first use.
type crd struct {
	name       string
	gk         schema.GroupKind
	namespaced bool
	served     []string // in the CRD's order
	versions   map[string]*version
}

// version is one served version of a crd. The structural schema, the OpenAPI validator and the
// compiled CEL rules cost milliseconds to build, so they are built once, on first Lookup.
type version struct {
	def  apiextensionsv1.CustomResourceDefinitionVersion
	once sync.Once
	kind *Kind
	err  error
}

var (
	ocmOnce    sync.Once
	ocmSchemas *Schemas
	ocmErr     error
)

// OCM returns the schemas of the embedded OCM CRDs (addon.open-cluster-management.io
// ClusterManagementAddOn, ManagedClusterAddOn, AddOnDeploymentConfig, AddOnTemplate;
// cluster.open-cluster-management.io Placement, PlacementDecision). It reads them once per process;
// a kind's schema is built on its first Lookup. The embedded files are tested, so failing to read
// them is a programming error and panics.
func OCM() *Schemas {
	ocmOnce.Do(func() { ocmSchemas, ocmErr = loadEmbedded() })
	if ocmErr != nil {
		panic(fmt.Sprintf("crdschema: the embedded OCM CRDs: %v", ocmErr))
	}
	return ocmSchemas
}

func loadEmbedded() (*Schemas, error) {
	s := &Schemas{kinds: map[schema.GroupKind]*crd{}}
	err := fs.WalkDir(crdFiles, crdRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := crdFiles.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		def := &apiextensionsv1.CustomResourceDefinition{}
		// Each file is one CRD, possibly behind a leading "---".
		if err := yaml.Unmarshal(bytes.TrimPrefix(data, []byte("---\n")), def); err != nil {
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		c, err := newCRD(def)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if other, dup := s.kinds[c.gk]; dup {
			return fmt.Errorf("%s defines %s again (also %s)", path, c.gk, other.name)
		}
		s.kinds[c.gk] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// WithCRD returns the set with one more CustomResourceDefinition (apiextensions.k8s.io/v1), as an
// unstructured object found in the input: for configuration kinds of the user's own. A CRD for a
// group and kind the set already has replaces it, as applying it to the hub would. Its schemas are
// built and checked (structural, as the API server requires of a v1 CRD) here rather than on first
// Lookup, so that a broken CRD is reported as such and not at its first object.
func (s *Schemas) WithCRD(obj map[string]any) (*Schemas, error) {
	if av, _ := obj["apiVersion"].(string); av != apiextensionsv1.SchemeGroupVersion.String() {
		return nil, fmt.Errorf("crdschema: a CustomResourceDefinition must be %s, not %q", apiextensionsv1.SchemeGroupVersion, av)
	}
	if k, _ := obj["kind"].(string); k != "CustomResourceDefinition" {
		return nil, fmt.Errorf("crdschema: want kind CustomResourceDefinition, got %q", k)
	}
	def := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, def); err != nil {
		return nil, fmt.Errorf("crdschema: decoding CustomResourceDefinition %v: %w", nameOf(obj), err)
	}
	c, err := newCRD(def)
	if err != nil {
		return nil, fmt.Errorf("crdschema: %w", err)
	}
	for _, v := range c.served {
		if _, err := c.versions[v].build(c); err != nil {
			return nil, fmt.Errorf("crdschema: %w", err)
		}
	}
	out := &Schemas{kinds: maps.Clone(s.kinds)}
	out.kinds[c.gk] = c
	return out, nil
}

func nameOf(obj map[string]any) any {
	meta, _ := obj["metadata"].(map[string]any)
	return meta["name"]
}

func newCRD(def *apiextensionsv1.CustomResourceDefinition) (*crd, error) {
	spec := def.Spec
	if spec.Group == "" || spec.Names.Kind == "" {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no spec.group or spec.names.kind", def.Name)
	}
	c := &crd{
		name:       def.Name,
		gk:         schema.GroupKind{Group: spec.Group, Kind: spec.Names.Kind},
		namespaced: spec.Scope == apiextensionsv1.NamespaceScoped,
		versions:   map[string]*version{},
	}
	for _, v := range spec.Versions {
		if !v.Served {
			continue
		}
		c.served = append(c.served, v.Name)
		c.versions[v.Name] = &version{def: v}
	}
	if len(c.served) == 0 {
		return nil, fmt.Errorf("CustomResourceDefinition %s serves no version", def.Name)
	}
	return c, nil
}

// Lookup returns the schema of kind in apiVersion, false when no CRD of the set defines the kind or
// its CRD does not serve that version (CheckVersion tells which). A schema that does not build
// (only possible for a CRD given to WithCRD, which checks it) panics.
func (s *Schemas) Lookup(apiVersion, kind string) (*Kind, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false
	}
	c := s.kinds[schema.GroupKind{Group: gv.Group, Kind: kind}]
	if c == nil {
		return nil, false
	}
	v := c.versions[gv.Version]
	if v == nil {
		return nil, false
	}
	k, err := v.build(c)
	if err != nil {
		panic(fmt.Sprintf("crdschema: %v", err))
	}
	return k, true
}

// Served lists the versions the CRD of group and kind serves, in the CRD's order; nil when the set
// has no CRD for them.
func (s *Schemas) Served(group, kind string) []string {
	c := s.kinds[schema.GroupKind{Group: group, Kind: kind}]
	if c == nil {
		return nil
	}
	return slices.Clone(c.served)
}

// CheckVersion tells why Lookup finds no schema for a kind the set knows: the version is not
// served. It returns nil when Lookup would find one, and when no CRD of the set defines the kind
// (then it is not this set's business).
func (s *Schemas) CheckVersion(apiVersion, kind string) error {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	c := s.kinds[schema.GroupKind{Group: gv.Group, Kind: kind}]
	if c == nil || c.versions[gv.Version] != nil {
		return nil
	}
	return fmt.Errorf("%s is not served for %s: CRD %s serves %s", apiVersion, kind, c.name,
		gv.Group+"/"+strings.Join(c.served, ", "+gv.Group+"/"))
}

// Kinds lists the group/kinds of the set, sorted.
func (s *Schemas) Kinds() []schema.GroupKind {
	return slices.SortedFunc(maps.Keys(s.kinds), func(a, b schema.GroupKind) int {
		return strings.Compare(a.String(), b.String())
	})
}

// build makes the Kind of one version, once.
func (v *version) build(c *crd) (*Kind, error) {
	v.once.Do(func() { v.kind, v.err = newKind(c, v.def) })
	return v.kind, v.err
}

// newKind prepares what the API server prepares per CRD version (customresource_handler.go
// getOrCreateServingInfoFor): the structural schema with pruned defaults for decoding and
// defaulting, the OpenAPI schema validator, and the compiled CEL rules (customresource.NewStrategy).
func newKind(c *crd, v apiextensionsv1.CustomResourceDefinitionVersion) (*Kind, error) {
	gvk := c.gk.WithVersion(v.Name)
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("CRD %s version %s has no schema", c.name, v.Name)
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("CRD %s version %s: converting the schema: %w", c.name, v.Name, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: the schema is not structural: %w", c.name, v.Name, err)
	}
	if errs := structuralschema.ValidateStructural(nil, s); len(errs) > 0 {
		return nil, fmt.Errorf("CRD %s version %s: the schema is not structural: %w", c.name, v.Name, errs.ToAggregate())
	}
	// As the server: defaults inside the schema may hold fields the schema prunes; those never
	// reach an object.
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("CRD %s version %s: pruning defaults: %w", c.name, v.Name, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: building the schema validator: %w", c.name, v.Name, err)
	}
	return &Kind{
		gvk:        gvk,
		crdName:    c.name,
		namespaced: c.namespaced,
		status:     v.Subresources != nil && v.Subresources.Status != nil,
		structural: s,
		validator:  validator,
		// nil when the schema has no x-kubernetes-validations. Compilation errors (impossible for a
		// CRD the server accepted) come back as validation errors, as on the server.
		cel: cel.NewValidator(s, true, celconfig.PerCallLimit),
	}, nil
}
