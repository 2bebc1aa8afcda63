package addonview

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/controller/mcastatus"
	"github.com/addonops/addonops/internal/addonstatus"
)

func TestHeld(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	written := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "a", ResourceVersion: "7"},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
			{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonUpgrading, LastTransitionTime: t0},
			{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "ProbeAvailable", LastTransitionTime: t0},
		}}}
	h := NewHeld()
	if got := h.Apply("c1/a", written); got != written {
		t.Fatal("nothing held: Apply must return the MCA itself")
	}
	unknown := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionUnknown, Reason: "WorkNotApplied", LastTransitionTime: t0}
	soaking := metav1.Condition{Type: addonstatus.ConditionHealthSoak, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonSoaking, LastTransitionTime: t0}
	h.Set("c1/a", HeldStatus{Attempt: mcastatus.Attempt(written), Conditions: []metav1.Condition{unknown, soaking}, Since: t0.Time})

	got := h.Apply("c1/a", written)
	if c := meta.FindStatusCondition(got.Status.Conditions, addonstatus.ConditionAvailable); c == nil || c.Status != metav1.ConditionUnknown {
		t.Fatalf("Available %+v, want the held Unknown", c)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, addonstatus.ConditionHealthSoak); c == nil || c.Reason != addonstatus.ReasonSoaking {
		t.Fatalf("HealthSoak %+v, want the held one", c)
	}
	if got.Status.Conditions[1].Type != addonstatus.ConditionAvailable || len(got.Status.Conditions) != 3 {
		t.Fatalf("conditions %+v: a held condition takes the place of the written one, a new one goes last", got.Status.Conditions)
	}
	if c := meta.FindStatusCondition(written.Status.Conditions, addonstatus.ConditionAvailable); c.Status != metav1.ConditionTrue {
		t.Fatal("Apply changed the cached MCA")
	}
	if got.ResourceVersion != "7" {
		t.Fatal("Apply must keep the written resourceVersion: writes are computed from it")
	}

	// The rollout pushed a new attempt: what was held belongs to the old one.
	pushed := written.DeepCopy()
	pushed.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Minute))
	if got := h.Apply("c1/a", pushed); got != pushed {
		t.Fatal("held conditions of another attempt applied")
	}
	if _, ok := h.Get("c1/a", pushed); ok {
		t.Fatal("Get returned what is held for another attempt")
	}
	h.Forget("c1/a")
	if _, ok := h.Get("c1/a", written); ok {
		t.Fatal("Forget kept it")
	}
}
