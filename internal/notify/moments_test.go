package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// The reasons the rollout decision records, as rolloutplan spells them: a reason renamed there
// and not here would silently stop its trigger.
func TestEveryTriggerHasReasons(t *testing.T) {
	want := []string{OnAborted, OnBatchFailed, OnCanaryFailed, OnCanaryPassed, OnPaused, OnRollbackFailed, OnRollbackStarted,
		OnRollbackSucceeded, OnRolloutCompleted, OnRolloutStarted, OnVerificationFailed}
	if diff := cmp.Diff(want, Triggers()); diff != "" {
		t.Errorf("Triggers (-want +got):\n%s", diff)
	}
	for reason, trigger := range map[string]string{
		"UpgradeStarted": OnRolloutStarted, "InstallStarted": OnRolloutStarted, "CanaryPassed": OnCanaryPassed,
		"CanaryPromoted": OnCanaryPassed, "CanaryFailed": OnCanaryFailed, "UpgradeFailed": OnBatchFailed,
		"VerificationFailed": OnVerificationFailed, "Paused": OnPaused, "Aborting": OnAborted, "Aborted": OnAborted,
		"RollbackStarted": OnRollbackStarted, "RollbackSucceeded": OnRollbackSucceeded, "RollbackFailed": OnRollbackFailed,
		"UpgradeSucceeded": OnRolloutCompleted, "InstallSucceeded": OnRolloutCompleted,
	} {
		if got, ok := TriggerOf(reason); !ok || got != trigger {
			t.Errorf("TriggerOf(%s) = %q, %v; want %q", reason, got, ok, trigger)
		}
	}
	for _, r := range []string{"BatchStarted", "Resumed", "WindowOpened", "RetryStarted", "WaitingForCanary"} {
		if got, ok := TriggerOf(r); ok {
			t.Errorf("TriggerOf(%s) = %q; want no trigger", r, got)
		}
	}
}

var t0 = metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func subject(placement, id string) *rolloutplan.EventSubject {
	return &rolloutplan.EventSubject{Placement: placement, VersionID: id, Kind: "Upgrade", Clusters: []string{"c1", "c2"}}
}

func TestMomentsOf(t *testing.T) {
	rec := &history.Record{Addon: "a", Placements: []history.Placement{
		{Placement: "ns/p", Versions: []history.Version{
			{ID: "v1", Started: t0, Notified: []string{OnRolloutCompleted, OnRolloutStarted}},
			{ID: "v2", Started: metav1.NewTime(t0.Add(60e9)), Notified: []string{OnRolloutStarted}},
		}},
	}}
	events := []rolloutplan.Event{
		{Reason: "UpgradeStarted", Message: "again", Subject: subject("ns/p", "v2")},  // sent before: recorded
		{Reason: "BatchStarted", Message: "moving", Subject: subject("ns/p", "v2")},   // no trigger
		{Reason: "Aborting", Message: "aborting", Subject: subject("ns/p", "v2")},     // new
		{Reason: "Aborted", Message: "aborted", Subject: subject("ns/p", "v2")},       // same trigger, same version: once
		{Reason: "UpgradeStarted", Message: "other", Subject: subject("ns/q", "v2")},  // another placement
		{Reason: "CanaryFailed", Message: "no subject"},                               // not a placement's
		{Reason: "RollbackStarted", Message: "back", Subject: subject("ns/p", "v1")},  // v1 again: its last entry
		{Reason: "UpgradeSucceeded", Message: "done", Subject: subject("ns/p", "v1")}, // recorded on v1
	}
	got := MomentsOf("a", events, rec)
	want := []Moment{
		{Trigger: OnAborted, Reason: "Aborting", Message: "aborting", Addon: "a", EventSubject: *subject("ns/p", "v2"), Started: t0.Add(60e9).Unix()},
		{Trigger: OnRolloutStarted, Reason: "UpgradeStarted", Message: "other", Addon: "a", EventSubject: *subject("ns/q", "v2")},
		{Trigger: OnRollbackStarted, Reason: "RollbackStarted", Message: "back", Addon: "a", EventSubject: *subject("ns/p", "v1"), Started: t0.Unix()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MomentsOf (-want +got):\n%s", diff)
	}
	// Without a history, every moment with a trigger counts (the notifier remembers them).
	if n := len(MomentsOf("a", events, nil)); n != 5 {
		t.Errorf("MomentsOf without a history: %d moments, want 5", n)
	}
}

func TestMark(t *testing.T) {
	rec := &history.Record{Addon: "a", Placements: []history.Placement{
		{Placement: "ns/p", Versions: []history.Version{
			{ID: "v1", Started: t0, Notified: []string{OnRolloutStarted}},
			{ID: "v2", Started: t0},
			{ID: "v1", Started: t0},
		}},
	}}
	before := rec.Placements[0].Versions[0].Notified
	ms := []Moment{
		{Trigger: OnRolloutCompleted, Addon: "a", EventSubject: *subject("ns/p", "v2")},
		{Trigger: OnAborted, Addon: "a", EventSubject: *subject("ns/p", "v2")},
		{Trigger: OnRollbackStarted, Addon: "a", EventSubject: *subject("ns/p", "v1")},
		{Trigger: OnRolloutStarted, Addon: "a", EventSubject: *subject("ns/gone", "v1")},
	}
	got, changed := Mark(rec, ms)
	if !changed {
		t.Fatal("Mark: not changed")
	}
	var notified [][]string
	for _, v := range got.Placements[0].Versions {
		notified = append(notified, v.Notified)
	}
	want := [][]string{{OnRolloutStarted}, {OnAborted, OnRolloutCompleted}, {OnRollbackStarted}}
	if diff := cmp.Diff(want, notified); diff != "" {
		t.Errorf("Notified after Mark (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, rec.Placements[0].Versions[0].Notified); diff != "" || rec.Placements[0].Versions[1].Notified != nil {
		t.Errorf("Mark changed its input: %v", rec.Placements[0].Versions)
	}
	// Marking what is marked changes nothing: no history write for it.
	if _, changed := Mark(got, ms); changed {
		t.Error("Mark of marked moments: changed")
	}
	// Once marked, the moments are no longer moments.
	var events []rolloutplan.Event
	for _, m := range ms[:3] {
		s := m.EventSubject
		events = append(events, rolloutplan.Event{Reason: ReasonsOf(m.Trigger)[0], Subject: &s})
	}
	if left := MomentsOf("a", events, got); len(left) != 0 {
		t.Errorf("MomentsOf after Mark: %v", left)
	}
	// The record survives its encoding (the ConfigMap).
	data, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := history.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, back); diff != "" {
		t.Errorf("history round trip (-want +got):\n%s", diff)
	}
}

// The guide's table of triggers lists every trigger with the event reasons that fire it.
func TestGuideListsTheTriggers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "guides", "notifications.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 3 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`on-") {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.TrimSpace(cells[2])
		}
	}
	for _, trig := range Triggers() {
		if got, want := rows[trig], strings.Join(ReasonsOf(trig), ", "); got != want {
			t.Errorf("docs/guides/notifications.md: %s lists reasons %q, want %q", trig, got, want)
		}
	}
	if len(rows) != len(Triggers()) {
		t.Errorf("docs/guides/notifications.md lists %d triggers, want %d", len(rows), len(Triggers()))
	}
}
