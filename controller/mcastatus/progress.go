package mcastatus

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonwork"
)

// ConfigSpecHashAnnotation is the ManifestWork annotation that says which config versions a work
// was rendered from (workv1.ManifestConfigSpecHashAnnotationKey).
const ConfigSpecHashAnnotation = workv1.ManifestConfigSpecHashAnnotationKey

// ConfigSpecHashes returns the map an add-on deployer writes, JSON-encoded, into a work's
// config-spec-hash annotation for the MCA's desired configs (reference §5.2); nil when the MCA has
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

// Progress returns mca's status with lastAppliedConfig and the Progressing condition recomputed
// from the add-on's ManifestWorks (see AddonWorks); mca itself is not modified.
//
// lastAppliedConfig := desiredConfig once every work carries the desired config-spec-hash and is
// Applied and Available at its current generation (reference §5.4). A work with the desired configs
// that reports Applied=False or Available=False at its generation makes the MCA failed
// (InstallFailed/UpgradeFailed): OCM never looks at False, so its maxFailures only ever counts
// timeouts. Once applied, an MCA stays succeeded until it is given new configs, as in OCM, so a
// flapping work never moves a cluster back and forth in a rollout. An MCA that has neither configs
// nor Configured=True has not started (it waits for its first turn) and is left as it is.
func Progress(mca *addonv1alpha1.ManagedClusterAddOn, works []*workv1.ManifestWork, now metav1.Time) addonv1alpha1.ManagedClusterAddOnStatus {
	st := *mca.Status.DeepCopy()
	refs := st.ConfigReferences
	configured := meta.IsStatusConditionTrue(st.Conditions, ConditionConfigured)
	if len(refs) == 0 && !configured {
		return st
	}
	install := neverApplied(refs, st.Conditions)
	if Applied(mca) {
		SetCondition(&st.Conditions, succeeded(install, st.Conditions), now, false)
		return st
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
	var cond metav1.Condition
	switch {
	case len(works) == 0 || len(stale) > 0:
		cond = progressing(install)
	case len(failed) > 0:
		cond = metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: ReasonUpgradeFailed,
			Message: "upgrade failed: " + strings.Join(failed, "; ")}
		if install {
			cond.Reason, cond.Message = ReasonInstallFailed, "install failed: "+strings.Join(failed, "; ")
		}
	case len(pending) > 0:
		cond = progressing(install)
	default:
		for i := range st.ConfigReferences {
			st.ConfigReferences[i].LastAppliedConfig = st.ConfigReferences[i].DesiredConfig.DeepCopy()
		}
		cond = succeeded(install, nil)
	}
	SetCondition(&st.Conditions, cond, now, false)
	return st
}

// progressing is the Progressing condition of an MCA on its way to its desired configs. Its message
// does not say which work is pending: it would change with every work event and cost a status write
// each time (the budget is two writes per MCA per rollout step). Failures are detailed.
func progressing(install bool) metav1.Condition {
	if install {
		return metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionTrue, Reason: ReasonInstalling, Message: MessageInstalling}
	}
	return metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionTrue, Reason: ReasonUpgrading, Message: MessageUpgrading}
}

// succeeded is the Progressing condition of an applied MCA. An existing success reason is kept:
// once applied, the lastAppliedConfig of an upgrade is no longer empty, so "install" can no longer
// be told from the configs alone.
func succeeded(install bool, conds []metav1.Condition) metav1.Condition {
	if c := meta.FindStatusCondition(conds, ConditionProgressing); c != nil {
		switch c.Reason {
		case ReasonInstallSucceed, ReasonUpgradeSucceed:
			return metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: c.Reason, Message: c.Message}
		case ReasonInstalling, ReasonInstallFailed:
			install = true
		case ReasonUpgrading, ReasonUpgradeFailed:
			install = false
		}
	}
	if install {
		return metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: ReasonInstallSucceed, Message: MessageInstallSucceed}
	}
	return metav1.Condition{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: ReasonUpgradeSucceed, Message: MessageUpgradeSucceed}
}
