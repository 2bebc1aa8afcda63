package hubcache

import (
	"testing"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/operations"
)

// A CMA is cached with the managedFields entries that set its day-2 annotations (reduced to
// those), so the rollout's events can name who paused it; an MCA with none.
func TestCachedCMAKeepsWhoSetTheDayTwoAnnotations(t *testing.T) {
	const managedFields = `[
		{"manager":"argocd-controller","operation":"Apply","apiVersion":"addon.open-cluster-management.io/v1alpha1","time":"2026-11-28T12:00:00Z","fieldsType":"FieldsV1",
		 "fieldsV1":{"f:metadata":{"f:annotations":{"f:addon.open-cluster-management.io/lifecycle":{}}},"f:spec":{"f:installStrategy":{"f:type":{}}}}},
		{"manager":"addonops-cli","operation":"Update","apiVersion":"addon.open-cluster-management.io/v1alpha1","time":"2026-11-28T12:01:00Z","fieldsType":"FieldsV1",
		 "fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:addonops.io/pause":{}}}}},
		{"manager":"addonops-controller","operation":"Update","apiVersion":"addon.open-cluster-management.io/v1alpha1","time":"2026-11-28T12:02:00Z","fieldsType":"FieldsV1","subresource":"status",
		 "fieldsV1":{"f:status":{"f:installProgressions":{}}}}]`
	c := newTestCache()
	obj, err := c.decode(kindCMA, nil, nil)(fromJSON(t, kindCMA, `{"metadata":{"name":"hello","resourceVersion":"7",
		"annotations":{"addonops.io/pause":"*"},"managedFields":`+managedFields+`},"spec":{"installStrategy":{"type":"Manual"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cma := obj.(*addonv1alpha1.ClusterManagementAddOn)
	if len(cma.ManagedFields) != 1 || cma.ManagedFields[0].Manager != "addonops-cli" {
		t.Fatalf("the cached CMA keeps managedFields %+v, want addonops-cli's entry alone", cma.ManagedFields)
	}
	if got := operations.SetBy(cma.ManagedFields, operations.PauseAnnotation); got != "set by addonops-cli" {
		t.Errorf("SetBy on the cached CMA: %q", got)
	}

	obj, err = c.decode(kindMCA, nil, nil)(fromJSON(t, kindMCA, `{"metadata":{"name":"hello","namespace":"c1","resourceVersion":"8",
		"managedFields":`+managedFields+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	if mca := obj.(*addonv1alpha1.ManagedClusterAddOn); len(mca.ManagedFields) != 0 {
		t.Errorf("the cached MCA keeps managedFields %+v", mca.ManagedFields)
	}
}
