//go:build integration

package e2e

import "testing"

// TestEndToEnd runs every scenario on one hub, one OCM (placement controller and a work agent per
// cluster) and one addonops controller, one scenario after the other: OCM allows one placement
// controller per hub, and each scenario is a different add-on, as on a real hub.
func TestEndToEnd(t *testing.T) {
	s := newSuite(t)
	t.Run("rollout-examples", func(t *testing.T) { testRolloutExamples(t, s) })
	t.Run("bad-version", func(t *testing.T) { testBadVersion(t, s) })
	t.Run("hello-template", func(t *testing.T) { testHelloTemplate(t, s) })
}
