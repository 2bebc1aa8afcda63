package stepcheck

import (
	"strings"
	"testing"
)

func TestExpectBadVersion(t *testing.T) {
	canary := map[string]bool{"c1": true, "c2": true}
	injected := map[string]bool{"c5": true}
	for _, tc := range []struct {
		name         string
		r            Result
		failed, told []string
		inj          map[string]bool
		ok           bool
		why          string
	}{
		{"stopped at the canary", Failed, []string{"c1"}, []string{"c1"}, nil, true, ""},
		{"and an injected cluster", Failed, []string{"c1", "c5"}, []string{"c1"}, injected, true, ""},
		{"succeeded", Succeeded, nil, []string{"c1", "c2", "c3"}, nil, false, "want Failed"},
		{"timed out", TimedOut, nil, []string{"c1"}, nil, false, "--step-timeout"},
		{"reached the gated placement", Failed, []string{"c1"}, []string{"c1", "c3"}, nil, false, "outside the canary: c3"},
		{"a gated cluster failed", Failed, []string{"c1", "c4"}, []string{"c1"}, nil, false, "should not have: c4"},
		{"only injected failures", Failed, []string{"c5"}, []string{"c1"}, injected, false, "went unnoticed"},
	} {
		ok, why := BadVersion(tc.r, tc.failed, tc.told, canary, tc.inj)
		if ok != tc.ok || !strings.Contains(why, tc.why) {
			t.Errorf("%s: (%v, %q), want (%v, …%q…)", tc.name, ok, why, tc.ok, tc.why)
		}
	}
}

func TestExpectRevert(t *testing.T) {
	for _, tc := range []struct {
		name     string
		r        Result
		failed   []string
		injected map[string]bool
		reasons  []string
		ok       bool
	}{
		{"rollback", Succeeded, nil, nil, []string{"RollbackSucceeded", "UpgradeSucceed"}, true},
		{"not a rollback", Succeeded, nil, nil, []string{"UpgradeSucceed", "UpgradeSucceed"}, false},
		{"failed", Failed, []string{"c1"}, nil, []string{"RollbackFailed"}, false},
		{"injected failures", Failed, []string{"c5"}, map[string]bool{"c5": true}, []string{"RollbackFailed"}, true},
	} {
		if ok, why := Revert(tc.r, tc.failed, tc.injected, tc.reasons); ok != tc.ok {
			t.Errorf("%s: (%v, %q), want %v", tc.name, ok, why, tc.ok)
		}
	}
}
