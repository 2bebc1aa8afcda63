package harness

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"github.com/addonops/addonops/internal/addonstatus"
)

// MCAState is what a rollout step follows of one ManagedClusterAddOn: the AddOnDeploymentConfig
// it was told to run and the one it last applied, the same for the AddOnTemplate, and its
// Progressing, Configured and Available conditions. The demo, the end-to-end suite and their step
// checks record this one snapshot (MaxInFlight, Moving). It keys by cluster, as a recording of one
// add-on's MCAs does; MCAStateEvent, which a recording of every add-on keeps, keys by add-on and
// cluster.
type MCAState struct {
	Addon, Cluster string
	// DesiredADC and AppliedADC name the AddOnDeploymentConfig the MCA was told to run and the one
	// it last applied, in namespaces DesiredADCNamespace and AppliedADCNamespace (DesiredConfig
	// and LastAppliedConfig of its addondeploymentconfigs config reference).
	DesiredADC, AppliedADC                   string
	DesiredADCNamespace, AppliedADCNamespace string
	// DesiredTpl and AppliedTpl name the AddOnTemplate it was told to run and last applied.
	DesiredTpl, AppliedTpl string
	Progressing            string // reason of the Progressing condition
	Configured             string // status of the Configured condition
	Available              string // "<status>/<reason>" of the Available condition
}

// Key is the MCA's cluster.
func (s MCAState) Key() string { return s.Cluster }

// String shows the state for failure messages and logs (configs by name).
func (s MCAState) String() string {
	return fmt.Sprintf("%s: adc %s→%s tpl %s→%s progressing=%s configured=%s available=%s", s.Cluster,
		orDash(s.AppliedADC), orDash(s.DesiredADC), orDash(s.AppliedTpl), orDash(s.DesiredTpl), orDash(s.Progressing), orDash(s.Configured), orDash(s.Available))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// StateOf reads an MCA's state from its status.
func StateOf(m *addonv1alpha1.ManagedClusterAddOn) MCAState {
	st := MCAState{Addon: m.Name, Cluster: m.Namespace}
	for _, r := range m.Status.ConfigReferences {
		switch r.Resource {
		case "addondeploymentconfigs":
			if r.DesiredConfig != nil {
				st.DesiredADC, st.DesiredADCNamespace = r.DesiredConfig.Name, r.DesiredConfig.Namespace
			}
			if r.LastAppliedConfig != nil {
				st.AppliedADC, st.AppliedADCNamespace = r.LastAppliedConfig.Name, r.LastAppliedConfig.Namespace
			}
		case "addontemplates":
			if r.DesiredConfig != nil {
				st.DesiredTpl = r.DesiredConfig.Name
			}
			if r.LastAppliedConfig != nil {
				st.AppliedTpl = r.LastAppliedConfig.Name
			}
		}
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing); c != nil {
		st.Progressing = c.Reason
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured); c != nil {
		st.Configured = string(c.Status)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable); c != nil {
		st.Available = string(c.Status) + "/" + c.Reason
	}
	return st
}

// Desired is the AddOnDeploymentConfig the MCA was told to run, "<namespace>/<name>" ("" for none).
func (s MCAState) Desired() string { return configKey(s.DesiredADCNamespace, s.DesiredADC) }

// Applied is the AddOnDeploymentConfig the MCA last applied, "<namespace>/<name>" ("" for none).
func (s MCAState) Applied() string { return configKey(s.AppliedADCNamespace, s.AppliedADC) }

func configKey(namespace, name string) string {
	if name == "" {
		return ""
	}
	return namespace + "/" + name
}

// Runs reports whether the state runs config ("<namespace>/<name>"): told it and applied it.
func (s MCAState) Runs(config string) bool { return s.Desired() == config && s.Applied() == config }

// Failed reports whether the add-on's last change failed (InstallFailed, UpgradeFailed,
// RollbackFailed).
func (s MCAState) Failed() bool { return addonstatus.IsFailedReason(s.Progressing) }

// MCAStateEvent is one recorded change: the state an MCA took, and when the recorder saw it.
type MCAStateEvent struct {
	At time.Time
	MCAState
}

// Key identifies the MCA in a recording of every add-on: "<addon>/<cluster>".
func (e MCAStateEvent) Key() string { return e.Addon + "/" + e.Cluster }

// RecordMCAStates records every change of every ManagedClusterAddOn (of every add-on) as
// MCAStateEvents until ctx ends or the recorder stops: an event for each change of an MCA's state
// (a status write that changes none of it is not one). A deletion is not recorded: the MCA keeps
// its last recorded state.
func RecordMCAStates(ctx context.Context, c addonclient.Interface) (*Recorder[MCAStateEvent], error) {
	// snap runs for the listed MCAs, then for each watch event in turn: never at once.
	last := map[string]MCAState{}
	rec, err := RecordMCASnapshots(ctx, c, "", func(typ watch.EventType, m *addonv1alpha1.ManagedClusterAddOn) []MCAStateEvent {
		e := MCAStateEvent{MCAState: StateOf(m)}
		if prev, ok := last[e.Key()]; typ == watch.Deleted || ok && prev == e.MCAState {
			return nil
		}
		last[e.Key()] = e.MCAState
		e.At = time.Now()
		return []MCAStateEvent{e}
	})
	if err != nil {
		return nil, fmt.Errorf("recording the MCAs' changes: %w", err)
	}
	return rec, nil
}

// RecordedStates returns the state of every MCA when rec began (by "<addon>/<cluster>") and the
// changes since.
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

// FirstTold returns when each of clusters was first told config ("<namespace>/<name>") over the
// recording (events only: a cluster told it before the recording began is not in the map), by
// cluster.
func FirstTold(events []MCAStateEvent, addon, config string, clusters []string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range events {
		if e.Addon != addon || e.Desired() != config || !slices.Contains(clusters, e.Cluster) {
			continue
		}
		if _, ok := out[e.Cluster]; !ok {
			out[e.Cluster] = e.At
		}
	}
	return out
}

// DesiredMoves returns, per cluster of addon, every config ("<namespace>/<name>") it was told over
// the recording, in order: each change of its desired config after its state at the start (or,
// for a cluster not there, after the first state recorded), so that "no cluster was told twice"
// is a check on the server's history.
func DesiredMoves(start map[string]MCAState, events []MCAStateEvent, addon string) map[string][]string {
	seen, out := map[string]string{}, map[string][]string{}
	for _, st := range LatestOf(start, nil, addon) {
		seen[st.Cluster] = st.Desired()
	}
	for _, e := range events {
		if e.Addon != addon {
			continue
		}
		if before, ok := seen[e.Cluster]; ok && e.Desired() != before {
			out[e.Cluster] = append(out[e.Cluster], e.Desired())
		}
		seen[e.Cluster] = e.Desired()
	}
	return out
}

// MovingInFlight is the most of clusters of addon that were, at one moment of the recording,
// Moving to config. It also returns one such moment's clusters, sorted. The moments are those of
// addon's changes only: MaxInFlight over them.
func MovingInFlight(start map[string]MCAState, events []MCAStateEvent, addon, config string, clusters []string) (int, []string) {
	latest := LatestOf(start, nil, addon)
	var changes []MCAState
	for _, e := range events {
		if e.Addon == addon {
			changes = append(changes, e.MCAState)
		}
	}
	return MaxInFlight(latest, changes, clusters, func(st MCAState) bool { return Moving(config, st.Desired(), st.Applied(), st.Progressing) })
}

// Moving says whether an MCA that was told desired, last applied applied and reports Progressing
// reason reason is moving to config: told it, not failed, and either not applied yet or still
// reported busy (Installing, Upgrading, RollingBack: a cluster whose bad version never applied
// goes back to the version it last applied, and is busy until that is healthy again). It is what
// MovingInFlight counts, for snapshots of other shapes too (configs compared as the caller names
// them).
func Moving(config, desired, applied, reason string) bool {
	return desired == config && !addonstatus.IsFailedReason(reason) && (applied != config || addonstatus.IsBusyReason(reason))
}
