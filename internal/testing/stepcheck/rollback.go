package stepcheck

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
)

// A change of a placement's configs back to a version that completed on that placement (the
// controller's version history, internal/history) is a rollback: RollingBack, then
// RollbackSucceeded, never waiting for the canary, its clusters paced by the placement's strategy.
// Which placements of a step roll back is the step's plan's to say (`addonops plan`,
// PlannedRollbacks); PlacementPlans reads what the step asks of each placement (strategy, canary,
// config), and the checks judge what it did.

// cmaGVK is the ClusterManagementAddOn's kind, whose install placements PlacementPlans reads.
var cmaGVK = schema.GroupVersionKind{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "ClusterManagementAddOn"}

// PlacementPlan is what a step asks of one install placement, read from its ClusterManagementAddOn.
type PlacementPlan struct {
	Key   string // "<namespace>/<name>"
	Addon string
	// Config is its AddOnDeploymentConfig ("<namespace>/<name>"). Which version history entry
	// its configs make is the plan's to say (`addonops plan`: PlannedRollbacks).
	Config string
	// Strategy is the rollout strategy's type, MaxConcurrency its progressive maxConcurrency.
	Strategy       string
	MaxConcurrency *intstr.IntOrString
	// Canary is the placement that gates this one (addonops.io/canary-placements), if any.
	Canary string
}

// PlacementPlans reads the install placements of every ClusterManagementAddOn in objs, in spec order.
func PlacementPlans(objs []*unstructured.Unstructured) []PlacementPlan {
	var out []PlacementPlan
	for _, o := range objs {
		if o.GroupVersionKind() != cmaGVK {
			continue
		}
		canaries, _ := canary.Parse(o.GetAnnotations())
		placements, _, _ := unstructured.NestedSlice(o.Object, "spec", "installStrategy", "placements")
		for _, raw := range placements {
			p, _ := raw.(map[string]any)
			pp := PlacementPlan{Key: fmt.Sprintf("%v/%v", p["namespace"], p["name"]), Addon: o.GetName()}
			list, _, _ := unstructured.NestedSlice(p, "configs")
			for _, rc := range list {
				if c, _ := rc.(map[string]any); c["resource"] == "addondeploymentconfigs" {
					ns, _ := c["namespace"].(string)
					pp.Config = fmt.Sprintf("%s/%v", ns, c["name"])
				}
			}
			pp.Strategy, _, _ = unstructured.NestedString(p, "rolloutStrategy", "type")
			if mc, found, _ := unstructured.NestedFieldNoCopy(p, "rolloutStrategy", "progressive", "maxConcurrency"); found {
				v := intstr.Parse(fmt.Sprint(mc))
				pp.MaxConcurrency = &v
			}
			k, _ := canary.ParsePlacementKey(pp.Key)
			if c, ok := canaries[k]; ok {
				pp.Canary = c.String()
			}
			out = append(out, pp)
		}
	}
	return out
}

// Limit is the most clusters the placement's strategy moves at once when it decides total
// clusters (sdk-go rounds a percentage up), and 0 when it is not checked (All,
// ProgressivePerGroup, or no maxConcurrency: every cluster of a group or placement at once).
func (p PlacementPlan) Limit(total int) int {
	if p.Strategy != "Progressive" || p.MaxConcurrency == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(p.MaxConcurrency, total, true)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// RollbackCheck is what a step saw of a placement that it rolls back.
type RollbackCheck struct {
	Placement string
	// Version is the AGENT_VERSION (or config) it goes back to, Since where that version comes
	// from (the step that first rolled it out, or the version history entry the plan names).
	Version, Since string
	// Reason is the placement's reason at the end of the step.
	Reason string
	// WaitedForCanary: the placement reported WaitingForCanary during the step.
	WaitedForCanary bool
	// Canary is the placement's canary placement, if any; CanaryDone when it was first seen to
	// report success during the step (since the step's start; -1: not during the step).
	Canary     string
	CanaryDone time.Duration
	// FirstMoved is when its first cluster was told the version (-1: none moved: they all ran it).
	FirstMoved time.Duration
	// Clusters the placement rolls out to; MaxInFlight the most of them told the version without
	// having applied it at one moment (the recorded MCA changes); Limit what its strategy allows
	// (0: not checked).
	Clusters, MaxInFlight, Limit int
}

// Describe says what the rollback did, for the step's last line and the summary.
func (c RollbackCheck) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (back to %s, completed in %s)", c.Placement, c.Reason, c.Version, c.Since)
	switch {
	case c.Canary != "" && !c.WaitedForCanary && c.FirstMoved >= 0 && (c.CanaryDone < 0 || c.FirstMoved < c.CanaryDone):
		fmt.Fprintf(&b, ", not gated by its canary %s: its first cluster moved at %s", c.Canary, Seconds(c.FirstMoved))
		if c.CanaryDone >= 0 {
			fmt.Fprintf(&b, ", before the canary was done (%s)", Seconds(c.CanaryDone))
		}
	case c.Canary != "" && !c.WaitedForCanary:
		fmt.Fprintf(&b, ", never waiting for its canary %s", c.Canary)
	}
	switch {
	case c.FirstMoved < 0:
		fmt.Fprintf(&b, "; all %d clusters already ran it: done at once", c.Clusters)
	case c.Limit > 0:
		fmt.Fprintf(&b, "; at most %d of its %d clusters moving at once (maxConcurrency allows %d)", c.MaxInFlight, c.Clusters, c.Limit)
	default:
		fmt.Fprintf(&b, "; at most %d of its %d clusters moving at once", c.MaxInFlight, c.Clusters)
	}
	return b.String()
}

// Rollbacks decides whether the placements a step rolls back did as a rollback must: end
// RollbackSucceeded, never wait for the canary, and move no more clusters at once than the
// strategy allows. With injected failures only the last holds (a failed cluster fails the
// rollback too).
func Rollbacks(checks []RollbackCheck, injected map[string]bool) (bool, string) {
	for _, c := range checks {
		switch {
		case c.Limit > 0 && c.MaxInFlight > c.Limit:
			return false, fmt.Sprintf("%s moved %d clusters at once, more than its maxConcurrency allows (%d)", c.Placement, c.MaxInFlight, c.Limit)
		case len(injected) > 0:
		case c.Reason != addonstatus.ReasonRollbackSucceeded:
			return false, fmt.Sprintf("%s ended %s, want RollbackSucceeded: %s completed in %s, so going back to it is a rollback",
				c.Placement, c.Reason, c.Version, c.Since)
		case c.WaitedForCanary:
			return false, fmt.Sprintf("%s waited for its canary %s (WaitingForCanary): a rollback never does", c.Placement, c.Canary)
		}
	}
	return true, ""
}
