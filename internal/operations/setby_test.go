package operations

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// entry is a managedFields entry as the API server writes it.
func entry(manager string, op metav1.ManagedFieldsOperationType, fieldsV1 string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "addon.open-cluster-management.io/v1alpha1",
		Time: &metav1.Time{Time: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fieldsV1)}}
}

const (
	// What `addonops pause` (a JSON merge patch of one annotation) leaves.
	cliPause = `{"f:metadata":{"f:annotations":{".":{},"f:addonops.io/pause":{}}}}`
	// What Argo CD's server-side apply of the CMA leaves: spec and other annotations.
	gitOpsSpec = `{"f:metadata":{"f:annotations":{"f:addon.open-cluster-management.io/lifecycle":{}}},"f:spec":{"f:installStrategy":{"f:type":{}}}}`
	// The controller's status writes.
	statusOnly = `{"f:status":{"f:installProgressions":{}}}`
)

func TestSetBy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		key    string
		want   string
	}{
		{"the CLI paused", []metav1.ManagedFieldsEntry{
			entry("argocd-controller", metav1.ManagedFieldsOperationApply, gitOpsSpec),
			entry("addonops-cli", metav1.ManagedFieldsOperationUpdate, cliPause),
			{Manager: "addonops-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(statusOnly)}},
		}, PauseAnnotation, "set by addonops-cli"},
		{"Git applies the promote", []metav1.ManagedFieldsEntry{
			entry("argocd-controller", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:annotations":{"f:addonops.io/promote":{}}}}`),
		}, PromoteAnnotation, "set by argocd-controller"},
		{"no entry owns the key", []metav1.ManagedFieldsEntry{
			entry("argocd-controller", metav1.ManagedFieldsOperationApply, gitOpsSpec),
			entry("addonops-cli", metav1.ManagedFieldsOperationUpdate, cliPause),
		}, AbortAnnotation, "set by an unknown manager"},
		{"no managedFields", nil, PauseAnnotation, "set by an unknown manager"},
		{"another key with the same prefix", []metav1.ManagedFieldsEntry{
			entry("x", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:annotations":{"f:addonops.io/pause-note":{}}}}`),
		}, PauseAnnotation, "set by an unknown manager"},
		{"a label, not an annotation", []metav1.ManagedFieldsEntry{
			entry("x", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:labels":{"f:addonops.io/pause":{}}}}`),
		}, PauseAnnotation, "set by an unknown manager"},
		{"two appliers share it, one manager twice", []metav1.ManagedFieldsEntry{
			entry("flux", metav1.ManagedFieldsOperationApply, cliPause),
			entry("argocd-controller", metav1.ManagedFieldsOperationApply, cliPause),
			entry("flux", metav1.ManagedFieldsOperationUpdate, cliPause),
		}, PauseAnnotation, "set by argocd-controller and flux"},
		{"many managers are bounded", []metav1.ManagedFieldsEntry{
			entry("e", metav1.ManagedFieldsOperationApply, cliPause), entry("d", metav1.ManagedFieldsOperationApply, cliPause),
			entry("c", metav1.ManagedFieldsOperationApply, cliPause), entry("b", metav1.ManagedFieldsOperationApply, cliPause),
			entry("a", metav1.ManagedFieldsOperationApply, cliPause),
		}, PauseAnnotation, "set by a, b, c and 2 more managers"},
		{"fieldsV1 that does not parse", []metav1.ManagedFieldsEntry{entry("x", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":`)}, PauseAnnotation, "set by an unknown manager"},
		{"another fields type", []metav1.ManagedFieldsEntry{func() metav1.ManagedFieldsEntry {
			e := entry("x", metav1.ManagedFieldsOperationUpdate, cliPause)
			e.FieldsType = "FieldsV2"
			return e
		}()}, PauseAnnotation, "set by an unknown manager"},
		{"no fieldsV1", []metav1.ManagedFieldsEntry{{Manager: "x", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1"}}, PauseAnnotation, "set by an unknown manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SetBy(tc.fields, tc.key); got != tc.want {
				t.Errorf("SetBy(%s) = %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

// RequestFields keeps only the entries owning a day-2 annotation, with those annotations only, and
// SetBy reads the same from them as from the full managedFields.
func TestRequestFields(t *testing.T) {
	full := []metav1.ManagedFieldsEntry{
		entry("argocd-controller", metav1.ManagedFieldsOperationApply,
			`{"f:metadata":{"f:annotations":{"f:addon.open-cluster-management.io/lifecycle":{},"f:addonops.io/auto-abort":{}}},"f:spec":{"f:installStrategy":{}}}`),
		entry("addonops-cli", metav1.ManagedFieldsOperationUpdate,
			`{"f:metadata":{"f:annotations":{".":{},"f:addonops.io/pause":{},"f:addonops.io/abort":{},"f:note":{}}}}`),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, gitOpsSpec),
		{Manager: "addonops-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(statusOnly)}},
		entry("broken", metav1.ManagedFieldsOperationUpdate, `not json`),
	}
	kept := RequestFields(full)
	var managers []string
	for _, mf := range kept {
		managers = append(managers, mf.Manager)
		if mf.Time == nil || mf.Operation == "" || mf.FieldsType != "FieldsV1" {
			t.Errorf("%s: kept %+v without its time, operation or fields type", mf.Manager, mf)
		}
	}
	if want := []string{"argocd-controller", "addonops-cli"}; !slices.Equal(managers, want) {
		t.Fatalf("RequestFields kept %v, want %v", managers, want)
	}
	for i, want := range []string{
		`{"f:metadata":{"f:annotations":{"f:addonops.io/auto-abort":{}}}}`,
		`{"f:metadata":{"f:annotations":{"f:addonops.io/abort":{},"f:addonops.io/pause":{}}}}`,
	} {
		if got := string(kept[i].FieldsV1.Raw); got != want {
			t.Errorf("%s: fieldsV1 %s, want %s", kept[i].Manager, got, want)
		}
		if !json.Valid(kept[i].FieldsV1.Raw) {
			t.Errorf("%s: fieldsV1 is not JSON", kept[i].Manager)
		}
	}
	for _, key := range Annotations {
		if a, b := SetBy(full, key), SetBy(kept, key); a != b {
			t.Errorf("%s: SetBy reads %q from the full managedFields and %q from what RequestFields kept", key, a, b)
		}
	}
	if got := RequestFields(nil); got != nil {
		t.Errorf("RequestFields(nil) = %v", got)
	}
}
