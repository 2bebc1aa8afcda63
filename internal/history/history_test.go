package history

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cfg(name, hash string) Config {
	return Config{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs", Namespace: "default", Name: name, SpecHash: hash}
}

var (
	a  = []Config{cfg("cfg-a", "aaa")}
	b  = []Config{cfg("cfg-b", "bbb")}
	c  = []Config{cfg("cfg-c", "ccc")}
	t0 = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
)

func at(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }

func TestVersionID(t *testing.T) {
	two := []Config{cfg("x", "1"), {Group: "addon.open-cluster-management.io", Resource: "addontemplates", Name: "t", SpecHash: "2"}}
	rev := []Config{two[1], two[0]}
	if VersionID(two) != VersionID(rev) {
		t.Errorf("order changes the id")
	}
	if VersionID(a) == VersionID(b) || len(VersionID(a)) != 10 {
		t.Errorf("ids: %q %q", VersionID(a), VersionID(b))
	}
	changed := []Config{cfg("cfg-a", "aab")}
	if VersionID(a) == VersionID(changed) {
		t.Errorf("a changed spec hash keeps the id")
	}
}

func TestAdvance(t *testing.T) {
	type step struct {
		obs  Observation
		at   int
		want string // versions as id-less "name:result[:completed]" joined by " "
	}
	describe := func(p Placement) string {
		var parts []string
		for _, v := range p.Versions {
			s := v.Configs[0].Name + ":" + string(v.Result)
			if v.Completed != nil {
				s += ":c"
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, " ")
	}
	cases := []struct {
		name  string
		limit int
		steps []step
	}{
		{"install, upgrade, revert after completion", 10, []step{
			{Observation{Desired: a, Kind: "Install"}, 0, "cfg-a:InProgress"},
			{Observation{Desired: a, Kind: "Install", State: Complete}, 5, "cfg-a:Succeeded:c"},
			{Observation{Desired: b, Kind: "Upgrade"}, 10, "cfg-a:Superseded:c cfg-b:InProgress"},
			{Observation{Desired: b, Kind: "Upgrade", State: Complete}, 15, "cfg-a:Superseded:c cfg-b:Succeeded:c"},
			{Observation{Desired: a, Kind: "Rollback"}, 20, "cfg-a:Superseded:c cfg-b:RolledBack:c cfg-a:InProgress"},
			{Observation{Desired: a, Kind: "Rollback", State: Complete}, 25, "cfg-a:Superseded:c cfg-b:RolledBack:c cfg-a:Succeeded:c"},
		}},
		{"failed, retried, fixed forward", 10, []step{
			{Observation{Desired: a, State: Complete}, 0, "cfg-a:Succeeded:c"},
			{Observation{Desired: b, Kind: "Upgrade", State: Stopped, Message: "c1 failed"}, 5, "cfg-a:Superseded:c cfg-b:Failed"},
			{Observation{Desired: b, Kind: "Upgrade", State: Busy}, 10, "cfg-a:Superseded:c cfg-b:InProgress"},
			{Observation{Desired: b, Kind: "Upgrade", State: Stopped}, 15, "cfg-a:Superseded:c cfg-b:Failed"},
			{Observation{Desired: c, Kind: "Upgrade"}, 20, "cfg-a:Superseded:c cfg-b:Failed cfg-c:InProgress"},
		}},
		{"aborted stays aborted until the configs change", 10, []step{
			{Observation{Desired: a, State: Complete}, 0, "cfg-a:Succeeded:c"},
			{Observation{Desired: b, Kind: "Upgrade", State: AbortedState, Message: "aborted by addonops abort"}, 5, "cfg-a:Superseded:c cfg-b:Aborted"},
			{Observation{Desired: b, Kind: "Upgrade", State: Complete}, 6, "cfg-a:Superseded:c cfg-b:Aborted:c"},
			{Observation{Desired: a, Kind: "Rollback", State: Complete}, 10, "cfg-a:Superseded:c cfg-b:Aborted:c cfg-a:Succeeded:c"},
		}},
		{"bounded", 2, []step{
			{Observation{Desired: a, State: Complete}, 0, "cfg-a:Succeeded:c"},
			{Observation{Desired: b, State: Complete}, 1, "cfg-a:Superseded:c cfg-b:Succeeded:c"},
			{Observation{Desired: c, State: Complete}, 2, "cfg-b:Superseded:c cfg-c:Succeeded:c"},
		}},
		{"no configs: nothing recorded", 10, []step{
			{Observation{State: Complete}, 0, ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Placement{Placement: "default/p"}
			for i, s := range tc.steps {
				p = Advance(p, s.obs, at(s.at), tc.limit)
				if got := describe(p); got != s.want {
					t.Fatalf("step %d: got %q, want %q", i, got, s.want)
				}
			}
		})
	}
}

func TestAdvanceDoesNotAliasItsInput(t *testing.T) {
	p := Advance(Placement{}, Observation{Desired: a}, at(0), 10)
	before := p.Versions[0].Result
	_ = Advance(p, Observation{Desired: a, State: Complete}, at(1), 10)
	if p.Versions[0].Result != before {
		t.Fatalf("Advance changed its input: %s", p.Versions[0].Result)
	}
}

func TestQueries(t *testing.T) {
	p := Placement{Placement: "default/p"}
	p = Advance(p, Observation{Desired: a, State: Complete}, at(0), 10)
	p = Advance(p, Observation{Desired: b, State: Complete}, at(1), 10)
	p = Advance(p, Observation{Desired: c, State: Stopped}, at(2), 10)
	r := &Record{Addon: "hello", Placements: []Placement{p}}
	hp := r.Placement("default/p")
	if !hp.Completed(a) || !hp.Completed(b) || hp.Completed(c) {
		t.Errorf("Completed: a %v b %v c %v", hp.Completed(a), hp.Completed(b), hp.Completed(c))
	}
	if lkg := r.Placement("default/p").LastKnownGood(); lkg == nil || lkg.Configs[0].Name != "cfg-b" {
		t.Errorf("LastKnownGood: %+v", lkg)
	}
	if r.Placement("default/q") != nil {
		t.Errorf("unknown placement found")
	}
	enc, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(enc)
	if err != nil || !back.Placement("default/p").Completed(b) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := Decode(`{"addon": "x", "placements": 3}`); err == nil {
		t.Errorf("a malformed record decoded")
	}
	if _, err := Decode(`{"addon": "x", "placements": [{"placement": 3}], "bogus": 1}`); err == nil {
		t.Errorf("a malformed record with an unknown field decoded")
	}
}

// TestDecodeNewer: a record a newer controller wrote (fields this code lacks, at any depth) is
// read with what this code knows, and says so; a known record does not.
func TestDecodeNewer(t *testing.T) {
	for _, tc := range []struct {
		name, data, newer string
	}{
		{"known", `{"addon": "x", "placements": [{"placement": "ns/p"}]}`, ""},
		{"top level", `{"addon": "x", "placements": [{"placement": "ns/p"}], "bogus": 1}`, `"bogus"`},
		{"in a placement", `{"addon": "x", "placements": [{"placement": "ns/p", "later": {"a": 1}}]}`, `"later"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decode(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if r.Newer != tc.newer || r.Addon != "x" || r.Placement("ns/p") == nil {
				t.Errorf("Newer %q, record %+v; want Newer %q and placement ns/p of add-on x", r.Newer, r, tc.newer)
			}
			enc, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(enc, "Newer") || strings.Contains(enc, "bogus") {
				t.Errorf("Encode wrote %s", enc)
			}
		})
	}
}

func TestNames(t *testing.T) {
	if got := ConfigMapName("hello"); got != "addonops-history-hello" {
		t.Errorf("ConfigMapName: %s", got)
	}
	long := strings.Repeat("a", 250)
	if got := ConfigMapName(long); len(got) > 253 || got == ConfigMapName(long+"b") {
		t.Errorf("long ConfigMapName: %d %s", len(got), got)
	}
	if AddonLabelValue("hello") != "hello" || len(AddonLabelValue(strings.Repeat("a", 70))) > 63 {
		t.Errorf("AddonLabelValue")
	}
}

// The table notes retries, window waits and a window override in RESULT.
func TestTableNotes(t *testing.T) {
	rec := &Record{Addon: "hello", Placements: []Placement{{Placement: "default/prod", Versions: []Version{
		{ID: "0123456789", Configs: []Config{{Group: "g", Resource: "r", Name: "cfg-b", SpecHash: "h"}}, Kind: "Upgrade", Result: InProgress,
			Retries: 1, WindowWaits: 2, WindowOverridden: true},
	}}}}
	var b strings.Builder
	if err := WriteTable(&b, rec, func(c Config) string { return c.Name }); err != nil {
		t.Fatal(err)
	}
	if want := "InProgress (retried 1x) (waited for a window 2x) (window overridden)"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
}

func TestVerificationSummary(t *testing.T) {
	vs := []Verification{{Batch: 1, Phase: "Successful"}, {Batch: 2, Phase: "Inconclusive", Promoted: true}, {Batch: 3, Phase: "Successful"}}
	if got, want := verificationSummary(vs), "verified 3 batches: 2 Successful, 1 Inconclusive (promoted)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := verificationSummary(nil); got != "" {
		t.Errorf("no runs: %q", got)
	}
}

func TestCompactVerifications(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	vs := []Verification{
		{Batch: 1, Clusters: 1, Covers: at(10), Phase: "Successful", Sample: []string{"a"}},
		{Batch: 2, Clusters: 2, Covers: at(20), Phase: "Successful"},
		{Batch: 3, Clusters: 1, Covers: at(30), Phase: "Failed"},
		{Batch: 4, Clusters: 1, Covers: at(40), Phase: "Successful"},
		{Batch: 5, Clusters: 1, Covers: at(50), Phase: "Successful"},
	}
	got := CompactVerifications(vs, 3)
	var parts []string
	for _, v := range got {
		parts = append(parts, fmt.Sprintf("%d-%d:%s:%d:%d", v.FirstBatch, v.Batch, v.Phase, v.Clusters, v.Covers.Unix()))
	}
	if s, want := strings.Join(parts, " "), "1-2:Successful:3:20 0-3:Failed:1:30 4-5:Successful:2:50"; s != want {
		t.Fatalf("got %s, want %s", s, want)
	}
	if got[0].Sample[0] != "a" {
		t.Errorf("the merged entry's sample: %v", got[0].Sample)
	}
	// Alternating phases cannot be merged: the bound gives way, no run is lost.
	alt := []Verification{{Batch: 1, Phase: "Successful"}, {Batch: 2, Phase: "Failed"}, {Batch: 3, Phase: "Successful"}}
	if n := len(CompactVerifications(alt, 1)); n != 3 {
		t.Errorf("alternating runs: %d kept, want 3", n)
	}
	if len(vs) != 5 {
		t.Errorf("the input was changed")
	}
}
