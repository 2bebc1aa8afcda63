package krmfn

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FieldErrors records an error result about obj for each field error, as a Kubernetes API server
// words them ("spec.x: Invalid value: ..."), located at the error's field. prefix starts each
// message (e.g. "generate: "). An error about no field (the server prints "<nil>: ...") gives
// only its detail.
func (r *Reporter) FieldErrors(obj *yaml.RNode, prefix string, errs field.ErrorList) {
	for _, e := range errs {
		at, msg := FieldError(e)
		r.Errorf(obj, at, "%s%s: %s", prefix, Describe(obj), msg)
	}
}

// FieldError splits a field error into the field a result is located at and its message, worded
// as an API server words it; an error about no field gives only its detail.
func FieldError(e *field.Error) (at, msg string) {
	at, msg = e.Field, e.Error()
	if at == "" || at == "<nil>" {
		at, msg = "", e.Detail
		if msg == "" {
			msg = e.ErrorBody()
		}
	}
	return at, msg
}
