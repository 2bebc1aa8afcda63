package rolloutplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clustersdk "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/operations"
)

// canaryVerdict judges canary placement canaryKey for gated placement p: it passed configs v when
// every cluster it selects has an MCA that runs v (for each group/resource of v, exactly v's configs
// as desired and applied, healthy: Applied), whichever placement or MCA spec gave them the
// configs (docs/design/lifecycle.md#the-canary-placement-is-a-reference: it need not be an install
// placement). Otherwise waitMsg says what it waits for, and problem is true when the canary cannot
// pass without a person's help: the placement is missing or selects no cluster, a cluster has no
// MCA and no install placement will create one (none of this add-on's install placements selects
// it), a cluster gets its configs only from p itself, which waits for the canary, or the canary is
// an install placement whose own rollout is Degraded (failed, stopped, its clusters cannot be
// configured: addonstatus.ClassOf).
func (d *decider) canaryVerdict(p *placementState, canaryKey PlacementKey, v []Config) (passed bool, waitMsg string, problem bool) {
	clusters, err, scheduling := d.canaryClusters(canaryKey)
	if scheduling {
		return false, err, false
	}
	if err != "" {
		// A canary install placement whose Placement is missing within its grace (placementMissing:
		// a GitOps sync may apply the Placement after the add-on) is no problem yet: time alone may
		// bring it, so the gated placement waits, Progressing, as the canary's own progression does.
		if s := d.byKey[canaryKey]; s != nil && s != p && s.cond.Reason == addonstatus.ReasonPlacementNotFound && s.cond.Status == metav1.ConditionTrue {
			return false, fmt.Sprintf("waiting for canary placement %s, whose Placement is not found yet (see its progression)", canaryKey), false
		}
		return false, err, true
	}
	var missing, own, pending []string
	done := 0
	for _, c := range clusters {
		mca := d.status(c)
		switch {
		case mca != nil && runs(mca, v):
			done++
		case d.ownerOf(c) == p:
			own = append(own, c)
		case mca == nil && d.ownerOf(c) == nil:
			missing = append(missing, c)
		default:
			// Includes a cluster of another install placement whose MCA is not created yet: the
			// install reconciler is about to.
			pending = append(pending, c)
		}
	}
	verified := false
	if s := d.byKey[canaryKey]; s != nil && s != p && s.verify != nil && Equal(s.desired, v) && !s.complete {
		verified = true
		// A verified canary passes once its rollout completed: its last batch's run passed, and
		// no run failed any of its clusters (those still run the version, healthy, until an abort
		// moves them, but their MCAs say they failed: FailVerified).
		if failed := slices.Sorted(maps.Keys(s.verify.failed)); len(failed) > 0 {
			return false, fmt.Sprintf("the verification of canary placement %s failed on %s: no version passes it until that is fixed (a fix or a revert of its configs in Git, or abort)", canaryKey, listed(failed)), true
		}
	}
	if done == len(clusters) {
		if verified {
			return false, fmt.Sprintf("waiting for the verification of canary placement %s (see its progression): every cluster runs %s", canaryKey, describe(v)), false
		}
		return true, "", false
	}
	msg := fmt.Sprintf("waiting for canary placement %s to run %s on every cluster, healthy: %d/%d do", canaryKey, describe(v), done, len(clusters))
	if len(pending) > 0 {
		msg += "; not yet: " + listed(pending)
	}
	if len(missing) > 0 {
		msg += fmt.Sprintf("; no ManagedClusterAddOn %q on %s: install the add-on there (list the canary placement in spec.installStrategy.placements, or create the ManagedClusterAddOn)", d.in.CMA.Name, listed(missing))
	}
	if len(own) > 0 {
		msg += fmt.Sprintf("; %s get their configs from placement %s, which waits for this canary: give them the configs another way (list the canary placement in spec.installStrategy.placements after %s, or set the ManagedClusterAddOn's spec.configs)", listed(own), p.key, p.key)
	}
	degraded := false
	if s := d.byKey[canaryKey]; s != nil && s != p && addonstatus.ClassOf(s.cond.Status, s.cond.Reason) == addonstatus.ClassDegraded {
		degraded = true
		msg += fmt.Sprintf("; canary placement %s is Degraded (%s): no version passes it until that is fixed (a fix or a revert of its configs in Git)", canaryKey, s.cond.Reason)
	}
	return false, msg, len(missing) > 0 || len(own) > 0 || degraded
}

// waitingForCanary is the Progressing condition of a gated placement that waits for its canary:
// WaitingForCanary with Progressing=True while time will bring the canary to the desired configs,
// False when blocked: the canary cannot pass without a person's help (canaryVerdict's problem) or
// the placement's own rollout of its last known good configs stopped on failures. False makes it
// Degraded for `addonops status`, Argo CD and Flux (see addonstatus.ClassOf).
func waitingForCanary(msg string, blocked bool) metav1.Condition {
	status := metav1.ConditionTrue
	if blocked {
		status = metav1.ConditionFalse
	}
	return metav1.Condition{Type: addonstatus.ConditionProgressing, Status: status, Reason: addonstatus.ReasonWaitingForCanary, Message: msg}
}

// canaryClusters lists the clusters a canary placement selects, or says why it cannot. scheduling
// is true when it selects none because OCM's placement controller has not scheduled its Placement
// yet (no PlacementSatisfied condition, written after its PlacementDecisions) within the placement
// grace of its creation: a GitOps sync that applies the add-on and the canary's Placement together
// meets that moment, on which no person must act. A Placement still unscheduled after the grace
// (no placement controller runs) is the problem it would be without one.
func (d *decider) canaryClusters(key PlacementKey) (clusters []string, msg string, scheduling bool) {
	placement := d.in.Placements[key]
	if s := d.byKey[key]; s != nil && s.tracker != nil && s.trackErr == nil {
		clusters = clustersOf(s.tracker)
	} else {
		if placement == nil {
			return nil, fmt.Sprintf("canary placement %s (annotation %s) not found: create it or fix the annotation", key, CanaryAnnotation), false
		}
		tracker := clustersdk.NewPlacementDecisionClustersTracker(placement, d.in.Decisions, nil)
		if err := tracker.Refresh(); err != nil {
			return nil, fmt.Sprintf("cannot read the PlacementDecisions of canary placement %s: %v", key, err), false
		}
		clusters = clustersOf(tracker)
	}
	if len(clusters) > 0 {
		return clusters, "", false
	}
	if placement != nil && meta.FindStatusCondition(placement.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied) == nil {
		if left := placement.CreationTimestamp.Add(d.placementGrace()).Sub(d.in.Now.Time); left > 0 {
			d.noteRecheck(&left)
			return nil, fmt.Sprintf("waiting for OCM's placement controller to schedule canary placement %s", key), true
		}
	}
	return nil, fmt.Sprintf("canary placement %s selects no cluster, so no version can pass it: check its predicates and cluster sets", key), false
}

func clustersOf(t *clustersdk.PlacementDecisionClustersTracker) []string {
	return sets.List(t.ExistingClusterGroupsBesides().GetClusters())
}

// runs reports whether an MCA runs configs v: it applied its desired configs (healthy, see
// Applied) and, for every group/resource of v, they are exactly v's.
func runs(mca *addonv1alpha1.ManagedClusterAddOn, v []Config) bool {
	if !addonstatus.Applied(mca) {
		return false
	}
	byGR := func(cfgs []Config) map[configref.GroupResource][]Config {
		m := map[configref.GroupResource][]Config{}
		for _, c := range cfgs {
			m[c.GroupResource] = append(m[c.GroupResource], c)
		}
		return m
	}
	have := byGR(Desired(mca))
	for gr, want := range byGR(v) {
		if !Equal(have[gr], want) {
			return false
		}
	}
	return true
}

// progressionEvents records the events of one placement's decision: what changed between its old
// and new Progressing condition.
func (d *decider) progressionEvents(p *placementState, old *addonv1alpha1.InstallProgression, ip *addonv1alpha1.InstallProgression) {
	nc, oc := ProgressingOf(ip), ProgressingOf(old)
	if nc == nil {
		return
	}
	same := oc != nil && oc.Reason == nc.Reason
	msg := fmt.Sprintf("placement %s: %s", p.key, nc.Message)
	switch {
	case addonstatus.WaitingReasons.Has(nc.Reason) && nc.Status == metav1.ConditionTrue:
		// Within a grace (Input.PlacementGrace): no person must act yet, and no warning says so.
		return
	case addonstatus.WaitingReasons.Has(nc.Reason) || nc.Reason == addonstatus.ReasonWaitingForCanary && p.problem:
		if !same || oc.Message != nc.Message || oc.Status != nc.Status {
			d.events = append(d.events, Event{Warning: true, Reason: nc.Reason, Message: msg})
		}
		return
	case nc.Reason == addonstatus.ReasonWaitingForCanary:
		if !same {
			d.events = append(d.events, Event{Reason: nc.Reason, Message: msg})
		}
		return
	case nc.Reason == addonstatus.ReasonPaused || nc.Reason == addonstatus.ReasonAborting:
		// One event on entering the state: the message's counts change with every batch.
		if !same {
			if nc.Reason == addonstatus.ReasonPaused {
				// Who paused it, in the event only: the condition is rewritten at every decision.
				msg += fmt.Sprintf("; annotation %s %s", operations.PauseAnnotation, d.setBy(operations.PauseAnnotation))
			}
			d.events = append(d.events, Event{Reason: nc.Reason, Message: msg})
		}
		return
	case nc.Reason == addonstatus.ReasonWaitingForWindow:
		// Once on entering the wait: the message's counts and opening time change.
		if !same {
			d.events = append(d.events, Event{Reason: nc.Reason, Message: msg})
		}
		return
	case nc.Reason == addonstatus.ReasonVerifying || nc.Reason == addonstatus.ReasonVerificationInconclusive:
		// verifyEvents tells of the run and its result.
		return
	case oc != nil && (oc.Reason == addonstatus.ReasonVerifying || oc.Reason == addonstatus.ReasonVerificationInconclusive) && addonstatus.IsBusyReason(nc.Reason):
		// The next batch starts after a verification passed (VerificationPassed, VerificationPromoted).
		return
	case nc.Reason == addonstatus.ReasonAborted:
		if !same {
			d.events = append(d.events, Event{Warning: true, Reason: nc.Reason, Message: msg})
		}
		return
	case oc != nil && oc.Reason == addonstatus.ReasonPaused && nc.Reason != oc.Reason:
		d.events = append(d.events, Event{Reason: "Resumed", Message: fmt.Sprintf("placement %s: resumed: %s", p.key, nc.Message)})
	case oc != nil && oc.Reason == addonstatus.ReasonWaitingForWindow && nc.Reason != oc.Reason:
		d.events = append(d.events, Event{Reason: "WindowOpened", Message: fmt.Sprintf("placement %s: a maintenance window opened (or an override let the version through): %s", p.key, nc.Message)})
	}
	kind, ok := addonstatus.KindOfReason(nc.Reason)
	if !ok {
		return
	}
	started := !Equal(p.desired, p.oldDesir) && addonstatus.IsBusyReason(nc.Reason)
	if same && !started {
		return
	}
	what := map[addonstatus.Kind]string{addonstatus.Install: "Install", addonstatus.Upgrade: "Upgrade", addonstatus.Rollback: "Rollback"}[kind]
	switch {
	case addonstatus.IsBusyReason(nc.Reason):
		d.events = append(d.events, Event{Reason: what + "Started", Message: fmt.Sprintf("placement %s: %s to %s started", p.key, kind.Noun(), describe(p.target))})
	case addonstatus.IsFailedReason(nc.Reason):
		reason := what + "Failed"
		if gated := d.gatedBy[p.key]; len(gated) > 0 {
			reason = "CanaryFailed"
			msg += fmt.Sprintf("; placements gated by this canary (%s) keep their last known good configs", joinKeys(gated))
		}
		d.events = append(d.events, Event{Warning: true, Reason: reason, Message: msg})
	case addonstatus.IsDoneReason(nc.Reason):
		d.events = append(d.events, Event{Reason: what + "Succeeded", Message: msg})
	}
}

func joinKeys(keys []PlacementKey) string {
	s := make([]string, len(keys))
	for i, k := range keys {
		s[i] = k.String()
	}
	return strings.Join(s, ", ")
}
