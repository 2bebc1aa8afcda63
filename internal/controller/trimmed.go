package controller

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/addonops/addonops/internal/hubcache"
)

// EventReasonStatusTrimmed is the reason of the Warning event on a ManagedClusterAddOn or
// ManifestWork whose status is over the hub cache's per-object limits (hubcache's bound.go): the
// controller keeps and reads only part of it.
const EventReasonStatusTrimmed = "StatusTrimmed"

// trimmedEvent is the hub cache's OnTrimmed: a Warning event on the object, once per version, that
// names what was dropped. Objects of add-ons this controller does not act on (another add-on
// manager's, or another addonops controller's with --addons or Only) are only logged by the cache:
// their own manager reports them. An add-on whose CMA the cache does not show yet (it is starting)
// is reported.
func (c *Controller) trimmedEvent(t *hubcache.Trimmed) {
	if cma, err := c.hub.CMAs.Get(t.Addon); err == nil && !c.hub.Selected(cma) {
		return
	}
	c.recorder.Event(t.Reference(), corev1.EventTypeWarning, EventReasonStatusTrimmed,
		fmt.Sprintf("addonops-controller keeps only part of this %s's status (resourceVersion %s), which is over its per-object limits: dropped %s. "+
			"A managed cluster's agent writes this status; the limits keep one cluster from taking the controller's memory",
			t.Kind, t.ResourceVersion, strings.Join(t.Dropped, "; ")))
}
