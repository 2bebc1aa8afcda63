package addonrollout

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
)

// References collects every config the add-ons reference, in spec or status or as a rollback
// target in their version history (a version that once completed on a placement: a revert to it
// must find it), and those referenced by add-ons that are rolling out: a CMA with an install
// progression whose Progressing condition is True (under way or waiting for a canary), or one of
// whose MCAs is under way.
func References(cmas []*addonv1alpha1.ClusterManagementAddOn, mcas []*addonv1alpha1.ManagedClusterAddOn, histories []*history.Record) (referenced, rolling map[configref.Ref]bool) {
	referenced, rolling = map[configref.Ref]bool{}, map[configref.Ref]bool{}
	byAddon := map[string][]configref.Ref{}
	busy := map[string]bool{}
	add := func(addon string, gr addonv1alpha1.ConfigGroupResource, ns, name string) {
		if name == "" {
			return
		}
		r := configref.Ref{GroupResource: configref.GroupResource{Group: gr.Group, Resource: gr.Resource}, Namespace: ns, Name: name}
		referenced[r] = true
		byAddon[addon] = append(byAddon[addon], r)
	}
	addHash := func(addon string, gr addonv1alpha1.ConfigGroupResource, h *addonv1alpha1.ConfigSpecHash) {
		if h != nil {
			add(addon, gr, h.Namespace, h.Name)
		}
	}
	for _, cma := range cmas {
		for _, sc := range cma.Spec.SupportedConfigs {
			if sc.DefaultConfig != nil {
				add(cma.Name, sc.ConfigGroupResource, sc.DefaultConfig.Namespace, sc.DefaultConfig.Name)
			}
		}
		for _, p := range cma.Spec.InstallStrategy.Placements {
			for _, c := range p.Configs {
				add(cma.Name, c.ConfigGroupResource, c.Namespace, c.Name)
			}
		}
		for _, d := range cma.Status.DefaultConfigReferences {
			addHash(cma.Name, d.ConfigGroupResource, d.DesiredConfig)
		}
		for _, ip := range cma.Status.InstallProgressions {
			for _, r := range ip.ConfigReferences {
				addHash(cma.Name, r.ConfigGroupResource, r.DesiredConfig)
				addHash(cma.Name, r.ConfigGroupResource, r.LastAppliedConfig)
				addHash(cma.Name, r.ConfigGroupResource, r.LastKnownGoodConfig)
			}
			if meta.IsStatusConditionTrue(ip.Conditions, addonstatus.ConditionProgressing) {
				busy[cma.Name] = true
			}
		}
	}
	for _, rec := range histories {
		for _, p := range rec.Placements {
			for _, v := range p.Versions {
				if v.Completed == nil {
					continue
				}
				for _, c := range v.Configs {
					add(rec.Addon, addonv1alpha1.ConfigGroupResource{Group: c.Group, Resource: c.Resource}, c.Namespace, c.Name)
				}
			}
		}
	}
	for _, m := range mcas {
		for _, c := range m.Spec.Configs {
			add(m.Name, c.ConfigGroupResource, c.Namespace, c.Name)
		}
		for _, r := range m.Status.ConfigReferences {
			add(m.Name, r.ConfigGroupResource, r.Namespace, r.Name)
			addHash(m.Name, r.ConfigGroupResource, r.DesiredConfig)
			addHash(m.Name, r.ConfigGroupResource, r.LastAppliedConfig)
		}
		if c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionProgressing); c != nil && c.Status == metav1.ConditionTrue {
			busy[m.Name] = true
		}
	}
	for addon := range busy {
		for _, r := range byAddon[addon] {
			rolling[r] = true
		}
	}
	return referenced, rolling
}
