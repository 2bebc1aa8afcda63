package addonrollout

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// notify hands the moments of a written decision (its events) to the notifier (package notify):
// those not sent before, with a subscriber, are recorded in the version history rec (the history
// the server holds after the decision; recordable false when it cannot be written) and queued.
// Recorded first: a moment is sent at most once, also when the controller restarts right after.
func (c *Rollout) notify(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, events []rolloutplan.Event, rec *history.Record, recordable bool) {
	n := c.opts.Notifier
	if n == nil {
		return
	}
	ms := n.Claim(ctx, cma, notify.MomentsOf(cma.Name, events, rec))
	if len(ms) == 0 {
		return
	}
	if recordable && c.opts.HistoryNamespace != "" {
		if marked, changed := notify.Mark(rec, ms); changed {
			if err := c.writeHistory(ctx, cma, marked); err != nil {
				// Sent anyway: this process remembers them; a restart before the next write of the
				// history may send them again.
				c.Recorder.Event(cma, corev1.EventTypeWarning, EventReasonHistoryWriteFailed, err.Error())
			}
		}
	}
	n.Send(cma, ms)
}
