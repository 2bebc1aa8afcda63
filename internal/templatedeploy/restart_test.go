//go:build integration

package templatedeploy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/testing/ocmhub"
)

// TestRestartWhileHeld: what the controller keeps in memory to save status writes is lost in a
// crash, and nothing depends on it. Here the hold is an hour, so nothing held is written by itself:
//
//  1. Install: OCM's work agent applies the work but the agent is not ready; the first
//     ManifestApplied=True waits in memory for the cluster's done write (statuswrite.Writer.Defer).
//     The controller restarts; the new one finds the work applied, holds ManifestApplied again, and
//     writes it with InstallSucceed once the agent is ready.
//  2. Upgrade: the new agent is ready and its health soak under way, in memory only
//     (rolloutplan.Interim). The controller restarts mid-soak; the new one starts the soak again from
//     its own first look, so the cluster is done no sooner than a whole soak after the restart: a
//     soak lost in a crash only ever gets longer, never shorter, and never taken from the health of
//     the version before.
func TestRestartWhileHeld(t *testing.T) {
	const addon, cluster = "restarted", "restarted1"
	const soak = 6 * time.Second
	e := newEnv(t, addon, envOptions{healthGate: true, healthSoak: soak.String(), interimHold: time.Hour})
	ocm := ocmhub.ForTest(t, e.hub, ocmhub.Options{StatusSyncInterval: time.Second})
	if _, err := ocm.AddClusters(e.ctx, ocmhub.Cluster{Name: cluster}); err != nil {
		t.Fatal(err)
	}
	e.cleanup(cluster)
	e.apply(agentTemplate("restarted-v1", addon, "1", ""))
	e.mcaInNamespace(cluster)
	e.cma("restarted-v1", "")

	deployments := e.c.Kube.AppsV1().Deployments(cluster)
	setReady := func() {
		t.Helper()
		d, err := deployments.Get(e.ctx, addon+"-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		if _, err := deployments.UpdateStatus(e.ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	worksApplied := func(generation int64) func() string {
		return func() string {
			ws := e.works(cluster)
			if len(ws) == 0 {
				return "no work yet"
			}
			for _, w := range ws {
				if w.Generation < generation || !workReady(&w) {
					return fmt.Sprintf("work %s not applied and available at generation %d (generation %d)", w.Name, generation, w.Generation)
				}
			}
			return ""
		}
	}

	// 1. Install: applied, not ready.
	e.waitFor(time.Minute, "the work applied by OCM's work agent", worksApplied(1))
	e.waitCondition(10*time.Second, cluster, "Progressing", "True/Installing")
	// Over 3s, the work agent's report reached the controller long since.
	e.holds(3*time.Second, "ManifestApplied held in memory", func() string {
		if got := condition(e.getMCA(cluster), "ManifestApplied"); got != "-" {
			return fmt.Sprintf("ManifestApplied %s was written while the cluster waits for health: the test no longer shows a change held in memory across a restart", got)
		}
		return ""
	})
	e.restart()
	// Over 3s, the new controller synced and looked at the cluster.
	e.holds(3*time.Second, "still installing after the restart", func() string {
		if got := condition(e.getMCA(cluster), "Progressing"); !strings.HasPrefix(got, "True/Installing") {
			return fmt.Sprintf("after the restart, Progressing %s while the agent is not ready", got)
		}
		return ""
	})
	setReady()
	e.waitCondition(time.Minute, cluster, "Progressing", "False/InstallSucceed")
	m := e.getMCA(cluster)
	if got := condition(m, "ManifestApplied"); !strings.HasPrefix(got, "True/AddonManifestApplied") {
		t.Errorf("installed after a restart, ManifestApplied %s: the change held by the controller before the restart was lost", got)
	}
	if got := condition(m, "Available"); !strings.HasPrefix(got, "True/ProbeAvailable") {
		t.Errorf("installed after a restart, Available %s", got)
	}

	// 2. Upgrade: the new pods become ready, the soak starts in memory, the controller restarts.
	e.apply(agentTemplate("restarted-v2", addon, "2", ""))
	e.setDefaultTemplate("restarted-v2")
	e.waitFor(time.Minute, "the new work generation applied", worksApplied(2))
	e.waitCondition(10*time.Second, cluster, "Progressing", "True/Upgrading")
	setReady()
	healthy := time.Now()
	// The work agent reports the ready Deployment within its 1s status sync; the controller then
	// soaks. Restart halfway through the soak.
	e.holds(soak/2, "upgrading through half the soak", func() string {
		if got := condition(e.getMCA(cluster), "Progressing"); !strings.HasPrefix(got, "True/Upgrading") {
			return fmt.Sprintf("Progressing %s %v after the new version became ready: the soak is %v", got, time.Since(healthy).Round(time.Millisecond), soak)
		}
		return ""
	})
	e.restart()
	restarted := time.Now()
	e.waitCondition(time.Minute, cluster, "Progressing", "False/UpgradeSucceed")
	done := time.Now()
	t.Logf("upgrade done %v after the new version became ready, %v after the restart halfway through the %v soak",
		done.Sub(healthy).Round(time.Millisecond), done.Sub(restarted).Round(time.Millisecond), soak)
	if took := done.Sub(restarted); took < soak {
		t.Errorf("upgrade done %v after the restart: the restarted controller's health soak (%v) counted time before it started", took.Round(time.Millisecond), soak)
	}
	m = e.getMCA(cluster)
	if hs := meta.FindStatusCondition(m.Status.Conditions, "HealthSoak"); hs == nil || hs.Reason != "Soaked" || hs.LastTransitionTime.Time.Before(restarted.Truncate(time.Second)) {
		t.Errorf("HealthSoak %+v: want Soaked, started by the restarted controller (at or after %s)", hs, restarted.Format(time.RFC3339))
	}
}
