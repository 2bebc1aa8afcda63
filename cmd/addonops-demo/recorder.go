package main

// The demo's recorder of ManagedClusterAddOn changes, in this one file so that a shared one
// (internal/testing/harness's, with its max-in-flight) can replace it: hubView's informer feeds it
// (add), a step starts and stops it (begin, stop), the pause step reads the latest states
// (latestStates), and the rollback and pause checks read the recording (firstTold, maxInFlight).

import (
	"slices"
	"strings"
	"sync"
	"time"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// mcaState is what the demo follows of one ManagedClusterAddOn: the AddOnDeploymentConfig it was
// told to run and the one it last applied ("<namespace>/<name>"), and its Progressing reason.
type mcaState struct {
	Addon, Cluster   string
	Desired, Applied string
	Reason           string
}

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

// mcaEvent is one recorded change: the state an MCA took, and when the demo saw it.
type mcaEvent struct {
	At time.Time
	mcaState
}

// mcaRecorder keeps the changes of every ManagedClusterAddOn the informer reports while recording
// is on, in the order the informer delivered them (one watch: the API server's order), so a step
// can tell what happened when, not only how it ended: during a pause, which clusters were told a
// version; during a rollback, how many moved at once.
type mcaRecorder struct {
	mu        sync.Mutex
	recording bool
	start     map[string]mcaState // by "<addon>/<cluster>", when recording began
	latest    map[string]mcaState
	events    []mcaEvent
	// changed gets a value (without blocking) after each recorded change: a step waiting for one
	// wakes at once.
	changed chan struct{}
}

func (r *mcaRecorder) add(obj any) {
	m, ok := obj.(*addonv1alpha1.ManagedClusterAddOn)
	if !ok {
		return
	}
	st := stateOf(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.recording {
		return
	}
	key := st.Addon + "/" + st.Cluster
	if prev, ok := r.latest[key]; ok && prev == st {
		return
	}
	r.latest[key] = st
	r.events = append(r.events, mcaEvent{At: time.Now(), mcaState: st})
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// begin starts a new recording from current, the MCAs the informer's cache holds now (its handler
// calls add with every later change), and returns the channel that signals changes.
func (r *mcaRecorder) begin(current []any) <-chan struct{} {
	r.mu.Lock()
	r.recording = true
	r.start, r.latest, r.events = map[string]mcaState{}, map[string]mcaState{}, nil
	r.changed = make(chan struct{}, 1)
	ch := r.changed
	r.mu.Unlock()
	// An MCA the handler recorded meanwhile keeps what it recorded: its event is newer than the
	// listing's copy.
	for _, obj := range current {
		st := stateOf(obj.(*addonv1alpha1.ManagedClusterAddOn))
		key := st.Addon + "/" + st.Cluster
		r.mu.Lock()
		if _, seen := r.latest[key]; !seen {
			r.start[key], r.latest[key] = st, st
		}
		r.mu.Unlock()
	}
	return ch
}

// stop ends the recording and returns the state at its start and the changes since.
func (r *mcaRecorder) stop() (start map[string]mcaState, events []mcaEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording = false
	return r.start, r.events
}

// latestStates returns the latest recorded state of every MCA of addon, by cluster.
func (r *mcaRecorder) latestStates(addon string) map[string]mcaState {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]mcaState{}
	for _, st := range r.latest {
		if st.Addon == addon {
			out[st.Cluster] = st
		}
	}
	return out
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
// and is busy until that is healthy again). It also returns one such moment's clusters.
func maxInFlight(start map[string]mcaState, events []mcaEvent, addon, config string, clusters []string) (int, []string) {
	state := latestOf(start, nil, addon)
	busy := func() []string {
		var out []string
		for _, c := range clusters {
			if st := state[c]; st.Desired == config && !st.failed() && (st.Applied != config || addonstatus.IsBusyReason(st.Reason)) {
				out = append(out, c)
			}
		}
		return out
	}
	most := busy()
	for _, e := range events {
		if e.Addon != addon {
			continue
		}
		state[e.Cluster] = e.mcaState
		if b := busy(); len(b) > len(most) {
			most = b
		}
	}
	return len(most), most
}
