package rolloutplan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A placement's events say what they are about (the notifications send it): the placement, the
// version its desired configs make, the kind of move and the placement's clusters; the canary's
// passing is about the gated placement.
func TestEventSubjects(t *testing.T) {
	w, aws, canary := canaryWorld(t)
	w.step()
	w.agents(succeed, "k1", "k2")
	w.step()
	a := versionID([]Config{cfgOf("a")})
	want := map[string]EventSubject{
		"InstallSucceeded " + canary.String(): {Placement: canary.String(), VersionID: a, Kind: "Install", Clusters: []string{"k1", "k2"}},
		"CanaryPassed " + aws.String():        {Placement: aws.String(), VersionID: a, Kind: "Install", Clusters: []string{"c1", "c2", "c3", "c4"}},
		"InstallStarted " + aws.String():      {Placement: aws.String(), VersionID: a, Kind: "Install", Clusters: []string{"c1", "c2", "c3", "c4"}},
	}
	got := map[string]EventSubject{}
	for _, e := range w.lastPlan.Events {
		if e.Subject == nil {
			t.Errorf("event %s without a subject: %s", e.Reason, e.Message)
			continue
		}
		got[e.Reason+" "+e.Subject.Placement] = *e.Subject
	}
	for k, s := range want {
		if diff := cmp.Diff(s, got[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s\nevents: %+v", k, diff, w.lastPlan.Events)
		}
	}
}
