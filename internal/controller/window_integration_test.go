//go:build integration

package controller

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/maintwindow"
)

// A deny window in force: a new version starts on no cluster, and the placement's status says
// which window holds it and when the next one opens; the annotation edited so that the window
// no longer covers now, the version rolls out to completion.
func TestMaintenanceWindowHoldsANewVersion(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnv(t, 0, progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{}), [][]string{{"c1", "c2", "c3"}})
	// A daily window that began a minute ago (UTC) and lasts two hours: closed now, open at its end.
	start := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	deny := func(hour int) string {
		return fmt.Sprintf(`[{"kind": "deny", "schedule": "%d %d * * *", "duration": "2h"}]`, start.Minute(), hour)
	}
	e.annotate(maintwindow.Annotation, deny(start.Hour()))
	e.setConfig("p", "cfg-b")
	opens := start.Add(2 * time.Hour).Format(time.RFC3339)
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonWaitingForWindow,
		fmt.Sprintf(`deny window 0 ("%d %d * * *" for 2h, UTC) is active; the next window opens at %s`, start.Minute(), start.Hour(), opens))
	e.waitCMAEvent(10*time.Second, addonstatus.ReasonWaitingForWindow, "placement "+e.name+"/p: waiting for a maintenance window")
	e.quiet(time.Second)
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters(all...)); i >= 0 {
		t.Fatalf("a cluster got cfg-b while the window was closed (event %d)", i)
	}
	e.waitProgression(time.Second, "p", addonstatus.ReasonWaitingForWindow, "0/3 clusters done, 0 in progress")

	// The same window twelve hours later: not in force now.
	e.annotate(maintwindow.Annotation, deny((start.Hour()+12)%24))
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed")
	e.waitCMAEvent(10*time.Second, "WindowOpened", "placement "+e.name+"/p: a maintenance window opened")
	if n := e.rec.maxInFlight("cfg-b"); n > 1 {
		t.Fatalf("%d clusters in flight, maxConcurrency is 1", n)
	}
}
