package rolloutplan

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// DefaultInterimHold is how long the progress reconciler keeps an interim status (Interim) to
// itself before writing it: long enough for the usual moments of a cluster's change (the work
// agent reporting a new work generation, the health prober catching up, a short health soak) to
// pass unwritten, so a cluster's move to a new version costs two status writes (its desired
// configs; then applied, healthy and done together); short enough that a cluster stuck between
// the two shows why within seconds, in its MCA's status, to people and tools that read it.
const DefaultInterimHold = 15 * time.Second

// Interim reports whether the status next, which the progress reconciler computed for an MCA whose
// written status is written, differs from it only by what the cluster's next transition will
// supersede, so that writing it now would cost a status write at fleet scale for a moment nobody
// acts on:
//
//   - the HealthSoak condition (when a soak started, that it is under way, that it was reset);
//   - the Progressing message, with the same status and reason (the change is under way in both):
//     "waiting for it to be healthy", "must stay healthy for ...", but never a change to or from
//     the message saying that no deployer reports (WaitingForDeployer), which is written at once;
//   - when ownsAvailable (the controller is the add-on's health prober, --deploy-templates), the
//     Available condition, unless it turns True where the written one says False: an add-on shown
//     unhealthy that recovers is written at once, as it is the moment a soak starts and people wait
//     for; health not known yet (Unknown) that turns out True is the usual way of a change.
//
// Anything else (desired or last applied configs, another condition, a Progressing status or
// reason, any change once the change is no longer under way) is settled, and written at once with
// the interim parts. The decisions read the interim parts from memory (the view's held
// conditions), never from the written status, so holding them back changes no verdict: health is
// still never taken from an older generation, and a controller that restarts forgets them and
// computes them again (a health soak starts again: it only ever gets longer).
func Interim(written, next addonv1alpha1.ManagedClusterAddOnStatus, ownsAvailable bool) bool {
	np := meta.FindStatusCondition(next.Conditions, addonstatus.ConditionProgressing)
	wp := meta.FindStatusCondition(written.Conditions, addonstatus.ConditionProgressing)
	if np == nil || wp == nil || np.Status != metav1.ConditionTrue || !addonstatus.IsBusyReason(np.Reason) ||
		wp.Status != np.Status || wp.Reason != np.Reason || !wp.LastTransitionTime.Equal(&np.LastTransitionTime) {
		return false
	}
	if np.Message != wp.Message && (deployerMessage(np.Message) || deployerMessage(wp.Message)) {
		return false
	}
	if ownsAvailable {
		na := meta.FindStatusCondition(next.Conditions, addonstatus.ConditionAvailable)
		wa := meta.FindStatusCondition(written.Conditions, addonstatus.ConditionAvailable)
		if na != nil && na.Status == metav1.ConditionTrue && wa != nil && wa.Status == metav1.ConditionFalse {
			return false
		}
	}
	// What is left once the interim parts are taken out must be the same.
	strip := func(st addonv1alpha1.ManagedClusterAddOnStatus) addonv1alpha1.ManagedClusterAddOnStatus {
		out := st
		out.Conditions = nil
		for _, c := range st.Conditions {
			switch c.Type {
			case addonstatus.ConditionHealthSoak:
				continue
			case addonstatus.ConditionAvailable:
				if ownsAvailable {
					continue
				}
			case addonstatus.ConditionProgressing:
				c.Message = ""
			}
			out.Conditions = append(out.Conditions, c)
		}
		return out
	}
	return equality.Semantic.DeepEqual(sortedConditions(strip(written)), sortedConditions(strip(next)))
}

// deployerMessage tells the Progressing message of an MCA that WaitingForDeployer.
func deployerMessage(m string) bool {
	return strings.HasSuffix(m, "... "+addonstatus.MessageWaitingForDeployer)
}

// sortedConditions orders st's conditions by type: a condition's place in the list means nothing.
func sortedConditions(st addonv1alpha1.ManagedClusterAddOnStatus) addonv1alpha1.ManagedClusterAddOnStatus {
	conds := slices.Clone(st.Conditions)
	slices.SortStableFunc(conds, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	st.Conditions = conds
	return st
}

// Attempt identifies the change an MCA is under way with: its desired configs and when its
// Progressing condition last turned (a new desired config, a retry, an outcome). Held interim
// conditions belong to one attempt: a new one (the rollout pushed) starts from the written
// status, as it resets the health soak there.
func Attempt(mca *addonv1alpha1.ManagedClusterAddOn) string {
	var b strings.Builder
	if p := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionProgressing); p != nil {
		b.WriteString(p.LastTransitionTime.UTC().Format(time.RFC3339Nano))
		b.WriteString(" " + p.Reason)
	}
	for _, r := range mca.Status.ConfigReferences {
		b.WriteString(" " + r.Group + "/" + r.Resource + "/" + r.Namespace + "/" + r.Name)
		if r.DesiredConfig != nil {
			b.WriteString("=" + r.DesiredConfig.Namespace + "/" + r.DesiredConfig.Name + "@" + r.DesiredConfig.SpecHash)
		}
	}
	return b.String()
}
