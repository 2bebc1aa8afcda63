package stepcheck

import (
	"strings"
	"testing"
)

func TestExpectation(t *testing.T) {
	injected := map[string]bool{"c5": true, "c9": true}
	for _, tc := range []struct {
		name     string
		result   Result
		failed   []string
		injected map[string]bool
		want     bool
		why      string
	}{
		{"success without injection", Succeeded, nil, nil, true, ""},
		{"failure without injection", Failed, []string{"c1"}, nil, false, "clusters failed that should not have: c1"},
		{"failure reporting no cluster, no injection", Failed, nil, nil, false, "failed although no failure was injected"},
		{"injected clusters fail", Failed, []string{"c5", "c9"}, injected, true, ""},
		{"some of the injected clusters fail (the rollout stopped first)", Failed, []string{"c5"}, injected, true, ""},
		{"a cluster fails that was not injected", Failed, []string{"c1", "c5"}, injected, false, "clusters failed that should not have: c1"},
		{"success despite injection", Succeeded, nil, injected, false, "went unnoticed"},
		{"failed without a failed cluster (held by a canary that failed elsewhere)", Failed, nil, injected, false, "reported no failed cluster"},
		{"timed out", TimedOut, nil, nil, false, "--step-timeout"},
		{"interrupted", Interrupted, nil, nil, false, "interrupted"},
		{"apply error", Error, nil, nil, false, "could not be applied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Expect(tc.result, tc.failed, tc.injected)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("expectation = %v, %q; want %v, containing %q", got, why, tc.want, tc.why)
			}
		})
	}
}
