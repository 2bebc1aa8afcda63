package hubcache_test

import (
	"testing"

	"github.com/addonops/addonops/controller"
	"github.com/addonops/addonops/controller/hubcache"
)

// The selection values are the rollout controller's --addons values (copied, not imported, so the
// controller package may import the template reconcilers).
func TestSelectionValuesMatchTheController(t *testing.T) {
	if hubcache.AddonsSelf != controller.AddonsSelf || hubcache.AddonsAll != controller.AddonsAll {
		t.Errorf("hubcache %q/%q, controller %q/%q", hubcache.AddonsSelf, hubcache.AddonsAll, controller.AddonsSelf, controller.AddonsAll)
	}
}
