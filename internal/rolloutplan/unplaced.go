package rolloutplan

// MCAs that no placement owns (every MCA under Manual).

import (
	"github.com/addonops/addonops/internal/addonstatus"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"
)

// rolloutUnplaced handles the MCAs no placement owns (d.ownerOf; every MCA under Manual), all at
// once: OCM's "defaults" node, with one rule OCM lacks
// (docs/design/install-strategy.md#switching-to-manual-re-targets-nothing): an MCA that runs
// configs a placement gave it keeps them as long as its own spec is unchanged
// (keepsPlacementConfigs); the others take the defaults and their own configs. MCAs this controller
// created for a cluster that left the placements are skipped: the install controller deletes them.
func (d *decider) rolloutUnplaced(defaults []Config) {
	placements := d.in.CMA.Spec.InstallStrategy.Type == StrategyPlacements
	for ns, mca := range d.mcas {
		if d.ownerOf(ns) != nil || placements && mca.Labels[CreatedByLabel] == CreatedByValue {
			continue
		}
		if d.keepsPlacementConfigs(mca) {
			if !IsConfigured(mca, true) {
				d.updates[ns] = Keep(mca, d.in.Now)
			}
			continue
		}
		target, b := d.mcaTarget(defaults, mca)
		if b != nil {
			d.block(ns, mca, b)
			continue
		}
		st := RolloutStatus(ns, mca, target)
		if st.Status == rollout.ToApply {
			kind := addonstatus.Upgrade
			if NeverApplied(mca) {
				kind = addonstatus.Install
			}
			d.updates[ns] = Push(mca, target, AddonWorks(mca.Name, d.works(ns)), kind, d.health, d.in.Now)
		} else if !IsConfigured(mca, true) {
			d.updates[ns] = Keep(mca, d.in.Now)
		}
	}
}

// keepsPlacementConfigs reports whether an MCA no placement owns keeps the configs it runs: a
// placement gave them to it (they are the desired, last known good or last applied configs of one
// of the add-on's install progressions) and its own spec did not change since
// (ConfiguredGeneration). Configs it got as an unplaced MCA follow the defaults.
func (d *decider) keepsPlacementConfigs(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	desired := Desired(mca)
	if gen, ok := ConfiguredGeneration(mca); !ok || gen != mca.Generation || len(desired) == 0 {
		return false
	}
	for i := range d.in.CMA.Status.InstallProgressions {
		lkg, applied, want := progressionConfigs(&d.in.CMA.Status.InstallProgressions[i])
		for _, v := range [][]Config{want, lkg, applied} {
			if len(v) == 0 {
				continue
			}
			if t, b := d.mcaTarget(v, mca); b == nil && Equal(t, desired) {
				return true
			}
		}
	}
	return false
}

func (d *decider) works(ns string) []*workv1.ManifestWork {
	if d.in.Works == nil {
		return nil
	}
	return d.in.Works(ns)
}
