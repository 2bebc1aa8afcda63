// Package notify sends notifications of an add-on's rollout moments (a rollout started, the
// canary passed, a batch failed, a rollback succeeded, ...) through argoproj's
// notifications-engine, the library Argo CD and Argo Rollouts send theirs with: services (Slack,
// Teams, webhook, email, ...), templates and triggers in the ConfigMap addonops-notifications-cm,
// secrets in the Secret addonops-notifications-secret, both in the controller's namespace, and
// subscriptions per add-on in the library's annotations on the ClusterManagementAddOn
// (notifications.argoproj.io/subscribe.<trigger>.<service>: <recipients>).
//
// A moment is a rollout decision's event (rolloutplan.Event) that a trigger names: the rollout
// reconciler hands the decision's events over once it wrote the CMA status they describe. Each
// moment is sent once per (trigger, add-on, placement, version): the triggers sent for a version
// are recorded in the add-on's version history (history.Version.Notified), so a restarted
// controller does not send them again. Sending never holds a rollout up: moments go to a bounded
// queue, each send has a timeout, and a failure is a Warning event (NotificationFailed) and the
// metric addonops_notifications_total{trigger,service,result}.
package notify

import (
	"slices"
	"sort"
	"strconv"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// The triggers: the names a subscription annotation and the ConfigMap's trigger.<name> keys use.
const (
	OnRolloutStarted      = "on-rollout-started"
	OnCanaryPassed        = "on-canary-passed"
	OnCanaryFailed        = "on-canary-failed"
	OnBatchFailed         = "on-batch-failed"
	OnVerificationFailed  = "on-verification-failed"
	OnPaused              = "on-paused"
	OnAborted             = "on-aborted"
	OnRollbackStarted     = "on-rollback-started"
	OnRollbackSucceeded   = "on-rollback-succeeded"
	OnRollbackFailed      = "on-rollback-failed"
	OnRolloutCompleted    = "on-rollout-completed"
	reasonVerificationBad = "VerificationFailed"
)

// triggerOfReason maps the reasons of the rollout decision's events (rolloutplan) to triggers.
// Install and upgrade are both a rollout; a failed install or upgrade stopped on its batches'
// failures (maxFailures), hence on-batch-failed; an abort is announced when it starts (Aborting)
// and, for an abort with nothing to revert, when it ends (Aborted): once per version either way.
var triggerOfReason = map[string]string{
	"InstallStarted":           OnRolloutStarted,
	"UpgradeStarted":           OnRolloutStarted,
	"CanaryPassed":             OnCanaryPassed,
	"CanaryPromoted":           OnCanaryPassed,
	"CanaryFailed":             OnCanaryFailed,
	"InstallFailed":            OnBatchFailed,
	"UpgradeFailed":            OnBatchFailed,
	reasonVerificationBad:      OnVerificationFailed,
	"Paused":                   OnPaused,
	"Aborting":                 OnAborted,
	"Aborted":                  OnAborted,
	"RollbackStarted":          OnRollbackStarted,
	"RollbackSucceeded":        OnRollbackSucceeded,
	"RollbackFailed":           OnRollbackFailed,
	"InstallSucceeded":         OnRolloutCompleted,
	"UpgradeSucceeded":         OnRolloutCompleted,
	"VerificationInconclusive": OnPaused,
}

// TriggerOf returns the trigger of an event reason, if any.
func TriggerOf(reason string) (string, bool) {
	t, ok := triggerOfReason[reason]
	return t, ok
}

// Triggers lists every trigger, sorted.
func Triggers() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range triggerOfReason {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// ReasonsOf lists the event reasons that fire trigger t, sorted.
func ReasonsOf(t string) []string {
	var out []string
	for r, tr := range triggerOfReason {
		if tr == t {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// Moment is one notification-worthy moment of a placement's rollout.
type Moment struct {
	Trigger string
	// Reason and Message are the event's.
	Reason, Message string
	Addon           string
	rolloutplan.EventSubject
	// Started is when the history's entry of the version started (zero without a history): a
	// version rolled back to later is a new entry with moments of its own.
	Started int64
}

// Key identifies the moment: it is sent once per key.
func (m Moment) Key() string {
	return m.Trigger + "\x00" + m.Addon + "\x00" + m.Placement + "\x00" + m.VersionID + "\x00" + strconv.FormatInt(m.Started, 10)
}

// MomentsOf returns the moments of a decision's events on add-on addon: the events of a placement
// whose reason a trigger names, the first per trigger and placement, without those rec (the
// version history as the decision leaves it; nil without one) records as sent.
func MomentsOf(addon string, events []rolloutplan.Event, rec *history.Record) []Moment {
	var out []Moment
	seen := map[string]bool{}
	for _, ev := range events {
		t, ok := triggerOfReason[ev.Reason]
		if !ok || ev.Subject == nil {
			continue
		}
		m := Moment{Trigger: t, Reason: ev.Reason, Message: ev.Message, Addon: addon, EventSubject: *ev.Subject}
		v := version(rec, m.Placement, m.VersionID)
		if v != nil {
			if slices.Contains(v.Notified, t) {
				continue
			}
			m.Started = v.Started.Unix()
		}
		if seen[m.Key()] {
			continue
		}
		seen[m.Key()] = true
		out = append(out, m)
	}
	return out
}

// version returns the latest entry of version id in placement's history, or nil.
func version(rec *history.Record, placement, id string) *history.Version {
	if rec == nil {
		return nil
	}
	p := rec.Placement(placement)
	if p == nil {
		return nil
	}
	for i := len(p.Versions) - 1; i >= 0; i-- {
		if p.Versions[i].ID == id {
			return &p.Versions[i]
		}
	}
	return nil
}

// Mark returns a copy of rec recording moments ms as sent (history.Version.Notified), and whether
// it differs from rec: a moment whose version the history does not hold is not recorded.
func Mark(rec *history.Record, ms []Moment) (*history.Record, bool) {
	if rec == nil || len(ms) == 0 {
		return rec, false
	}
	out := &history.Record{Addon: rec.Addon, Placements: slices.Clone(rec.Placements)}
	changed := false
	for _, m := range ms {
		i := slices.IndexFunc(out.Placements, func(p history.Placement) bool { return p.Placement == m.Placement })
		if i < 0 {
			continue
		}
		p := &out.Placements[i]
		for j := len(p.Versions) - 1; j >= 0; j-- {
			v := p.Versions[j]
			if v.ID != m.VersionID {
				continue
			}
			if !slices.Contains(v.Notified, m.Trigger) {
				p.Versions = slices.Clone(p.Versions) // rec's versions stay as they are
				v.Notified = append(slices.Clone(v.Notified), m.Trigger)
				slices.Sort(v.Notified)
				p.Versions[j] = v
				changed = true
			}
			break
		}
	}
	return out, changed
}
