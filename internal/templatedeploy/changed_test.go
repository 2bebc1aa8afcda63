package templatedeploy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// The deployer looks at an MCA again for what it reads or writes, not for the other reconcilers'
// status.
func TestMCAChanged(t *testing.T) {
	base := func() *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c1", UID: "u1", ResourceVersion: "1", Generation: 1,
				Labels: map[string]string{"l": "1"}, Annotations: map[string]string{"a": "1"}, Finalizers: []string{"f"}},
			Status: addonv1alpha1.ManagedClusterAddOnStatus{
				Conditions: []metav1.Condition{
					{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: metav1.ConditionTrue, Reason: "r"},
					{Type: addonv1alpha1.ManagedClusterAddOnManifestApplied, Status: metav1.ConditionTrue, Reason: "r"},
					{Type: addonv1alpha1.ManagedClusterAddOnConditionProgressing, Status: metav1.ConditionTrue, Reason: "r"},
				},
				ConfigReferences: []addonv1alpha1.ConfigReference{{
					ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"},
					DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "t1"}, SpecHash: "h1"},
				}},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(m *addonv1alpha1.ManagedClusterAddOn)
		want   bool
	}{
		{"a resync", func(m *addonv1alpha1.ManagedClusterAddOn) {}, true},
		{"another status of its own (Progressing)", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Conditions[2].Status = metav1.ConditionFalse
		}, false},
		{"Available added", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue})
		}, false},
		{"the last applied config", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.ConfigReferences[0].LastAppliedConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "t1"}, SpecHash: "h1"}
		}, false},
		{"registrations", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: "s"}}
			m.Status.Namespace = "agent"
		}, false},
		{"Configured", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		{"ManifestApplied changed by someone else", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Conditions[1].Message = "x" }, true},
		{"ManifestApplied removed", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Conditions = append(m.Status.Conditions[:1], m.Status.Conditions[2])
		}, true},
		{"HookManifestComplete", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: ConditionHookManifestComplete, Status: metav1.ConditionFalse})
		}, true},
		{"a desired config's hash", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.ConfigReferences[0].DesiredConfig.SpecHash = "h2" }, true},
		{"a desired config added", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.ConfigReferences = append(m.Status.ConfigReferences, addonv1alpha1.ConfigReference{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
				DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "d"}, SpecHash: "x"}})
		}, true},
		{"generation (spec)", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Generation = 2 }, true},
		{"deletion", func(m *addonv1alpha1.ManagedClusterAddOn) { m.DeletionTimestamp = &metav1.Time{} }, true},
		{"finalizers", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Finalizers = nil }, true},
		{"labels", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Labels = nil }, true},
		{"annotations", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Annotations["b"] = "2" }, true},
		{"recreated", func(m *addonv1alpha1.ManagedClusterAddOn) { m.UID = "u2" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			if tc.name != "a resync" {
				cur.ResourceVersion = "2"
			}
			if got := MCAChanged(old, cur); got != tc.want {
				t.Errorf("MCAChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
