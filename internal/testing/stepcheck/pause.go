package stepcheck

import (
	"fmt"
	"slices"
	"time"

	"github.com/addonops/addonops/internal/addonstatus"
)

// A pause step pauses a placement after its first batch started (the addonops.io/pause
// annotation, as `addonops pause` writes it), holds it while the clusters in flight finish, and
// resumes it: the recorded MCA changes must show that no cluster was told the version between the
// pause and the resume.

// PauseResult is what the pause step saw. Times are since the step's start.
type PauseResult struct {
	Placement string
	Version   string
	// Clusters the placement rolls out to.
	Clusters int
	// WrittenAt: the pause annotation was written; PausedAt: the placement first reported reason
	// Paused; ResumedAt: the annotation was removed again.
	WrittenAt, PausedAt, ResumedAt time.Duration
	// ToldAtPause are the placement's clusters told the version when it reported Paused (its
	// first batch), InFlightAtPause how many of them had not applied it yet, Held how many were
	// not told (they wait for the resume).
	ToldAtPause     []string
	InFlightAtPause int
	Held            int
	// ToldDuring are the clusters first told the version while paused (PausedAt to ResumedAt): a
	// pause starts no new cluster, so none.
	ToldDuring []string
	// DoneAtResume counts the placement's clusters running the version when it was resumed, and
	// ReasonAtResume is the placement's reason then (Paused: counts frozen).
	DoneAtResume   int
	ReasonAtResume string
	// Told is when each of the placement's clusters was first told the version, from the recorded
	// MCA changes, in that order.
	Told []ToldAt
	// Problem says why the pause could not be shown (the rollout ended before its first batch, the
	// annotation could not be written, ...).
	Problem string
}

// ToldAt is when a cluster was first told a version, since the step's start.
type ToldAt struct {
	Cluster string
	At      time.Duration
}

// PauseResume decides whether a pause step ended as it should: as any step (every cluster
// on the new version in the end), and the pause shown: the placement reported Paused, held at
// least one cluster, no cluster was told the version while it was paused, the clusters in flight
// finished during the pause (its counts froze), and it was resumed. With injected failures the
// pause may not come to pass (the canary may fail first); a pause that did must still start no
// cluster.
func PauseResume(r Result, failed []string, injected map[string]bool, p *PauseResult) (bool, string) {
	if ok, why := Expect(r, failed, injected); !ok {
		return false, why
	}
	if p == nil {
		return false, "the pause did not run"
	}
	if len(p.ToldDuring) > 0 {
		return false, fmt.Sprintf("clusters were told %s while %s was paused: %s", p.Version, p.Placement, Names(p.ToldDuring, 5))
	}
	if len(injected) > 0 {
		return true, ""
	}
	switch {
	case p.Problem != "":
		return false, p.Problem
	case p.Held == 0:
		return false, fmt.Sprintf("the pause held no cluster of %s: every one was told %s already", p.Placement, p.Version)
	case p.ReasonAtResume != addonstatus.ReasonPaused:
		return false, fmt.Sprintf("%s reported %s when it was resumed, want Paused", p.Placement, p.ReasonAtResume)
	case p.DoneAtResume != len(p.ToldAtPause):
		return false, fmt.Sprintf("%d of %s's clusters ran %s when it was resumed, want the %d told before the pause: in flight, they finish",
			p.DoneAtResume, p.Placement, p.Version, len(p.ToldAtPause))
	}
	for _, t := range p.Told {
		if !slices.Contains(p.ToldAtPause, t.Cluster) && t.At < p.ResumedAt {
			return false, fmt.Sprintf("%s was told %s at %s, before the resume (%s)", t.Cluster, p.Version, Seconds(t.At), Seconds(p.ResumedAt))
		}
	}
	return true, ""
}

// DescribePause says what the pause showed, for the step's last line and the summary.
func DescribePause(p *PauseResult) string {
	if p == nil {
		return ""
	}
	if p.Problem != "" && p.PausedAt == 0 {
		return "no pause: " + p.Problem
	}
	during := "no cluster was told it during the pause"
	if len(p.ToldDuring) > 0 {
		during = fmt.Sprintf("%d were told it during the pause (%s)", len(p.ToldDuring), Names(p.ToldDuring, 3))
	}
	return fmt.Sprintf("paused %s at %s after its first batch (%d of %d clusters told %s); %s, the %d in flight finished, %d waited; "+
		"resumed at %s (%s paused), then the rest followed", p.Placement, Seconds(p.PausedAt), len(p.ToldAtPause), p.Clusters, p.Version,
		during, p.InFlightAtPause, p.Held, Seconds(p.ResumedAt), Seconds(p.ResumedAt-p.PausedAt))
}
