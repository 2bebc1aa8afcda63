package operations

import (
	"fmt"
	"slices"
	"strings"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/canary"
)

// CLIFieldManager names the `addonops` CLI's writes in a ClusterManagementAddOn's managedFields,
// as kubectl's do; the demo writes its pause and resume with it too, exactly as the command does.
const CLIFieldManager = "addonops-cli"

// Pause is the edit of cma's pause annotation that `addonops pause ADDON [--placement k]` makes:
// k nil pauses every placement ("*"), else k, which must be one of the add-on's install
// placements.
func Pause(cma *addonv1alpha1.ClusterManagementAddOn, k *canary.PlacementKey) (Edit, error) {
	if k == nil {
		// A pause annotation that does not parse already pauses everything: replace it.
		all := AllPlacements
		return Edit{Value: &all, Did: `paused every placement ("*")`,
			Noop: `every placement was already paused ("*"); nothing changed`}, nil
	}
	if err := RequireInstallPlacement(cma, *k); err != nil {
		return Edit{}, err
	}
	raw, present := cma.Annotations[PauseAnnotation]
	return PausePlacement(cma.Name, raw, present, *k)
}

// Resume is the edit of cma's pause annotation that `addonops resume ADDON [--placement k]`
// makes: k nil removes the annotation, else k leaves it (see ResumePlacement). k need not be an
// install placement (a placement since removed from the spec can still be resumed), except when
// every placement is paused: "*" then becomes the other install placements.
func Resume(cma *addonv1alpha1.ClusterManagementAddOn, k *canary.PlacementKey) (Edit, error) {
	if k == nil {
		return Edit{Did: "resumed every placement", Noop: "no placement was paused; nothing changed"}, nil
	}
	raw, present := cma.Annotations[PauseAnnotation]
	if present {
		if all, _, err := ParsePause(raw); err == nil && all {
			if err := RequireInstallPlacement(cma, *k); err != nil {
				return Edit{}, err
			}
		}
	}
	return ResumePlacement(cma.Name, raw, present, *k, InstallPlacements(cma))
}

// InstallPlacements returns the add-on's install placements, in the order of its spec.
func InstallPlacements(cma *addonv1alpha1.ClusterManagementAddOn) []canary.PlacementKey {
	var out []canary.PlacementKey
	for _, p := range cma.Spec.InstallStrategy.Placements {
		out = append(out, canary.PlacementKey{Namespace: p.Namespace, Name: p.Name})
	}
	return out
}

// RequireInstallPlacement refuses a placement that is not one of the add-on's install placements.
func RequireInstallPlacement(cma *addonv1alpha1.ClusterManagementAddOn, k canary.PlacementKey) error {
	all := InstallPlacements(cma)
	if slices.Contains(all, k) {
		return nil
	}
	if len(all) == 0 {
		return fmt.Errorf("placement %s is not an install placement of add-on %s: it has none (install strategy %q)", k, cma.Name, cma.Spec.InstallStrategy.Type)
	}
	return fmt.Errorf("placement %s is not an install placement of add-on %s; its install placements are %s", k, cma.Name, JoinKeys(all))
}

// RequireInstallPlacements returns the add-on's install placements, or an error when it has none.
func RequireInstallPlacements(cma *addonv1alpha1.ClusterManagementAddOn) ([]canary.PlacementKey, error) {
	all := InstallPlacements(cma)
	if len(all) == 0 {
		return nil, fmt.Errorf("add-on %s has no install placements (install strategy %q): nothing to do", cma.Name, cma.Spec.InstallStrategy.Type)
	}
	return all, nil
}

// JoinKeys lists placements for people: "default/canary, default/prod".
func JoinKeys(keys []canary.PlacementKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, ", ")
}
