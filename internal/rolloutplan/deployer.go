package rolloutplan

// Clusters whose add-on nobody deploys.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// deployerWaits finds the MCAs, as this decision leaves them, that were told to run their configs
// longer than the deployer wait ago with no ManifestApplied from any deployer
// (WaitingForDeployer), sorted; the decision is taken again when the wait of one still
// waiting runs out. Each placement whose rollout is under way names its own in its message (the
// MCAs' messages are the progress tracker's).
func (d *decider) deployerWaits(states []*placementState) []string {
	var waiting []string
	for ns := range d.mcas {
		if d.undecodable(d.mcas[ns]) != "" {
			continue
		}
		w, recheck := WaitingForDeployer(d.status(ns), d.health.DeployerWait, d.in.Now)
		if w {
			waiting = append(waiting, ns)
		}
		d.noteRecheck(&recheck)
	}
	slices.Sort(waiting)
	for _, p := range states {
		var mine []string
		for _, c := range p.owned {
			if _, ok := slices.BinarySearch(waiting, c); ok {
				mine = append(mine, c)
			}
		}
		if len(mine) > 0 && p.cond.Status == metav1.ConditionTrue {
			p.cond.Message += deployerNote(mine)
		}
	}
	return waiting
}

// deployerNote is the progression message's note on clusters waiting for a deployer.
func deployerNote(clusters []string) string {
	return fmt.Sprintf("; %d waiting for the add-on's deployer (no ManifestApplied): %s; %s", len(clusters), listed(clusters),
		strings.TrimPrefix(addonstatus.MessageWaitingForDeployer, "waiting for the add-on's deployer to report ManifestApplied — "))
}

// DeployerWaitEvent is the Warning event on the CMA when clusters of the add-on begin to wait for a
// deployer (Plan.DeployerWaits): one per episode, not one per cluster, since the cause (no add-on
// manager deploys the add-on) is the add-on's and every cluster in flight has it. told says whether
// the episode was already reported; the reconciler keeps it (a restarted controller reports an
// ongoing episode once more). It returns the event, whether to record it, and told after it.
func DeployerWaitEvent(waiting []string, told bool, wait time.Duration) (Event, bool, bool) {
	if len(waiting) == 0 {
		return Event{}, false, false
	}
	if told {
		return Event{}, false, true
	}
	if wait <= 0 {
		wait = DefaultDeployerWait
	}
	return Event{Warning: true, Reason: addonstatus.ReasonWaitingForDeployer, Message: fmt.Sprintf(
		"%d cluster(s) told to run their configs more than %s ago have no ManifestApplied from any deployer: %s; %s",
		len(waiting), wait, listed(waiting), addonstatus.MessageWaitingForDeployer)}, true, true
}
