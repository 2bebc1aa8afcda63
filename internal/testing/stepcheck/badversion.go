package stepcheck

import (
	"fmt"
	"slices"

	"github.com/addonops/addonops/internal/addonstatus"
)

// BadVersion decides whether a bad version's step ended as it should: stopped at the canary. It
// must fail; only canary clusters (or clusters whose failure was injected) may fail, and at least
// one canary cluster must (else the unhealthy version went unnoticed); no cluster outside the
// canary may have been told to run the bad config (told: the clusters whose MCA desired it).
func BadVersion(r Result, failed, told []string, canary, injected map[string]bool) (bool, string) {
	if r != Failed {
		if ok, why := Expect(r, failed, injected); !ok {
			return false, why
		}
		return false, fmt.Sprintf("%s, want Failed: stopped at the canary", r)
	}
	var outside, wrong []string
	canaryFailed := false
	for _, c := range told {
		if !canary[c] {
			outside = append(outside, c)
		}
	}
	for _, c := range failed {
		switch {
		case canary[c]:
			canaryFailed = true
		case !injected[c]:
			wrong = append(wrong, c)
		}
	}
	switch {
	case len(outside) > 0:
		return false, fmt.Sprintf("the bad version reached clusters outside the canary: %s", Names(outside, 5))
	case len(wrong) > 0:
		return false, fmt.Sprintf("clusters failed that should not have: %s", Names(wrong, 5))
	case !canaryFailed:
		return false, "no canary cluster failed: the unhealthy version went unnoticed"
	}
	return true, ""
}

// Revert decides whether the revert of a bad version ended as it should: as any step (every
// cluster back, or failed through injected clusters alone), reported as a rollback by at least
// one placement (reasons: the placements' Progressing reasons at the end).
func Revert(r Result, failed []string, injected map[string]bool, reasons []string) (bool, string) {
	if ok, why := Expect(r, failed, injected); !ok {
		return false, why
	}
	if len(injected) == 0 && !slices.Contains(reasons, addonstatus.ReasonRollbackSucceeded) {
		return false, fmt.Sprintf("no placement reports RollbackSucceeded (reasons %v): the revert was not taken as a rollback", reasons)
	}
	return true, ""
}
