// The MCA status rules: the pure rules for one ManagedClusterAddOn's status: which configs it
// has been told to run (status.configReferences[].desiredConfig), which ones it has applied
// (lastAppliedConfig, derived from its ManifestWorks), its Progressing, Configured and HealthSoak
// conditions, and the rollout status sdk-go's RolloutHandler needs. A cluster is done only once its
// add-on stayed healthy for a health soak after its works reported the desired configs (Progress,
// Gate). The rollout reconciler and the progress tracker both compute an MCA's status with these
// functions, so the two writers never disagree about it.

package rolloutplan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
)

// HealthCheckAnnotation on a ClusterManagementAddOn set to "none" turns the health gate off for
// all its clusters: a cluster is then done once its works are applied (see Healthy).
const HealthCheckAnnotation = "addonops.io/health-check"

// DeployerGrace is how long the deployer's ManifestApplied=False must last, within one attempt, to
// count as the attempt's failure: a deployer that lost a write race says False and then True again
// within moments, one written before the attempt began may not be about it yet, and a render error
// or a rejected work stays.
const DeployerGrace = 15 * time.Second

// Config is a resolved config reference: the object and the spec hash of its current content.
type Config struct {
	configref.Ref
	SpecHash string
}

// SpecHashOf turns a Config into OCM's ConfigSpecHash.
func (c Config) SpecHashOf() *addonv1alpha1.ConfigSpecHash {
	return &addonv1alpha1.ConfigSpecHash{
		ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name},
		SpecHash:       c.SpecHash,
	}
}

// FromSpecHash builds a Config from a group/resource and an OCM ConfigSpecHash.
func FromSpecHash(gr addonv1alpha1.ConfigGroupResource, h *addonv1alpha1.ConfigSpecHash) Config {
	return Config{
		Ref: configref.Ref{
			GroupResource: configref.GroupResource{Group: gr.Group, Resource: gr.Resource},
			Namespace:     h.Namespace, Name: h.Name,
		},
		SpecHash: h.SpecHash,
	}
}

// Equal reports whether two config lists name the same objects at the same hashes in the same
// order (lists are always kept sorted by group/resource, see configref.Merge).
func Equal(a, b []Config) bool { return slices.Equal(a, b) }

// Desired returns the configs the MCA has been told to run.
func Desired(mca *addonv1alpha1.ManagedClusterAddOn) []Config {
	var out []Config
	for _, r := range mca.Status.ConfigReferences {
		if r.DesiredConfig != nil {
			out = append(out, FromSpecHash(r.ConfigGroupResource, r.DesiredConfig))
		}
	}
	return out
}

// DesiredIs reports whether Equal(Desired(mca), target) without building the list: a decision
// asks it of every MCA, and the lists were some 4 MB of the live heap at the peak of a
// 5,000-cluster template rollout (a garbage collection under way counts what is allocated
// meanwhile as live).
func DesiredIs(mca *addonv1alpha1.ManagedClusterAddOn, target []Config) bool {
	return refsAre(mca.Status.ConfigReferences, target, func(r *addonv1alpha1.ConfigReference) *addonv1alpha1.ConfigSpecHash { return r.DesiredConfig })
}

// LastAppliedIs reports whether Equal(LastApplied(mca), target) without building the list.
func LastAppliedIs(mca *addonv1alpha1.ManagedClusterAddOn, target []Config) bool {
	return refsAre(mca.Status.ConfigReferences, target, func(r *addonv1alpha1.ConfigReference) *addonv1alpha1.ConfigSpecHash { return r.LastAppliedConfig })
}

// HasLastApplied reports whether len(LastApplied(mca)) > 0 without building the list.
func HasLastApplied(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	for i := range mca.Status.ConfigReferences {
		if mca.Status.ConfigReferences[i].LastAppliedConfig != nil {
			return true
		}
	}
	return false
}

// refsAre compares the configs pick takes from refs, in order, with target.
func refsAre(refs []addonv1alpha1.ConfigReference, target []Config, pick func(*addonv1alpha1.ConfigReference) *addonv1alpha1.ConfigSpecHash) bool {
	n := 0
	for i := range refs {
		h := pick(&refs[i])
		if h == nil {
			continue
		}
		if n >= len(target) || FromSpecHash(refs[i].ConfigGroupResource, h) != target[n] {
			return false
		}
		n++
	}
	return n == len(target)
}

// LastApplied returns the configs the MCA last applied successfully, in status order.
func LastApplied(mca *addonv1alpha1.ManagedClusterAddOn) []Config {
	var out []Config
	for _, r := range mca.Status.ConfigReferences {
		if r.LastAppliedConfig != nil {
			out = append(out, FromSpecHash(r.ConfigGroupResource, r.LastAppliedConfig))
		}
	}
	return out
}

// WithDesired returns new status configReferences that tell the MCA to run target. The i-th
// reference of each group/resource keeps the lastAppliedConfig of the previous i-th reference of
// that group/resource even when the config's name changed: with content-derived names every new
// version is a new name (docs/design/lifecycle.md#versions-are-config-names), and the MCA then
// shows the new name desired next to the old one last applied. (OCM matches by name and so loses
// lastApplied on a rename.) lastObservedGeneration is kept only for the same object.
func WithDesired(old []addonv1alpha1.ConfigReference, target []Config) []addonv1alpha1.ConfigReference {
	oldByGR := map[configref.GroupResource][]addonv1alpha1.ConfigReference{}
	for _, r := range old {
		gr := configref.GroupResource{Group: r.Group, Resource: r.Resource}
		oldByGR[gr] = append(oldByGR[gr], r)
	}
	seen := map[configref.GroupResource]int{}
	out := make([]addonv1alpha1.ConfigReference, 0, len(target))
	for _, c := range target {
		i := seen[c.GroupResource]
		seen[c.GroupResource]++
		ref := addonv1alpha1.ConfigReference{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: c.Group, Resource: c.Resource},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name},
			DesiredConfig:       c.SpecHashOf(),
		}
		if prev := oldByGR[c.GroupResource]; i < len(prev) {
			if prev[i].LastAppliedConfig != nil {
				ref.LastAppliedConfig = prev[i].LastAppliedConfig.DeepCopy()
			}
			if prev[i].Namespace == c.Namespace && prev[i].Name == c.Name {
				ref.LastObservedGeneration = prev[i].LastObservedGeneration
			}
		}
		out = append(out, ref)
	}
	slices.SortStableFunc(out, func(a, b addonv1alpha1.ConfigReference) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}

// NeverApplied reports whether no config of the MCA was ever applied: the difference between an
// install and an upgrade.
func NeverApplied(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	return neverApplied(mca.Status.ConfigReferences, mca.Status.Conditions)
}

func neverApplied(refs []addonv1alpha1.ConfigReference, conds []metav1.Condition) bool {
	if len(refs) == 0 {
		c := meta.FindStatusCondition(conds, addonstatus.ConditionProgressing)
		return c == nil || c.Reason == addonstatus.ReasonInstalling || c.Reason == addonstatus.ReasonInstallFailed
	}
	for _, r := range refs {
		if r.LastAppliedConfig != nil {
			return false
		}
	}
	return true
}

// kindOf is the kind of change the MCA is going through, from its Progressing reason; without one
// of ours, an MCA that never applied anything installs and any other upgrades.
func kindOf(refs []addonv1alpha1.ConfigReference, conds []metav1.Condition) addonstatus.Kind {
	if c := meta.FindStatusCondition(conds, addonstatus.ConditionProgressing); c != nil {
		if k, ok := addonstatus.KindOfReason(c.Reason); ok {
			return k
		}
	}
	if neverApplied(refs, conds) {
		return addonstatus.Install
	}
	return addonstatus.Upgrade
}

// HealthChecked reports whether the add-on's clusters must be healthy to count as done: always,
// unless the CMA is annotated addonops.io/health-check: none.
func HealthChecked(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	return !strings.EqualFold(strings.TrimSpace(cma.Annotations[HealthCheckAnnotation]), "none")
}

// Healthy reports whether the add-on on mca is healthy, and if not, why. The health is the MCA's
// Available condition, written by the add-on's health prober (OCM's addon-manager, or addonhealth
// under --deploy-templates). An add-on whose health prober type is None has no Available
// condition at all and status.healthCheck.mode Customized (addon-framework sets that mode for the
// prober types None and Work, and the Work prober writes Available, Unknown at least, as soon as it
// looks at the add-on): such an MCA is healthy. checked false (HealthChecked) skips the check.
func Healthy(mca *addonv1alpha1.ManagedClusterAddOn, checked bool) (bool, string) {
	if !checked {
		return true, ""
	}
	c := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionAvailable)
	switch {
	case c == nil && mca.Status.HealthCheck.Mode == addonv1alpha1.HealthCheckModeCustomized:
		return true, ""
	case c == nil:
		return false, "no Available condition reported yet (is the add-on's health prober running?)"
	case c.Status == metav1.ConditionTrue:
		return true, ""
	}
	why := fmt.Sprintf("Available=%s", c.Status)
	if c.Reason != "" || c.Message != "" {
		why += fmt.Sprintf(" (%s: %s)", c.Reason, c.Message)
	}
	return false, why
}

// SetCondition sets cond in conds the way meta.SetStatusCondition does, with a given clock:
// lastTransitionTime changes only when the status flips, unless restart is set, which marks the
// start of a new attempt (a new desired config) so progressDeadline counts from there. It reports
// whether anything changed.
func SetCondition(conds *[]metav1.Condition, cond metav1.Condition, now metav1.Time, restart bool) bool {
	// Cut as the hub cache cuts what it reads back (a long message, naming many clusters or quoting
	// a work's, would otherwise look changed at every decision).
	cond.Message = addonstatus.BoundMessage(cond.Message)
	existing := meta.FindStatusCondition(*conds, cond.Type)
	if existing == nil {
		cond.LastTransitionTime = now
		*conds = append(*conds, cond)
		return true
	}
	changed := false
	if existing.Status != cond.Status || restart && !existing.LastTransitionTime.Equal(&now) {
		existing.Status = cond.Status
		existing.LastTransitionTime = now
		changed = true
	}
	if existing.Reason != cond.Reason {
		existing.Reason = cond.Reason
		changed = true
	}
	if existing.Message != cond.Message {
		existing.Message = cond.Message
		changed = true
	}
	if existing.ObservedGeneration != cond.ObservedGeneration {
		existing.ObservedGeneration = cond.ObservedGeneration
		changed = true
	}
	return changed
}

// setProgressing sets an MCA's Progressing condition like SetCondition, and moves its
// lastTransitionTime also when the change's outcome flips between failed and succeeded: both have
// status False (UpgradeFailed → UpgradeSucceed when a failed cluster recovers), and a time kept
// from the failure would say the cluster succeeded when it failed. The transition time records when
// the change finished (docs/design/lifecycle.md#lasttransitiontime-is-when-the-change-finished);
// minSuccessTime counts from it (RolloutStatus). Any other reason
// change with the same status (OCM's Completed taken over as a success reason) keeps the time, as
// meta.SetStatusCondition does.
func setProgressing(conds *[]metav1.Condition, cond metav1.Condition, now metav1.Time) bool {
	cur := meta.FindStatusCondition(*conds, addonstatus.ConditionProgressing)
	outcomeChanged := cur != nil && (addonstatus.IsFailedReason(cur.Reason) && addonstatus.IsDoneReason(cond.Reason) ||
		addonstatus.IsDoneReason(cur.Reason) && addonstatus.IsFailedReason(cond.Reason))
	return SetCondition(conds, cond, now, outcomeChanged)
}

// Configured returns the Configured condition for an MCA that runs its turn's configs (true) or
// waits for its turn (false).
func Configured(configured bool) metav1.Condition {
	if configured {
		return metav1.Condition{Type: addonstatus.ConditionConfigured, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonConfigured, Message: addonstatus.MessageConfigured}
	}
	return metav1.Condition{Type: addonstatus.ConditionConfigured, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonNotConfigured, Message: addonstatus.MessageNotConfigured}
}

// IsConfigured reports whether mca's Configured condition already is Configured(configured), so
// Keep or Hold would change nothing: a decision over thousands of MCAs skips copying them.
func IsConfigured(mca *addonv1alpha1.ManagedClusterAddOn, configured bool) bool {
	return hasConfigured(mca, Configured(configured))
}

func hasConfigured(mca *addonv1alpha1.ManagedClusterAddOn, want metav1.Condition) bool {
	c := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionConfigured)
	return c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message
}

// setConfigured sets the Configured condition, keeping its observedGeneration (see
// ConfiguredGeneration) unless gen is given.
func setConfigured(st *addonv1alpha1.ManagedClusterAddOnStatus, c metav1.Condition, gen *int64, now metav1.Time) {
	if gen != nil {
		c.ObservedGeneration = *gen
	} else if old := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionConfigured); old != nil {
		c.ObservedGeneration = old.ObservedGeneration
	}
	SetCondition(&st.Conditions, c, now, false)
}

// ConfiguredGeneration is the MCA generation (its spec) its desired configs were last computed
// from: the Configured condition's observedGeneration, written when the MCA is moved to new configs.
// ok is false when it was never recorded.
func ConfiguredGeneration(mca *addonv1alpha1.ManagedClusterAddOn) (int64, bool) {
	c := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionConfigured)
	if c == nil || c.ObservedGeneration == 0 {
		return 0, false
	}
	return c.ObservedGeneration, true
}

// Blocked returns the status of an MCA that cannot be configured at all (a config of a type the
// add-on does not support, or one that cannot be read): Configured=False with reason and message
// naming the config; desired configs unchanged, so its works stay as they are.
func Blocked(mca *addonv1alpha1.ManagedClusterAddOn, reason, message string, now metav1.Time) addonv1alpha1.ManagedClusterAddOnStatus {
	st := *mca.Status.DeepCopy()
	setConfigured(&st, metav1.Condition{Type: addonstatus.ConditionConfigured, Status: metav1.ConditionFalse, Reason: reason, Message: message}, nil, now)
	return st
}

// BlockedWith returns the status of an MCA that cannot be configured but is told to run desired
// all the same (an MCA config of a type the add-on does not support: OCM keeps configuring the
// rest, see rolloutplan's unsupportedTarget): desired configs written (WithDesired),
// Configured=False with reason and message, and the given Progressing condition. changed is false
// when the MCA's status already is that.
func BlockedWith(mca *addonv1alpha1.ManagedClusterAddOn, desired []Config, reason, message string, progressing metav1.Condition, now metav1.Time) (addonv1alpha1.ManagedClusterAddOnStatus, bool) {
	st := *mca.Status.DeepCopy()
	st.ConfigReferences = WithDesired(st.ConfigReferences, desired)
	setConfigured(&st, metav1.Condition{Type: addonstatus.ConditionConfigured, Status: metav1.ConditionFalse, Reason: reason, Message: message}, nil, now)
	SetCondition(&st.Conditions, progressing, now, false)
	return st, !equality.Semantic.DeepEqual(st, mca.Status)
}

// IsBlocked reports whether Blocked(mca, reason, message) would change nothing.
func IsBlocked(mca *addonv1alpha1.ManagedClusterAddOn, reason, message string) bool {
	return hasConfigured(mca, metav1.Condition{Type: addonstatus.ConditionConfigured, Status: metav1.ConditionFalse, Reason: reason, Message: message})
}

// Now is the clock reading conditions carry: whole seconds, as the API server stores them, so a
// condition computed here compares equal to the same condition read back.
func Now(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

// RolloutStatus is the rollout status of an MCA that should run target, in sdk-go's terms
// (OCM addonconfiguration graph.go setRolloutStatus, with this controller's
// reasons):
//   - ToApply: it was not told to run target yet (other desired configs, or not Configured=True
//     and not running them);
//   - Succeeded: it applied its desired configs and was healthy for its health soak (Applied); the
//     soak time (minSuccessTime) counts from when that health soak began (the HealthSoak
//     condition's last transition, once Soaked), or else from the Progressing condition's last
//     transition (when it succeeded: setProgressing moves it from a failure to a success too), so
//     a placement whose minSuccessTime is longer than the health soak holds its next batch until
//     minSuccessTime after the cluster was first seen healthy with its works ready — after it
//     recovered, for a cluster that failed first;
//   - Failed: a failed reason (InstallFailed, UpgradeFailed, RollbackFailed); Progressing: anything
//     else. Both time out progressDeadline after the Progressing condition's last transition, which
//     is reset whenever the MCA gets new desired configs.
//
// A succeeded MCA whose Progressing condition is not one of our success reasons (written by an
// older OCM, or missing) gets a transition time far in the past: OCM passes nil there, which makes
// sdk-go restart the soak time on every evaluation and keeps such a cluster "in rollout" forever.
func RolloutStatus(cluster string, mca *addonv1alpha1.ManagedClusterAddOn, target []Config) rollout.ClusterRolloutStatus {
	st := rollout.ClusterRolloutStatus{ClusterName: cluster, Status: rollout.ToApply}
	if !DesiredIs(mca, target) {
		return st
	}
	applied := addonstatus.Applied(mca)
	// Told to run target but held (Configured=False) and not running it: its turn has not come. One
	// that was held but already runs target (a rollback to the version it kept) is done at once.
	if !meta.IsStatusConditionTrue(mca.Status.Conditions, addonstatus.ConditionConfigured) && !applied {
		return st
	}
	cond := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionProgressing)
	switch {
	case applied:
		st.Status = rollout.Succeeded
		st.LastTransitionTime = &longAgo
		if cond != nil && addonstatus.IsDoneReason(cond.Reason) {
			st.LastTransitionTime = cond.LastTransitionTime.DeepCopy()
			// minSuccessTime counts from the start of the health soak, not from its end: the two
			// overlap, so a batch waits for the longer of them, not for their sum. A Soaked
			// condition is always this success's soak (a new attempt resets it), which began no
			// earlier than the recovery of a cluster that failed first, also where Progressing's
			// transition time still says when it failed (written before setProgressing).
			if hs := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionHealthSoak); hs != nil &&
				hs.Status == metav1.ConditionTrue && hs.Reason == addonstatus.ReasonSoaked {
				st.LastTransitionTime = hs.LastTransitionTime.DeepCopy()
			}
		}
	case cond != nil && addonstatus.IsFailedReason(cond.Reason):
		st.Status = rollout.Failed
		st.LastTransitionTime = cond.LastTransitionTime.DeepCopy()
	case cond != nil && addonstatus.IsBusyReason(cond.Reason):
		st.Status = rollout.Progressing
		st.LastTransitionTime = cond.LastTransitionTime.DeepCopy()
	default:
		st.Status = rollout.Progressing
	}
	return st
}

// longAgo stands for "succeeded before anything this controller remembers".
var longAgo = metav1.NewTime(time.Unix(0, 0).UTC())

// Push returns the status of mca when its turn in the rollout comes: it is told to run target
// (WithDesired), Configured=True with the MCA's generation recorded (ConfiguredGeneration), and
// its Progressing condition restarts with the busy reason of kind (lastTransitionTime now, so
// progressDeadline counts from this moment), and so does its HealthSoak condition (False,
// WorksNotReady: no health seen so far counts for the new configs). Its works are then evaluated
// at once (Progress), so a cluster whose works already run target (a rollback to the version it
// kept) finishes in the same status write when it needs no soak (or starts its soak there), and one
// whose works do not is never declared done before they do.
func Push(mca *addonv1alpha1.ManagedClusterAddOn, target []Config, works []*workv1.ManifestWork, kind addonstatus.Kind, gate Gate, now metav1.Time) addonv1alpha1.ManagedClusterAddOnStatus {
	next := mca.DeepCopy()
	st := &next.Status
	st.ConfigReferences = WithDesired(st.ConfigReferences, target)
	gen := mca.Generation
	setConfigured(st, Configured(true), &gen, now)
	SetCondition(&st.Conditions, busy(kind), now, true)
	restartSoak(&st.Conditions, now)
	out, _ := Progress(next, works, gate, now)
	return out
}

// Hold returns the status of mca while it waits for its turn: desired configs unchanged,
// Configured=False (OCM's ConfigurationsNotConfigured), so a deployer honouring Configured leaves
// its works alone.
func Hold(mca *addonv1alpha1.ManagedClusterAddOn, now metav1.Time) addonv1alpha1.ManagedClusterAddOnStatus {
	st := *mca.Status.DeepCopy()
	setConfigured(&st, Configured(false), nil, now)
	return st
}

// Keep returns the status of mca when it is already running its turn's configs (progressing,
// failed, timed out or succeeded): Configured=True, nothing else changes.
func Keep(mca *addonv1alpha1.ManagedClusterAddOn, now metav1.Time) addonv1alpha1.ManagedClusterAddOnStatus {
	st := *mca.Status.DeepCopy()
	setConfigured(&st, Configured(true), nil, now)
	return st
}
