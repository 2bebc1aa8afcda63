package operations

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations are the day-2 annotations, whose setters the controller names in its events.
var Annotations = []string{PauseAnnotation, PromoteAnnotation, RetryAnnotation, AbortAnnotation, AutoAbortAnnotation, WindowOverrideAnnotation}

// maxSetters bounds the managers SetBy names: whoever may write the CMA may also write its
// managedFields with any number of entries.
const maxSetters = 3

// SetBy says who set annotation key of an object, from its managedFields: "set by <manager>" (the
// field managers whose entry owns metadata.annotations[key], by name, at most three), or "set by
// an unknown manager" when no entry does (an object written without managedFields, or a cache that
// dropped them). A field manager is the name a client gives its writes (`addonops pause` writes as
// addonops-cli, `kubectl annotate` as kubectl-annotate, Argo CD as argocd-controller), not an
// authenticated identity: the hub's audit log says which user made the request.
func SetBy(fields []metav1.ManagedFieldsEntry, key string) string {
	managers := Setters(fields, key)
	switch {
	case len(managers) == 0:
		return "set by an unknown manager"
	case len(managers) > maxSetters:
		return fmt.Sprintf("set by %s and %d more managers", strings.Join(managers[:maxSetters], ", "), len(managers)-maxSetters)
	}
	return "set by " + strings.Join(managers, " and ")
}

// Setters are the field managers whose managedFields entry owns metadata.annotations[key], sorted,
// each once (server-side apply lets several managers own one field; an update takes it over).
func Setters(fields []metav1.ManagedFieldsEntry, key string) []string {
	var out []string
	for _, mf := range fields {
		if owned, _ := ownedAnnotations(mf); slices.Contains(owned, key) {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RequestFields keeps, of an object's managedFields, what SetBy reads of the day-2 annotations:
// the entries that own any of them, each reduced to its manager, operation, subresource, time and
// those annotations. The controller's cache keeps CMAs with these alone: the full managedFields
// (every field of spec and status) are most of a CMA's size and nothing else reads them.
func RequestFields(fields []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, mf := range fields {
		owned, ok := ownedAnnotations(mf)
		if !ok {
			continue
		}
		keys := map[string]struct{}{}
		for _, k := range owned {
			if slices.Contains(Annotations, k) {
				keys["f:"+k] = struct{}{}
			}
		}
		if len(keys) == 0 {
			continue
		}
		raw, err := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:annotations": keys}})
		if err != nil {
			continue // a map of empty structs always marshals
		}
		out = append(out, metav1.ManagedFieldsEntry{Manager: mf.Manager, Operation: mf.Operation, APIVersion: mf.APIVersion,
			Time: mf.Time, FieldsType: mf.FieldsType, Subresource: mf.Subresource, FieldsV1: &metav1.FieldsV1{Raw: raw}})
	}
	return out
}

// ownedAnnotations are the annotation keys an entry's fieldsV1 owns (f:metadata/f:annotations/f:<key>),
// and whether it is a FieldsV1 entry that parses.
func ownedAnnotations(mf metav1.ManagedFieldsEntry) ([]string, bool) {
	if mf.FieldsV1 == nil || mf.FieldsType != "" && mf.FieldsType != "FieldsV1" {
		return nil, false
	}
	var fields struct {
		Metadata struct {
			Annotations map[string]json.RawMessage `json:"f:annotations"`
		} `json:"f:metadata"`
	}
	if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
		return nil, false
	}
	var keys []string
	for k := range fields.Metadata.Annotations {
		// "." is the map itself (its existence); every owned key is "f:<key>".
		if name, ok := strings.CutPrefix(k, "f:"); ok {
			keys = append(keys, name)
		}
	}
	return keys, true
}
