package rolloutview

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
)

// Health is a verdict in Argo CD's vocabulary (the Flux expressions map Healthy to Current,
// Progressing and Suspended to InProgress, and Degraded to Failed).
type Health string

const (
	Healthy     Health = addonstatus.ClassHealthy
	Progressing Health = addonstatus.ClassProgressing
	// Suspended: a person paused the rollout (reason Paused); a resume continues it.
	Suspended Health = addonstatus.ClassSuspended
	Degraded  Health = addonstatus.ClassDegraded
)

// worstFirst orders verdicts as Argo CD aggregates them: one Degraded placement makes the add-on
// Degraded, else one Progressing makes it Progressing, else one Suspended makes it Suspended.
var worstFirst = []Health{Degraded, Progressing, Suspended, Healthy}

// Verdict is a health with the message that explains it.
type Verdict struct {
	Health  Health `json:"health"`
	Message string `json:"message"`
}

// The rules below are the ones health/argocd/resource_customizations/*/*/health.lua and the Flux
// healthCheckExprs in health/flux apply; health/*_test.go checks that the three agree on every
// testdata object, including objects captured from the controller. Change them together.

// successReasons end a rollout well: the design's reasons the controller writes, and OCM's Completed
// (a hub whose own addon-manager wrote the status).
var successReasons = addonstatus.SuccessReasons

// clusterFailureReasons are an MCA's Progressing reasons for a failed rollout on its cluster: ours,
// and OCM's Failed and ConfigurationUnsupported.
var clusterFailureReasons = map[string]bool{
	addonstatus.ReasonInstallFailed:                         true,
	addonstatus.ReasonUpgradeFailed:                         true,
	addonstatus.ReasonRollbackFailed:                        true,
	addonv1alpha1.ProgressingReasonFailed:                   true,
	addonv1alpha1.ProgressingReasonConfigurationUnsupported: true,
}

// unconfigurableReasons are the reasons of an MCA's Configured=False when the controller cannot
// configure it at all: a config of its spec.configs is of a type the add-on does not support, or
// cannot be read. Unlike a cluster waiting for its turn, it needs a person.
var unconfigurableReasons = map[string]bool{
	addonstatus.ReasonConfigurationUnsupported: true,
	addonstatus.ReasonConfigurationNotFound:    true,
	addonstatus.ReasonConfigurationForbidden:   true,
}

// Unconfigurable returns the MCA's Configured=False condition when it says the MCA cannot be
// configured at all (unconfigurableReasons), else nil.
func Unconfigurable(mca *addonv1alpha1.ManagedClusterAddOn) *metav1.Condition {
	c := firstCondition(mca.Status.Conditions, addonstatus.ConditionConfigured)
	if c != nil && c.Status == metav1.ConditionFalse && unconfigurableReasons[c.Reason] {
		return c
	}
	return nil
}

// usable reports whether a config reference names something: OCM ignores empty names and the
// name its API conversion reserves for "no default".
func usable(name string) bool { return name != "" && name != configref.ReservedNoDefault }

// AddonHealth judges a ClusterManagementAddOn's rollout from its install progressions (see the CMA
// health.lua for the rules).
func AddonHealth(cma *addonv1alpha1.ClusterManagementAddOn) Verdict {
	if cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
		return Verdict{Healthy, "install strategy is not Placements: no placement rolls this add-on out"}
	}
	if len(cma.Spec.InstallStrategy.Placements) == 0 {
		return Verdict{Healthy, "no install placements"}
	}
	defaults := DefaultConfigs(cma)
	byHealth := map[Health][]string{}
	for i := range cma.Spec.InstallStrategy.Placements {
		v := PlacementHealth(cma, &cma.Spec.InstallStrategy.Placements[i], defaults)
		byHealth[v.Health] = append(byHealth[v.Health], v.Message)
	}
	for _, h := range worstFirst {
		if msgs := byHealth[h]; len(msgs) > 0 {
			return Verdict{h, strings.Join(msgs, "; ")}
		}
	}
	return Verdict{Healthy, ""} // unreachable: there is at least one placement
}

// DefaultConfigs are the CMA's usable default configs (v1alpha1 supportedConfigs[].defaultConfig).
func DefaultConfigs(cma *addonv1alpha1.ClusterManagementAddOn) []configref.Ref {
	var out []configref.Ref
	for _, s := range cma.Spec.SupportedConfigs {
		if s.DefaultConfig == nil || !usable(s.DefaultConfig.Name) {
			continue
		}
		out = append(out, configref.Ref{
			GroupResource: configref.GroupResource{Group: s.Group, Resource: s.Resource},
			Namespace:     s.DefaultConfig.Namespace, Name: s.DefaultConfig.Name,
		})
	}
	return out
}

// Progression returns the install progression of placement p, or nil.
func Progression(cma *addonv1alpha1.ClusterManagementAddOn, namespace, name string) *addonv1alpha1.InstallProgression {
	for i := range cma.Status.InstallProgressions {
		ip := &cma.Status.InstallProgressions[i]
		if ip.Namespace == namespace && ip.Name == name {
			return ip
		}
	}
	return nil
}

// PlacementHealth judges one install placement of cma.
func PlacementHealth(cma *addonv1alpha1.ClusterManagementAddOn, p *addonv1alpha1.PlacementStrategy, defaults []configref.Ref) Verdict {
	key := p.Namespace + "/" + p.Name
	if why, behind := Behind(cma, p, defaults); behind {
		return Verdict{Progressing, key + ": " + why}
	}
	c := progressingCondition(Progression(cma, p.Namespace, p.Name).Conditions)
	if c == nil {
		return Verdict{Progressing, key + ": waiting for the controller to report this placement's progress"}
	}
	// addonstatus.ClassOf is the one classification (Progressing=True: time will fix it; False:
	// success, paused, or a person must act).
	switch h := Health(addonstatus.ClassOf(c.Status, c.Reason)); {
	case h == Healthy:
		return Verdict{Healthy, key + ": " + c.Message}
	case c.Status == metav1.ConditionFalse && c.Reason == addonstatus.ReasonManual:
		// Kept from the Manual install strategy; the strategy is Placements again and the
		// controller has not taken the placement over yet.
		return Verdict{Progressing, key + ": waiting for the controller to roll this placement out (its progression is from the Manual install strategy)"}
	default:
		return Verdict{h, key + ": " + c.Reason + ": " + c.Message}
	}
}

// Behind reports whether the controller's report on install placement p of cma is not about the
// spec as it stands, and why: it has not reported the placement's progression yet, or the
// progression does not show a config the spec names as desired (UnseenConfig). The progression's
// reason and counts are then about an earlier spec (the last commit's rollout).
func Behind(cma *addonv1alpha1.ClusterManagementAddOn, p *addonv1alpha1.PlacementStrategy, defaults []configref.Ref) (why string, behind bool) {
	ip := Progression(cma, p.Namespace, p.Name)
	if ip == nil {
		return "waiting for the controller to report this placement's rollout", true
	}
	if unseen, ok := UnseenConfig(p, ip, defaults); ok {
		return "waiting for the controller to pick up " + unseen.String(), true
	}
	return "", false
}

// UnseenConfig returns the first config the CMA's spec names for placement p (its own configs,
// then the defaults it does not override) that its progression does not show as desired: the
// controller has not caught up with a change, so the progression's condition is about older
// configs.
func UnseenConfig(p *addonv1alpha1.PlacementStrategy, ip *addonv1alpha1.InstallProgression, defaults []configref.Ref) (configref.Ref, bool) {
	desired := map[configref.Ref]bool{}
	for _, r := range ip.ConfigReferences {
		if r.DesiredConfig != nil {
			desired[configref.Ref{
				GroupResource: configref.GroupResource{Group: r.Group, Resource: r.Resource},
				Namespace:     r.DesiredConfig.Namespace, Name: r.DesiredConfig.Name,
			}] = true
		}
	}
	overridden := map[configref.GroupResource]bool{}
	for _, c := range p.Configs {
		if !usable(c.Name) {
			continue
		}
		ref := configref.Ref{GroupResource: configref.GroupResource{Group: c.Group, Resource: c.Resource}, Namespace: c.Namespace, Name: c.Name}
		overridden[ref.GroupResource] = true
		if !desired[ref] {
			return ref, true
		}
	}
	for _, d := range defaults {
		if !overridden[d.GroupResource] && !desired[d] {
			return d, true
		}
	}
	return configref.Ref{}, false
}

func progressingCondition(conds []metav1.Condition) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == addonstatus.ConditionProgressing {
			return &conds[i]
		}
	}
	return nil
}

func firstCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// ClusterHealth judges one ManagedClusterAddOn (see the MCA health.lua for the rules).
func ClusterHealth(mca *addonv1alpha1.ManagedClusterAddOn) Verdict {
	conds := mca.Status.Conditions
	if len(conds) == 0 {
		return Verdict{Progressing, "waiting for the add-on's status"}
	}
	if c := Unconfigurable(mca); c != nil {
		// Before the spec.configs check: the config that cannot be used never becomes desired.
		return Verdict{Degraded, c.Reason + ": " + c.Message}
	}
	for _, c := range mca.Spec.Configs {
		if c.Name == "" {
			continue
		}
		if !mcaDesires(mca, c) {
			ref := configref.Ref{GroupResource: configref.GroupResource{Group: c.Group, Resource: c.Resource}, Namespace: c.Namespace, Name: c.Name}
			return Verdict{Progressing, "waiting for the controller to pick up " + ref.String()}
		}
	}
	p := firstCondition(conds, addonstatus.ConditionProgressing)
	if p != nil && clusterFailureReasons[p.Reason] {
		return Verdict{Degraded, p.Reason + ": " + p.Message}
	}
	if p != nil && p.Status == metav1.ConditionTrue {
		return Verdict{Progressing, p.Reason + ": " + p.Message}
	}
	if c := firstCondition(conds, addonstatus.ConditionConfigured); c != nil && c.Status == metav1.ConditionFalse {
		return Verdict{Progressing, "waiting for its turn in the rollout: " + c.Message}
	}
	if p == nil {
		return Verdict{Progressing, "waiting for the rollout to reach this cluster"}
	}
	if p.Status != metav1.ConditionFalse || !successReasons.Has(p.Reason) {
		return Verdict{Progressing, p.Reason + ": " + p.Message}
	}
	if d := firstCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionDegraded); d != nil && d.Status == metav1.ConditionTrue {
		return Verdict{Degraded, "Degraded: " + d.Message}
	}
	if a := firstCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionAvailable); a != nil {
		switch a.Status {
		case metav1.ConditionFalse:
			return Verdict{Degraded, "not available: " + a.Message}
		case metav1.ConditionTrue:
		default:
			return Verdict{Progressing, "availability not known yet: " + a.Message}
		}
	}
	return Verdict{Healthy, p.Reason + ": " + p.Message}
}

func mcaDesires(mca *addonv1alpha1.ManagedClusterAddOn, c addonv1alpha1.AddOnConfig) bool {
	for _, r := range mca.Status.ConfigReferences {
		d := r.DesiredConfig
		if r.Group == c.Group && r.Resource == c.Resource && d != nil && d.Name == c.Name && d.Namespace == c.Namespace {
			return true
		}
	}
	return false
}

// WorkHealth judges a ManifestWork by its Applied and Available conditions at its current
// generation (see the ManifestWork health.lua).
func WorkHealth(work *workv1.ManifestWork) Verdict {
	gen := work.Generation
	current := map[string]*metav1.Condition{}
	for i := range work.Status.Conditions {
		c := &work.Status.Conditions[i]
		if (c.Type == workv1.WorkApplied || c.Type == workv1.WorkAvailable) && c.ObservedGeneration == gen && current[c.Type] == nil {
			current[c.Type] = c
		}
	}
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		if c := current[t]; c != nil && c.Status == metav1.ConditionFalse {
			return Verdict{Degraded, fmt.Sprintf("%s=False at generation %d: %s: %s", t, gen, c.Reason, c.Message)}
		}
	}
	a, av := current[workv1.WorkApplied], current[workv1.WorkAvailable]
	if a != nil && a.Status == metav1.ConditionTrue && av != nil && av.Status == metav1.ConditionTrue {
		return Verdict{Healthy, fmt.Sprintf("Applied and Available at generation %d", gen)}
	}
	return Verdict{Progressing, fmt.Sprintf("waiting for the work agent to report Applied and Available at generation %d", gen)}
}
