package history

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// State is where a placement's rollout of its desired version stands in one decision.
type State int

const (
	// Busy: rolling out (or waiting for its turn, a canary, a pause).
	Busy State = iota
	// Complete: every cluster of the placement runs it.
	Complete
	// Stopped: the rollout stopped on failures (maxFailures).
	Stopped
	// Aborted: a person or the automatic abort policy stopped it; its clusters go back to the last
	// known good version.
	AbortedState
)

// Observation is what one rollout decision says about a placement.
type Observation struct {
	// Desired is the placement's desired version.
	Desired []Config
	// Kind is what moving to it is: Install, Upgrade or Rollback.
	Kind  string
	State State
	// Message says why it stopped or was aborted.
	Message string
}

// Advance returns placement p's history after a decision observed obs at now, keeping at most
// limit versions (the newest; limit <= 0 means DefaultLimit). It changes nothing when obs has no
// desired configs (an add-on without configs has no versions to roll back to). A new desired
// version ends the previous one — RolledBack when the new one is a rollback, Superseded otherwise;
// one that failed or was aborted keeps that result — and starts a new entry.
func Advance(p Placement, obs Observation, now metav1.Time, limit int) Placement {
	if len(obs.Desired) == 0 {
		return p
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	out := p
	out.Versions = append([]Version(nil), p.Versions...)
	last := out.Last()
	if last == nil || !SameConfigs(last.Configs, obs.Desired) {
		if last != nil {
			if last.Ended == nil {
				at := now
				last.Ended = &at
			}
			switch last.Result {
			case InProgress, Succeeded:
				last.Result = Superseded
				if obs.Kind == "Rollback" {
					last.Result = RolledBack
				}
			}
		}
		out.Versions = append(out.Versions, Version{ID: VersionID(obs.Desired), Configs: slices.Clone(obs.Desired),
			Kind: obs.Kind, Started: now, Result: InProgress})
		last = out.Last()
	}
	switch obs.State {
	case Complete:
		if last.Completed == nil {
			at := now
			last.Completed = &at
		}
		if last.Result != Aborted {
			last.Result, last.Ended, last.Message = Succeeded, nil, ""
		}
	case Stopped:
		if last.Result != Failed {
			at := now
			last.Result, last.Ended, last.Message = Failed, &at, obs.Message
		}
	case AbortedState:
		if last.Result != Aborted {
			at := now
			last.Result, last.Ended, last.Message = Aborted, &at, obs.Message
		}
	case Busy:
		if last.Result == Failed {
			// A retry (or a cluster that recovered) restarted it.
			last.Result, last.Ended, last.Message = InProgress, nil, ""
		}
	}
	if n := len(out.Versions); n > limit {
		out.Versions = out.Versions[n-limit:]
	}
	return out
}
