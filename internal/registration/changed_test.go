package registration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/rolloutplan"
)

func TestMCAChanged(t *testing.T) {
	base := func() *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c1", UID: "u1", ResourceVersion: "1"},
			Status: addonv1alpha1.ManagedClusterAddOnStatus{
				ConfigReferences: []addonv1alpha1.ConfigReference{{
					ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
					DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "t1"}, SpecHash: "h1"},
				}},
				Conditions: []metav1.Condition{
					{Type: addonv1alpha1.ManagedClusterAddOnRegistrationApplied, Status: metav1.ConditionTrue, Reason: "r"},
					{Type: rolloutplan.ConditionAvailable, Status: metav1.ConditionUnknown, Reason: "r"},
					{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading"},
				},
			},
		}
	}
	cases := []struct {
		name   string
		change func(m *addonv1alpha1.ManagedClusterAddOn)
		want   bool
	}{
		{"resync", func(m *addonv1alpha1.ManagedClusterAddOn) { m.ResourceVersion = "1" }, true},
		{"another owner's condition", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Conditions[2].Reason = "UpgradeSucceed" }, false},
		{"health turns True", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Conditions[1].Status = metav1.ConditionTrue }, false},
		{"last applied config", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.ConfigReferences[0].LastAppliedConfig = m.Status.ConfigReferences[0].DesiredConfig.DeepCopy()
		}, false},
		{"desired config", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.ConfigReferences[0].DesiredConfig.SpecHash = "h2" }, true},
		{"no desired configs", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.ConfigReferences = nil }, true},
		{"registrations", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Registrations = []addonv1alpha1.RegistrationConfig{{SignerName: "s"}}
		}, true},
		{"namespace", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Namespace = "other" }, true},
		{"RegistrationApplied", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		{"health declaration gone", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Conditions = m.Status.Conditions[:1] }, true},
		{"health check mode", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeLease
		}, true},
		{"supportedConfigs", func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.SupportedConfigs = []addonv1alpha1.ConfigGroupResource{{Resource: "x"}}
		}, true},
		{"kube client driver", func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.KubeClientDriver = "token" }, true},
		{"deleted", func(m *addonv1alpha1.ManagedClusterAddOn) { m.DeletionTimestamp = &metav1.Time{} }, true},
		{"recreated", func(m *addonv1alpha1.ManagedClusterAddOn) { m.UID = "u2" }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			cur.ResourceVersion = "2"
			tc.change(cur)
			if got := MCAChanged(old, cur); got != tc.want {
				t.Errorf("MCAChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
