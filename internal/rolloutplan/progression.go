package rolloutplan

// The install progression a placement reports.

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
)

// progression builds the install progression of p from its results, keeping the old condition's
// transition time when its status does not change (unless p's condition restarts).
func (d *decider) progression(p *placementState) addonv1alpha1.InstallProgression {
	ip := addonv1alpha1.InstallProgression{
		PlacementRef:     addonv1alpha1.PlacementRef{Namespace: p.key.Namespace, Name: p.key.Name},
		ConfigReferences: configSlots(p.desired, p.lkg, p.applied),
	}
	if old := oldProgression(d.in.CMA, p.key); old != nil {
		ip.Conditions = slices.Clone(old.Conditions)
	}
	SetCondition(&ip.Conditions, p.cond, d.in.Now, p.restart)
	// Only the Progressing condition is ours; drop anything else an older writer left.
	ip.Conditions = slices.DeleteFunc(ip.Conditions, func(c metav1.Condition) bool { return c.Type != addonstatus.ConditionProgressing })
	return ip
}

// configSlots lays desired, last known good and last applied configs out as install progression
// config references: per group/resource, the i-th entry holds the i-th config of each list (a new
// version's name desired next to the old one last applied:
// docs/design/lifecycle.md#status-per-placement-install-progressions). Nothing is lost when the
// lists differ in names or group/resources, so the last known good configs, which a canary-gated
// placement moves its clusters to, survive a controller restart.
func configSlots(desired, lkg, applied []Config) []addonv1alpha1.InstallConfigReference {
	type slots struct{ desired, lkg, applied []Config }
	byGR := map[configref.GroupResource]*slots{}
	get := func(gr configref.GroupResource) *slots {
		if byGR[gr] == nil {
			byGR[gr] = &slots{}
		}
		return byGR[gr]
	}
	for _, c := range desired {
		get(c.GroupResource).desired = append(get(c.GroupResource).desired, c)
	}
	for _, c := range lkg {
		get(c.GroupResource).lkg = append(get(c.GroupResource).lkg, c)
	}
	for _, c := range applied {
		get(c.GroupResource).applied = append(get(c.GroupResource).applied, c)
	}
	grs := make([]configref.GroupResource, 0, len(byGR))
	for gr := range byGR {
		grs = append(grs, gr)
	}
	slices.SortFunc(grs, func(a, b configref.GroupResource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	var out []addonv1alpha1.InstallConfigReference
	for _, gr := range grs {
		s := byGR[gr]
		n := max(len(s.desired), len(s.lkg), len(s.applied))
		for i := range n {
			ref := addonv1alpha1.InstallConfigReference{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: gr.Group, Resource: gr.Resource}}
			if i < len(s.desired) {
				ref.DesiredConfig = s.desired[i].SpecHashOf()
			}
			if i < len(s.lkg) {
				ref.LastKnownGoodConfig = s.lkg[i].SpecHashOf()
			}
			if i < len(s.applied) {
				ref.LastAppliedConfig = s.applied[i].SpecHashOf()
			}
			out = append(out, ref)
		}
	}
	return out
}

// ProgressingOf returns the Progressing condition of a progression, or nil.
func ProgressingOf(ip *addonv1alpha1.InstallProgression) *metav1.Condition {
	if ip == nil {
		return nil
	}
	return meta.FindStatusCondition(ip.Conditions, addonstatus.ConditionProgressing)
}
