package harness

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
)

// MCAState is what a rollout step follows of one ManagedClusterAddOn: the AddOnDeploymentConfig
// it was told to run and the one it last applied ("<namespace>/<name>"), and its Progressing
// reason. It keys by add-on and cluster, so one recording follows every add-on of the hub (the
// demo's steps roll out several).
type MCAState struct {
	Addon, Cluster   string
	Desired, Applied string
	Reason           string
}

// Key identifies the MCA in a recording: "<addon>/<cluster>".
func (s MCAState) Key() string { return s.Addon + "/" + s.Cluster }

// StateOf reads an MCA's state from its status.
func StateOf(m *addonv1alpha1.ManagedClusterAddOn) MCAState {
	st := MCAState{Addon: m.Name, Cluster: m.Namespace}
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

// Runs reports whether the state runs config: told it and applied it.
func (s MCAState) Runs(config string) bool { return s.Desired == config && s.Applied == config }

// Failed reports whether the add-on's last change failed (InstallFailed, UpgradeFailed,
// RollbackFailed).
func (s MCAState) Failed() bool { return strings.HasSuffix(s.Reason, "Failed") }

// MCAStateEvent is one recorded change: the state an MCA took, and when the recorder saw it. Its
// Key is its state's.
type MCAStateEvent struct {
	At time.Time
	MCAState
}

// RecordMCAStates records every change of every ManagedClusterAddOn (of every add-on) as
// MCAStateEvents until ctx ends or the recorder stops: an event for each change of an MCA's state
// (a status write that changes none of it is not one). A deletion is not recorded: the MCA keeps
// its last recorded state.
func RecordMCAStates(ctx context.Context, c addonclient.Interface) (*Recorder[MCAStateEvent], error) {
	// snap runs for the listed MCAs, then for each watch event in turn: never at once.
	last := map[string]MCAState{}
	rec, err := RecordMCASnapshots(ctx, c, "", func(typ watch.EventType, m *addonv1alpha1.ManagedClusterAddOn) []MCAStateEvent {
		st := StateOf(m)
		if prev, ok := last[st.Key()]; typ == watch.Deleted || ok && prev == st {
			return nil
		}
		last[st.Key()] = st
		return []MCAStateEvent{{At: time.Now(), MCAState: st}}
	})
	if err != nil {
		return nil, fmt.Errorf("recording the MCAs' changes: %w", err)
	}
	return rec, nil
}

// RecordedStates returns the state of every MCA when rec began and the changes since.
func RecordedStates(rec *Recorder[MCAStateEvent]) (map[string]MCAState, []MCAStateEvent) {
	start, events := rec.Since(rec.Listed())
	out := make(map[string]MCAState, len(start))
	for k, e := range start {
		out[k] = e.MCAState
	}
	return out, events
}

// LatestStates returns the latest recorded state of every MCA of addon, by cluster.
func LatestStates(rec *Recorder[MCAStateEvent], addon string) map[string]MCAState {
	latest := map[string]MCAState{}
	for k, e := range rec.Latest() {
		latest[k] = e.MCAState
	}
	return LatestOf(latest, nil, addon)
}

// LatestOf returns the state of every recorded MCA of addon, by cluster: its state at the start,
// then after each event.
func LatestOf(start map[string]MCAState, events []MCAStateEvent, addon string) map[string]MCAState {
	out := map[string]MCAState{}
	for _, st := range start {
		if st.Addon == addon {
			out[st.Cluster] = st
		}
	}
	for _, e := range events {
		if e.Addon == addon {
			out[e.Cluster] = e.MCAState
		}
	}
	return out
}

// FirstTold returns when each of clusters was first told config over the recording (events only:
// a cluster told it before the recording began is not in the map), by cluster.
func FirstTold(events []MCAStateEvent, addon, config string, clusters []string) map[string]time.Time {
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

// MovingInFlight is the most of clusters of addon that were, at one moment of the recording,
// Moving to config. It also returns one such moment's clusters, sorted. The moments are those of
// addon's changes only: MaxInFlight over them.
func MovingInFlight(start map[string]MCAState, events []MCAStateEvent, addon, config string, clusters []string) (int, []string) {
	from := map[string]MCAState{}
	for k, st := range start {
		if st.Addon == addon {
			from[k] = st
		}
	}
	var changes []MCAState
	for _, e := range events {
		if e.Addon == addon {
			changes = append(changes, e.MCAState)
		}
	}
	keys := make([]string, len(clusters))
	for i, c := range clusters {
		keys[i] = MCAState{Addon: addon, Cluster: c}.Key()
	}
	n, most := MaxInFlight(from, changes, keys, func(st MCAState) bool { return Moving(config, st.Desired, st.Applied, st.Reason) })
	for i, k := range most {
		most[i] = strings.TrimPrefix(k, addon+"/")
	}
	return n, most
}

// Moving says whether an MCA that was told desired, last applied applied and reports Progressing
// reason reason is moving to config: told it, not failed, and either not applied yet or still
// reported busy (Installing, Upgrading, RollingBack: a cluster whose bad version never applied
// goes back to the version it last applied, and is busy until that is healthy again). It is what
// MovingInFlight counts, for snapshots of other shapes too (configs compared as the caller names
// them).
func Moving(config, desired, applied, reason string) bool {
	return desired == config && !strings.HasSuffix(reason, "Failed") && (applied != config || addonstatus.IsBusyReason(reason))
}
