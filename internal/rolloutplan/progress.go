package rolloutplan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/addonwork"
)

// ConfigSpecHashAnnotation is the ManifestWork annotation that says which config versions a work
// was rendered from (workv1.ManifestConfigSpecHashAnnotationKey).
const ConfigSpecHashAnnotation = workv1.ManifestConfigSpecHashAnnotationKey

// ConfigSpecHashes returns the map an add-on deployer writes, JSON-encoded, into a work's
// config-spec-hash annotation for the MCA's desired configs (addon-framework's agentdeploy writes
// it on every work it builds); nil when the MCA has
// no desired config, and the work then carries no annotation at all.
func ConfigSpecHashes(refs []addonv1alpha1.ConfigReference) map[string]string {
	return addonwork.ConfigSpecHashes(addonwork.ConfigReferencesFromV1alpha1(refs))
}

// workMatches reports whether work was rendered from exactly the MCA's desired configs (OCM
// addonprogressing workConfigsMatchesAddon): no annotation matches only an MCA without configs;
// otherwise the annotation must parse, carry no empty hash, and equal the desired map, and no desired
// hash may be empty (an empty hash means the config could not be read, never "any version").
func workMatches(work *workv1.ManifestWork, refs []addonv1alpha1.ConfigReference) bool {
	want := ConfigSpecHashes(refs)
	raw, ok := work.Annotations[ConfigSpecHashAnnotation]
	if !ok {
		return len(want) == 0
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		return false
	}
	for _, v := range got {
		if v == "" {
			return false
		}
	}
	for _, v := range want {
		if v == "" {
			return false
		}
	}
	return maps.Equal(got, want)
}

// workState is what one work says about the rollout of its MCA's desired configs.
type workState int

const (
	workStale   workState = iota // rendered from other configs: the deployer has not caught up
	workPending                  // current configs, not yet Applied and Available at its generation
	workFailed                   // current configs, Applied or Available False at its generation
	workReady                    // current configs, Applied and Available True at its generation
)

// stateOf classifies a work; detail explains anything but ready.
func stateOf(work *workv1.ManifestWork, refs []addonv1alpha1.ConfigReference) (workState, string) {
	if !workMatches(work, refs) {
		return workStale, fmt.Sprintf("ManifestWork %s was not rendered from the desired configs yet", work.Name)
	}
	gen := work.Generation
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := meta.FindStatusCondition(work.Status.Conditions, t)
		if c != nil && c.ObservedGeneration == gen && c.Status == metav1.ConditionFalse {
			return workFailed, fmt.Sprintf("ManifestWork %s is %s=False at generation %d (%s: %s)", work.Name, t, gen, c.Reason, c.Message)
		}
	}
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := meta.FindStatusCondition(work.Status.Conditions, t)
		if c == nil || c.ObservedGeneration != gen || c.Status != metav1.ConditionTrue {
			return workPending, fmt.Sprintf("ManifestWork %s is not %s at generation %d yet", work.Name, t, gen)
		}
	}
	return workReady, ""
}

// AddonWorks picks, from the works of the MCA's namespace, those that deploy the add-on: labelled
// with its name, not a hosted work of another namespace, not its pre-delete hook (OCM
// addonprogressing).
func AddonWorks(addon string, works []*workv1.ManifestWork) []*workv1.ManifestWork {
	hook := addonwork.PreDeleteWorkName(addon)
	var out []*workv1.ManifestWork
	for _, w := range works {
		if w.Labels[addonv1alpha1.AddonLabelKey] != addon {
			continue
		}
		if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; hosted {
			continue
		}
		if strings.HasPrefix(w.Name, hook) {
			continue
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *workv1.ManifestWork) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Progress returns mca's status with lastAppliedConfig, the Progressing condition and the
// HealthSoak condition recomputed from the add-on's ManifestWorks (see AddonWorks), the deployer's
// ManifestApplied condition and the add-on's health; mca itself is not modified. recheck, when
// positive, is when the verdict may change with nothing else changing (DeployerGrace runs out, a
// health soak ends).
//
// lastAppliedConfig := desiredConfig, with the success reason of the change's kind, once
//   - every work carries the desired config-spec-hash and is Applied and Available at its current
//     generation (as OCM's addonprogressing controller checks them),
//   - the deployer reports ManifestApplied=True (as OCM waits for it; the lifecycle design requires
//     it for a fresh install, where several works may be written one by one:
//     docs/design/lifecycle.md#when-a-clusters-change-is-done), and
//   - the add-on is healthy (Healthy): works that exist are not agents that run; and it has been
//     seen healthy, with the works ready, continuously for the gate's soak (Gate.Soak). Health
//     seen before the works reported the desired configs never counts: OCM's prober may still
//     describe the previous version's agent when the work agent reports the new generation. The
//     soak starts when Progress first sees works ready and health True (the HealthSoak condition's
//     lastTransitionTime, which survives restarts) and starts again whenever a work stops being
//     ready, health is not True, or the add-on's Available condition changed since the soak began.
//     An add-on whose health is not checked (the check is off, or its prober type is None) has no
//     soak.
//
// A failure gives the failed reason of the kind (InstallFailed, UpgradeFailed, RollbackFailed) with
// the cause: a work with the desired configs that reports Applied=False or Available=False at its
// generation (OCM never looks at False, so its maxFailures only ever counts timeouts), or the
// deployer's ManifestApplied=False (a render error, a rejected work) once it has been False for
// DeployerGrace during this attempt. An add-on that stays unhealthy is failed by the rollout
// (FailUnhealthy), which knows the placement's progress deadline; Progress keeps that verdict while
// nothing else changes. A failed change whose works and health recover succeeds with a new
// transition time, although Progressing stays False (setProgressing): minSuccessTime counts from
// the recovery, not from the failure. An MCA on which no deployer reported ManifestApplied at all
// for gate.DeployerWait says so in its Progressing message (WaitingForDeployer: is an add-on
// manager deploying the add-on?), which goes back to the usual one as soon as a deployer reports;
// the change stays busy, and an unhealthy deadline or progressDeadline still applies. Once applied,
// an MCA stays succeeded until it is given new configs, as in OCM, so a flapping work never moves
// a cluster back and forth in a rollout. An MCA that has neither configs nor Configured=True has
// not started (it waits for its first turn) and is left as it is, and so is one held with
// Configured=False, ConfigurationUnsupported (BlockedWith).
func Progress(mca *addonv1alpha1.ManagedClusterAddOn, works []*workv1.ManifestWork, gate Gate, now metav1.Time) (addonv1alpha1.ManagedClusterAddOnStatus, time.Duration) {
	st := *mca.Status.DeepCopy()
	refs := st.ConfigReferences
	configured := meta.IsStatusConditionTrue(st.Conditions, addonstatus.ConditionConfigured)
	if len(refs) == 0 && !configured {
		return st, 0
	}
	if c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionConfigured); c != nil && c.Status == metav1.ConditionFalse && c.Reason == addonstatus.ReasonConfigurationUnsupported {
		// Told to run configs of a type the add-on does not support: its Progressing condition is
		// the rollout's (BlockedWith, OCM's ConfigurationUnsupported), and nothing is deployed.
		return st, 0
	}
	kind := kindOf(refs, st.Conditions)
	cur := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
	if addonstatus.Applied(mca) {
		setProgressing(&st.Conditions, done(kind, cur), now)
		return st, 0
	}
	var attempt time.Time
	if cur != nil {
		attempt = cur.LastTransitionTime.Time
	}

	var stale, failed, pending []string
	for _, w := range works {
		switch state, detail := stateOf(w, refs); state {
		case workStale:
			stale = append(stale, detail)
		case workFailed:
			failed = append(failed, detail)
		case workPending:
			pending = append(pending, detail)
		}
	}
	// A change that failed on the deployer stays failed while the deployer still says False: the
	// failure itself moved Progressing's transition time, which is no new attempt.
	failedBefore := cur != nil && cur.Reason == kind.FailedReason()
	deployFailed, deployDetail, recheck := deployerVerdict(st.Conditions, attempt, now.Time, failedBefore)
	noDeployer, deployerRecheck := WaitingForDeployer(mca, gate.DeployerWait, now)
	var cond metav1.Condition
	ready := false
	switch {
	case deployFailed:
		cond = failure(kind, deployDetail)
	case noDeployer:
		cond = waitingForDeployer(kind)
	case len(works) == 0 || len(stale) > 0:
		cond = busy(kind)
	case len(failed) > 0:
		cond = failure(kind, strings.Join(failed, "; "))
	case len(pending) > 0 || !meta.IsStatusConditionTrue(st.Conditions, addonstatus.ConditionManifestApplied):
		cond = busy(kind)
	default:
		ready = true
		if ok, why := Healthy(mca, gate.Checked); !ok {
			resetSoak(&st.Conditions, addonstatus.ReasonNotHealthy, "the add-on's ManifestWorks report the desired configs but the add-on is not healthy; the health soak starts once it is", now)
			if failedBefore {
				return st, recheck // failed by the rollout for staying unhealthy (FailUnhealthy)
			}
			cond = busy(kind)
			cond.Message = fmt.Sprintf("%s... the add-on's ManifestWorks are applied with the desired configs; waiting for it to be healthy: %s", verb(kind), why)
			break
		}
		// Health counts only from the moment the works were seen ready: before that, the prober
		// may still describe the previous version's agent.
		soak := gate.soakOf(mca)
		start := soakStart(&st.Conditions, mca, attempt, soakingMessage(soak, gate), now)
		if left := soakEnd(start, soak).Sub(now.Time); left > 0 {
			recheck = minRecheck(recheck, left)
			if failedBefore {
				return st, recheck // a failure stands until the soak is over
			}
			cond = busy(kind)
			cond.Message = fmt.Sprintf("%s... %s", verb(kind), soakingMessage(soak, gate))
			break
		}
		soaked(&st.Conditions, soak, gate.Checked)
		for i := range st.ConfigReferences {
			st.ConfigReferences[i].LastAppliedConfig = st.ConfigReferences[i].DesiredConfig.DeepCopy()
		}
		cond = done(kind, nil)
	}
	if !ready {
		resetSoak(&st.Conditions, addonstatus.ReasonWorksNotReady, addonstatus.MessageWorksNotReady, now)
	}
	if addonstatus.IsBusyReason(cond.Reason) {
		// Still on its way without any word from a deployer: look again when the wait for one is
		// over, so the message says so then.
		recheck = minRecheck(recheck, deployerRecheck)
	}
	setProgressing(&st.Conditions, cond, now)
	return st, recheck
}

// minRecheck is the earlier of two recheck times (0: none).
func minRecheck(a, b time.Duration) time.Duration {
	if a <= 0 || b > 0 && b < a {
		return b
	}
	return a
}

// deployerVerdict reads the deployer's ManifestApplied condition for the attempt that started at
// attempt: failed, with the deployer's words, once it has been False for DeployerGrace, counted
// from when it turned False or from the attempt's start, whichever is later. A deployer that lost a
// write race reports False and then True again within moments (OCM's does, on ManifestWork update
// conflicts); a render error or a rejected work stays False. Until then, recheck says when to look
// again.
func deployerVerdict(conds []metav1.Condition, attempt, now time.Time, failedBefore bool) (failed bool, detail string, recheck time.Duration) {
	c := meta.FindStatusCondition(conds, addonstatus.ConditionManifestApplied)
	if c == nil || c.Status != metav1.ConditionFalse {
		return false, "", 0
	}
	detail = fmt.Sprintf("the add-on deployer reports ManifestApplied=False (%s: %s)", c.Reason, c.Message)
	if failedBefore {
		return true, detail, 0
	}
	since := c.LastTransitionTime.Time
	if attempt.After(since) {
		since = attempt
	}
	if waited := now.Sub(since); waited < DeployerGrace {
		return false, "", DeployerGrace - waited
	}
	return true, detail, 0
}

// WorksReady reports whether the add-on's works run exactly the MCA's desired configs, Applied and
// Available at their generations, and the deployer reports ManifestApplied=True: all that is
// missing for success then is health.
func WorksReady(mca *addonv1alpha1.ManagedClusterAddOn, works []*workv1.ManifestWork) bool {
	if len(works) == 0 || !meta.IsStatusConditionTrue(mca.Status.Conditions, addonstatus.ConditionManifestApplied) {
		return false
	}
	for _, w := range works {
		if state, _ := stateOf(w, mca.Status.ConfigReferences); state != workReady {
			return false
		}
	}
	return true
}

// FailUnhealthy fails an MCA whose change is under way, whose works are ready (WorksReady) and
// whose add-on has not been healthy for deadline: since the change began or since Available last
// changed, whichever is later. It returns the new status and true, or, when it is not (yet) to be
// failed, false and when to look again (0: nothing to wait for).
func FailUnhealthy(mca *addonv1alpha1.ManagedClusterAddOn, works []*workv1.ManifestWork, healthChecked bool, deadline time.Duration, now metav1.Time) (addonv1alpha1.ManagedClusterAddOnStatus, bool, time.Duration) {
	cur := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionProgressing)
	if cur == nil || !addonstatus.IsBusyReason(cur.Reason) || !WorksReady(mca, works) {
		return mca.Status, false, 0
	}
	ok, why := Healthy(mca, healthChecked)
	if ok {
		return mca.Status, false, 0
	}
	since := cur.LastTransitionTime.Time
	if av := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionAvailable); av != nil && av.LastTransitionTime.After(since) {
		since = av.LastTransitionTime.Time
	}
	if left := deadline - now.Sub(since); left > 0 {
		return mca.Status, false, left
	}
	kind, _ := addonstatus.KindOfReason(cur.Reason)
	st := *mca.Status.DeepCopy()
	setProgressing(&st.Conditions, failure(kind, fmt.Sprintf("the add-on has not been healthy for %s: %s", deadline, why)), now)
	return st, true, 0
}

func verb(k addonstatus.Kind) string {
	return map[addonstatus.Kind]string{addonstatus.Install: "installing", addonstatus.Upgrade: "upgrading", addonstatus.Rollback: "rolling back"}[k]
}

// busy is the Progressing condition of an MCA on its way to its desired configs. Its message
// does not say which work is pending: it would change with every work event and cost a status write
// each time (the budget is two writes per MCA per rollout step). Failures are detailed.
func busy(k addonstatus.Kind) metav1.Condition {
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionTrue, Reason: k.BusyReason(), Message: k.BusyMessage()}
}

func failure(k addonstatus.Kind, detail string) metav1.Condition {
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.FailedReason(), Message: k.Noun() + " failed: " + detail}
}

// done is the Progressing condition of an applied MCA. An existing success reason is kept: once
// applied, the lastAppliedConfig of an upgrade is no longer empty, so "install" can no longer be
// told from the configs alone.
func done(k addonstatus.Kind, cur *metav1.Condition) metav1.Condition {
	if cur != nil && addonstatus.IsDoneReason(cur.Reason) {
		return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: cur.Reason, Message: cur.Message}
	}
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: k.DoneReason(), Message: k.DoneMessage()}
}
