package harness

import (
	"slices"

	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// The replays below are pure functions over a recording (start: every key's snapshot when the
// step began, from Since; events: the step's snapshots in order), so that tests, the end-to-end
// suite and the demo count the same way.

// MaxInFlight is how many of clusters (nil: every key) were, at most at one moment of the
// recording (the start, then after each event), moving: told a new version and not done with it,
// as moving says of a cluster's snapshot. It also returns one such moment's clusters, sorted.
func MaxInFlight[T Keyed](start map[string]T, events []T, clusters []string, moving func(T) bool, opts ...InFlightOption) (int, []string) {
	var o inFlightOptions
	for _, f := range opts {
		f(&o)
	}
	state := map[string]T{}
	for k, v := range start {
		state[k] = v
	}
	counted := func(k string) bool { return clusters == nil || slices.Contains(clusters, k) }
	busy := func() []string {
		var out []string
		for k, s := range state {
			if counted(k) && moving(s) {
				out = append(out, k)
			}
		}
		slices.Sort(out)
		return out
	}
	var most []string
	if !o.changesOnly {
		most = busy()
	}
	for _, e := range events {
		state[e.Key()] = e
		if o.changesOnly && !counted(e.Key()) {
			continue
		}
		if b := busy(); len(b) > len(most) {
			most = b
		}
	}
	return len(most), most
}

// InFlightOption tunes MaxInFlight.
type InFlightOption func(*inFlightOptions)

type inFlightOptions struct{ changesOnly bool }

// ChangesOnly counts only the moments right after a change of one of the clusters: not the start
// (the clusters already moving when a step began, whose moves the step did not start), nor the
// moments after another key's change.
func ChangesOnly() InFlightOption { return func(o *inFlightOptions) { o.changesOnly = true } }

// FirstWhen returns the index of the first event after which pred holds for the state of every
// key (-1 for the state at the start, len(events) when never): the order of a rollout's steps.
func FirstWhen[T Keyed](start map[string]T, events []T, pred func(map[string]T) bool) int {
	state := map[string]T{}
	for k, v := range start {
		state[k] = v
	}
	if pred(state) {
		return -1
	}
	for i, e := range events {
		state[e.Key()] = e
		if pred(state) {
			return i
		}
	}
	return len(events)
}

// FirstIndex returns the index of the first event of key for which pred holds (-1 if none).
func FirstIndex[T Keyed](events []T, key string, pred func(T) bool) int {
	for i, e := range events {
		if e.Key() == key && pred(e) {
			return i
		}
	}
	return -1
}

// DesiredOf returns the config reference of m's status whose desired config is name (of resource,
// or of any resource when resource is ""), nil when m was not told it.
func DesiredOf(m *addonv1alpha1.ManagedClusterAddOn, resource, name string) *addonv1alpha1.ConfigReference {
	if m == nil {
		return nil
	}
	for i := range m.Status.ConfigReferences {
		r := &m.Status.ConfigReferences[i]
		if (resource == "" || r.Resource == resource) && r.DesiredConfig != nil && r.DesiredConfig.Name == name {
			return r
		}
	}
	return nil
}

// MovingTo says whether an MCA event shows the cluster told config name (of resource; "" for any)
// without having applied it yet: last applied another config, or this one with another spec hash
// (the config changed in place). A deleted MCA is not moving.
func MovingTo(resource, name string) func(MCAEvent) bool {
	return func(e MCAEvent) bool {
		if e.Type == watch.Deleted {
			return false
		}
		r := DesiredOf(e.MCA, resource, name)
		if r == nil {
			return false
		}
		a := r.LastAppliedConfig
		return a == nil || a.Name != name || a.SpecHash != r.DesiredConfig.SpecHash
	}
}
