package main

// The demo's recording of ManagedClusterAddOn changes: internal/testing/harness's Recorder (a
// list, then a watch from the list's resourceVersion: the API server's order) of the demo's own
// snapshot of an MCA (mcaState), and the demo's reading of it. A step records (recordMCAs) while
// it runs; the pause step reads the latest states (latestStates), the rollback and pause checks
// read the recording (firstTold, maxInFlight).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/testing/harness"
)

// mcaState is what the demo follows of one ManagedClusterAddOn: the AddOnDeploymentConfig it was
// told to run and the one it last applied ("<namespace>/<name>"), and its Progressing reason.
type mcaState struct {
	Addon, Cluster   string
	Desired, Applied string
	Reason           string
}

// Key identifies the MCA in a recording: "<addon>/<cluster>".
func (s mcaState) Key() string { return s.Addon + "/" + s.Cluster }

func stateOf(m *addonv1alpha1.ManagedClusterAddOn) mcaState {
	st := mcaState{Addon: m.Name, Cluster: m.Namespace}
	for _, r := range m.Status.ConfigReferences {
		if r.Resource != "addondeploymentconfigs" {
			continue
		}
		if r.DesiredConfig != nil {
			st.Desired = r.DesiredConfig.Namespace + "/" + r.DesiredConfig.Name
		}
		if r.LastAppliedConfig != nil {
			st.Applied = r.LastAppliedConfig.Namespace + "/" + r.LastAppliedConfig.Name
		}
		break
	}
	for _, c := range m.Status.Conditions {
		if c.Type == addonv1alpha1.ManagedClusterAddOnConditionProgressing {
			st.Reason = c.Reason
		}
	}
	return st
}

// runs reports whether the state runs config: told it and applied it.
func (s mcaState) runs(config string) bool { return s.Desired == config && s.Applied == config }

// failed reports whether the add-on's last change failed (InstallFailed, UpgradeFailed,
// RollbackFailed).
func (s mcaState) failed() bool { return strings.HasSuffix(s.Reason, "Failed") }

// mcaEvent is one recorded change: the state an MCA took, and when the demo saw it. Its Key is its
// state's.
type mcaEvent struct {
	At time.Time
	mcaState
}

// recordMCAs records every change of every ManagedClusterAddOn as mcaEvents until ctx ends or the
// recorder stops: an event for each change of an MCA's state (a status write that changes none of
// it is not one). A deletion is not recorded: the MCA keeps its last recorded state.
func recordMCAs(ctx context.Context, c addonclient.Interface) (*harness.Recorder[mcaEvent], error) {
	// snap runs for the listed MCAs, then for each watch event in turn: never at once.
	last := map[string]mcaState{}
	rec, err := harness.RecordMCASnapshots(ctx, c, "", func(typ watch.EventType, m *addonv1alpha1.ManagedClusterAddOn) []mcaEvent {
		st := stateOf(m)
		if prev, ok := last[st.Key()]; typ == watch.Deleted || ok && prev == st {
			return nil
		}
		last[st.Key()] = st
		return []mcaEvent{{At: time.Now(), mcaState: st}}
	})
	if err != nil {
		return nil, fmt.Errorf("recording the MCAs' changes: %w", err)
	}
	return rec, nil
}

// recorded returns the state of every MCA when rec began and the changes since.
func recorded(rec *harness.Recorder[mcaEvent]) (map[string]mcaState, []mcaEvent) {
	start, events := rec.Since(rec.Listed())
	out := make(map[string]mcaState, len(start))
	for k, e := range start {
		out[k] = e.mcaState
	}
	return out, events
}

// latestStates returns the latest recorded state of every MCA of addon, by cluster.
func latestStates(rec *harness.Recorder[mcaEvent], addon string) map[string]mcaState {
	latest := map[string]mcaState{}
	for k, e := range rec.Latest() {
		latest[k] = e.mcaState
	}
	return latestOf(latest, nil, addon)
}

// latestOf returns the state of every recorded MCA of addon, by cluster.
func latestOf(start map[string]mcaState, events []mcaEvent, addon string) map[string]mcaState {
	out := map[string]mcaState{}
	for _, st := range start {
		if st.Addon == addon {
			out[st.Cluster] = st
		}
	}
	for _, e := range events {
		if e.Addon == addon {
			out[e.Cluster] = e.mcaState
		}
	}
	return out
}

// firstTold returns when each of clusters was first told config over the recording (events only:
// a cluster told it before the recording began is not in the map), by cluster.
func firstTold(events []mcaEvent, addon, config string, clusters []string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range events {
		if e.Addon != addon || e.Desired != config || !slices.Contains(clusters, e.Cluster) {
			continue
		}
		if _, ok := out[e.Cluster]; !ok {
			out[e.Cluster] = e.At
		}
	}
	return out
}

// maxInFlight is the most of clusters that were, at one moment of the recording, moving to config:
// told it, not failed, and either not applied yet or still reported busy (Installing, Upgrading,
// RollingBack: a cluster whose bad version never applied goes back to the version it last applied,
// and is busy until that is healthy again). It also returns one such moment's clusters, sorted.
// The moments are those of addon's changes only: harness.MaxInFlight over them.
func maxInFlight(start map[string]mcaState, events []mcaEvent, addon, config string, clusters []string) (int, []string) {
	from := map[string]mcaState{}
	for k, st := range start {
		if st.Addon == addon {
			from[k] = st
		}
	}
	var changes []mcaState
	for _, e := range events {
		if e.Addon == addon {
			changes = append(changes, e.mcaState)
		}
	}
	keys := make([]string, len(clusters))
	for i, c := range clusters {
		keys[i] = mcaState{Addon: addon, Cluster: c}.Key()
	}
	n, most := harness.MaxInFlight(from, changes, keys, func(st mcaState) bool {
		return st.Desired == config && !st.failed() && (st.Applied != config || addonstatus.IsBusyReason(st.Reason))
	})
	for i, k := range most {
		most[i] = strings.TrimPrefix(k, addon+"/")
	}
	return n, most
}
