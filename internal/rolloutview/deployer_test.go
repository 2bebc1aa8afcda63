package rolloutview

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

func TestDeployerWaitView(t *testing.T) {
	waiting := func(cluster, reason, msg string) *addonv1alpha1.ManagedClusterAddOn {
		return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: cluster},
			Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
				{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: reason, Message: msg}}}}
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello",
		Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: "self"}}}
	cases := []struct {
		name string
		mcas []*addonv1alpha1.ManagedClusterAddOn
		want string // the header line, "" for none
	}{
		{"nobody waits", []*addonv1alpha1.ManagedClusterAddOn{waiting("c1", addonstatus.ReasonInstalling, addonstatus.MessageInstalling)}, ""},
		{"two wait, under any strategy (Manual here)", []*addonv1alpha1.ManagedClusterAddOn{
			waiting("c2", addonstatus.ReasonUpgrading, "upgrading... "+addonstatus.MessageWaitingForDeployer),
			waiting("c1", addonstatus.ReasonInstalling, "installing... "+addonstatus.MessageWaitingForDeployer),
			waiting("c3", addonstatus.ReasonInstalling, addonstatus.MessageInstalling),
		}, "  2 cluster(s) (c1, c2) are " + addonstatus.MessageWaitingForDeployer + "\n"},
		{"another add-on's MCA does not count", []*addonv1alpha1.ManagedClusterAddOn{func() *addonv1alpha1.ManagedClusterAddOn {
			m := waiting("c1", addonstatus.ReasonInstalling, "installing... "+addonstatus.MessageWaitingForDeployer)
			m.Name = "other"
			return m
		}()}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Build(Input{CMA: cma, MCAs: tc.mcas, Now: time.Now()})
			var b strings.Builder
			if err := Render(&b, v, time.Now()); err != nil {
				t.Fatal(err)
			}
			has := strings.Contains(b.String(), "waiting for the add-on's deployer")
			if tc.want == "" && (has || v.DeployerWait != nil) || tc.want != "" && !strings.Contains(b.String(), tc.want) {
				t.Fatalf("view %+v, rendered:\n%s\nwant line %q", v.DeployerWait, b.String(), tc.want)
			}
		})
	}
}
