package controller

// Objects the API server accepted but OCM's Go types cannot hold (package hubcache decodes every
// object on its own and caches a placeholder, the Go type with the metadata only, for such an
// object): what the controller does with them and how it says so.
//
//   - A ClusterManagementAddOn: nothing is installed, removed or rolled out for it; the rollout
//     reconciler writes one install progression per spec.installStrategy.placements entry (read
//     from the object as the API server returned it) with Progressing=False, reason
//     InvalidRolloutStrategy when the field is in a rollout strategy (found by package
//     rolloutrules, the rollout-strategy function's rules), else Undecodable, and a message naming
//     the field, the value and the fix; one Warning event when that message appears.
//   - Any other kind: a Warning event on the object and an error log, once per version and problem.
//     An MCA is a cluster that cannot be configured (never written, never counted done, named in its
//     placement's progression); a Placement's clusters keep their configs; a PlacementDecision makes
//     its placement's clusters unknown (MCAs are kept, nothing moves); a ManifestWork holds its MCA's
//     progress where it is; a ManagedCluster is read for its metadata only.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/hubcache"
)

// EventReasonUndecodable is the reason of the Warning event on an object the controller cannot
// decode.
const EventReasonUndecodable = addonstatus.ReasonUndecodable

// undecodableConsequence says what the controller does without an object of each kind.
var undecodableConsequence = map[string]string{
	hubcache.KindManagedClusterAddOn: "the rollout neither configures nor counts this cluster's add-on, and names it in its placement's progression",
	hubcache.KindManagedCluster:      "the controller reads only its metadata",
	hubcache.KindPlacement:           "the add-ons it installs keep their configs on its clusters",
	hubcache.KindPlacementDecision:   "its placement's clusters are unknown: add-ons keep their ManagedClusterAddOns and configs there",
	hubcache.KindManifestWork:        "its add-on's progress on this cluster stays where it is",
}

// undecodableEvent is the hub cache's OnUndecodable: a Warning event on the object. CMAs are the
// rollout reconciler's (their progressions say it, for the managed ones).
func (c *Controller) undecodableEvent(e *hubcache.DecodeError) {
	if e.GVK.Kind == hubcache.KindClusterManagementAddOn {
		return
	}
	c.recorder.Event(e.Reference(), corev1.EventTypeWarning, EventReasonUndecodable,
		fmt.Sprintf("addonops-controller cannot decode this %s (resourceVersion %s): %v; fix the field (the API server accepts the value, but OCM's Go types cannot hold it). Until then %s",
			e.GVK.Kind, e.ResourceVersion, e.Err, undecodableConsequence[e.GVK.Kind]))
}
