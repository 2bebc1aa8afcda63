package crdschema

import (
	"context"
	"fmt"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Kind is the schema of one kind in one served version of its CRD.
type Kind struct {
	gvk        schema.GroupVersionKind
	crdName    string
	namespaced bool
	status     bool // the version has the status subresource: a create drops status
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// GroupVersionKind is the kind and the version its schema is of.
func (k *Kind) GroupVersionKind() schema.GroupVersionKind { return k.gvk }

// Namespaced tells whether objects of the kind live in a namespace.
func (k *Kind) Namespaced() bool { return k.namespaced }

// CRD is the name of the CustomResourceDefinition the schema comes from.
func (k *Kind) CRD() string { return k.crdName }

// Default applies the CRD's defaults to obj in place, as the API server does when it decodes an
// object it creates: null values of non-nullable fields without a default are dropped, then every
// absent field (or null non-nullable one) with a default gets it, down to the leaves. obj is an
// unstructured object as JSON decoding gives it (k8s.io/apimachinery/pkg/util/json: int64 and
// float64 numbers). Unknown fields are left for Validate to report.
func (k *Kind) Default(obj map[string]any) {
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, k.structural)
	structuraldefaulting.Default(obj, k.structural)
}

// placeholderNamespace stands in for the namespace of a namespaced object that has none: at build
// time that is normal (kubectl -n, a kustomization's or Flux's namespace set it later), and the
// server validates the namespace it is given with the request, not the missing field.
const placeholderNamespace = "default"

// Validate returns what the API server would reject in obj on create, leaving obj unchanged.
// Following the server's decoder (customresource_handler.go unstructuredSchemaCoercer) and
// customresource strategy (strategy.go, validator.go) on a copy:
//
//   - apiVersion and kind are the Kind's;
//   - metadata decodes as ObjectMeta; fields neither it nor the schema knows are errors, as with
//     kubectl's strict field validation (the server's default would drop them silently);
//   - embedded resources (x-kubernetes-embedded-resource) get their metadata coerced;
//   - defaults are applied (so calling Default first changes nothing here);
//   - status is dropped when the version has the status subresource: a create ignores it;
//   - metadata as for every custom resource: name a DNS-1123 subdomain, namespace a DNS-1123
//     label (a namespaced object without one gets a placeholder, the namespace then comes with
//     the request), labels, annotations, owner references, finalizers;
//   - the OpenAPI schema (types, patterns, lengths, enums, required...);
//   - the metadata of embedded resources;
//   - x-kubernetes-list-type map and set (unique keys and items);
//   - the x-kubernetes-validations CEL rules, unless an error above already makes the server skip
//     them.
//
// rest.BeforeCreate's last check, the name as a path segment, adds nothing to a DNS-1123
// subdomain and is left out.
//
// Errors read like the server's field errors (field.Error's String).
func (k *Kind) Validate(obj map[string]any) field.ErrorList {
	if errs := k.validateTypeMeta(obj); len(errs) > 0 {
		return errs
	}
	u, _ := deepCopyJSON(obj).(map[string]any)

	// Decoding.
	meta, foundMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		// The server fails the request here, before any validation: so do we.
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), field.OmitValueType{}, fmt.Sprintf("does not decode as ObjectMeta: %v", err))}
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u, k.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, k.structural)
	var errs field.ErrorList
	coerceErr, embeddedUnknown := schemaobjectmeta.CoerceWithOptions(nil, u, k.structural, false,
		schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if coerceErr != nil {
		errs = append(errs, coerceErr)
	}
	unknown = append(unknown, embeddedUnknown...)
	for _, p := range unknown {
		errs = append(errs, field.Forbidden(field.NewPath(p),
			fmt.Sprintf("unknown field: not in the schema of %s %s; the API server drops it, or rejects the object under strict field validation (kubectl's default)",
				k.gvk.Kind, k.gvk.GroupVersion())))
	}
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(u, meta); err != nil {
			return append(errs, field.InternalError(field.NewPath("metadata"), err))
		}
	}
	structuraldefaulting.Default(u, k.structural)

	// rest.BeforeCreate and the strategy's PrepareForCreate.
	cr := &unstructured.Unstructured{Object: u}
	switch {
	case !k.namespaced:
		cr.SetNamespace("") // the server clears it for a cluster-scoped resource
	case cr.GetNamespace() == "":
		cr.SetNamespace(placeholderNamespace)
	}
	if k.status {
		delete(u, "status")
	}

	// The strategy's Validate.
	errs = append(errs, validation.ValidateObjectMetaAccessor(cr, k.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, k.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u, k.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, k.structural, u)...)
	if k.cel != nil {
		if blocking := hasBlockingErr(errs); blocking != nil {
			errs = append(errs, blocking)
		} else {
			celErrs, _ := k.cel.Validate(context.Background(), nil, k.structural, u, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

// ValidateMetadata returns the errors Validate finds in obj's apiVersion, kind and metadata
// alone (every error Validate reports at those paths, and nothing else), at a small part of its
// cost. A caller that validated an object of the same kind and content (everything but apiVersion,
// kind and metadata) can reuse that object's other errors, provided the schema has no rule at its
// root that reads the metadata (OCM's CRDs have none).
func (k *Kind) ValidateMetadata(obj map[string]any) field.ErrorList {
	if errs := k.validateTypeMeta(obj); len(errs) > 0 {
		return errs
	}
	u := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"]}
	if m, ok := obj["metadata"]; ok {
		u["metadata"] = deepCopyJSON(m)
	}
	meta, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), field.OmitValueType{}, fmt.Sprintf("does not decode as ObjectMeta: %v", err))}
	}
	var errs field.ErrorList
	for _, p := range unknown {
		errs = append(errs, field.Forbidden(field.NewPath(p),
			fmt.Sprintf("unknown field: not in the schema of %s %s; the API server drops it, or rejects the object under strict field validation (kubectl's default)",
				k.gvk.Kind, k.gvk.GroupVersion())))
	}
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	switch {
	case !k.namespaced:
		meta.Namespace = ""
	case meta.Namespace == "":
		meta.Namespace = placeholderNamespace
	}
	return append(errs, validation.ValidateObjectMetaAccessor(meta, k.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
}

// validateTypeMeta is the customresource validator's ValidateTypeMeta.
func (k *Kind) validateTypeMeta(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	if kind, _ := obj["kind"].(string); kind != k.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), obj["kind"], "must be "+k.gvk.Kind))
	}
	if av, _ := obj["apiVersion"].(string); av != k.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), obj["apiVersion"], "must be "+k.gvk.GroupVersion().String()))
	}
	return errs
}

// hasBlockingErr is the customresource strategy's: after these errors the server does not run the
// CEL rules (their input could be of the wrong type or too large to evaluate within the budget),
// and says so.
func hasBlockingErr(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// deepCopyJSON copies an unstructured value. Unlike runtime.DeepCopyJSONValue it does not panic on
// Go types JSON decoding does not produce: ints become int64 and float32s float64 (what the
// validators expect), anything else is kept as it is.
func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyJSON(e)
		}
		return out
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case float32:
		return float64(v)
	default:
		return v
	}
}
