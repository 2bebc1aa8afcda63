package addonrollout

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
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
	h.Set("c1/a", HeldStatus{Attempt: rolloutplan.Attempt(written), Conditions: []metav1.Condition{unknown, soaking}, Since: t0.Time})

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

// The rollout fails a cluster that stays unhealthy from the held health, the only place it is
// while the progress reconciler holds it: on the written MCA alone (Available=True from the
// previous version) the new version would never fail.
func TestHeldHealthFailsUnhealthy(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	refs := []addonv1alpha1.ConfigReference{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
		DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "b"}, SpecHash: "hb"}}}
	written := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "a"},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{ConfigReferences: refs, Conditions: []metav1.Condition{
			{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonUpgrading, LastTransitionTime: t0},
			{Type: addonstatus.ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: "AddonManifestApplied", LastTransitionTime: t0},
			{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "ProbeAvailable", LastTransitionTime: t0},
		}}}
	hashes, err := json.Marshal(rolloutplan.ConfigSpecHashes(refs))
	if err != nil {
		t.Fatal(err)
	}
	work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "addon-a-deploy-0", Generation: 2,
		Annotations: map[string]string{rolloutplan.ConfigSpecHashAnnotation: string(hashes)}},
		Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{
			{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, ObservedGeneration: 2, LastTransitionTime: t0},
			{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 2, LastTransitionTime: t0},
		}}}
	h := NewHeld()
	h.Set("c1/a", HeldStatus{Attempt: rolloutplan.Attempt(written), Since: t0.Time, Conditions: []metav1.Condition{{Type: addonstatus.ConditionAvailable,
		Status: metav1.ConditionFalse, Reason: "ProbeUnavailable", Message: "Deployment c1/agent has no ready replica", LastTransitionTime: t0}}})
	later := metav1.NewTime(t0.Add(10 * time.Minute))

	st, failed, _ := rolloutplan.FailUnhealthy(h.Apply("c1/a", written), []*workv1.ManifestWork{work}, true, 5*time.Minute, later)
	if !failed {
		t.Fatal("an add-on held unhealthy past the deadline was not failed")
	}
	if c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing); c == nil || c.Reason != addonstatus.ReasonUpgradeFailed {
		t.Fatalf("Progressing %+v, want UpgradeFailed", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionAvailable); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("the failure's write must carry the held health: Available %+v", c)
	}
	if _, failed, _ := rolloutplan.FailUnhealthy(written, []*workv1.ManifestWork{work}, true, 5*time.Minute, later); failed {
		t.Fatal("the written MCA alone says healthy: this test would not tell whether Held is applied")
	}
}
