//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
)

// TestDeployerMissing: nothing deploys the add-on (no add-on manager). Once the controller's
// deployer wait is over, `addonops status` says which clusters wait for a deployer and asks whether
// an add-on manager deploys the add-on, in the text and JSON views and in the placement's message;
// a cluster on which a deployer reports ManifestApplied leaves the list.
func TestDeployerMissing(t *testing.T) {
	s := rolloutsim.NewWith(t, localhub.ForTest(t), "no-deployer", rolloutsim.Options{NoDeployer: true,
		Controller: controller.Options{DeployerWait: 2 * time.Second}})
	s.Clusters("nd1", "nd2")
	s.Placement("all", "nd1", "nd2")
	s.CMA(rolloutsim.Install{Placement: "all", Config: s.Config("hello-config", "v1"), Strategy: allAtOnce})

	var last result
	waitOutput := func(what string, ok func(string) bool) {
		t.Helper()
		harness.Eventually(t, time.Minute, what, func() string {
			if last = status("no-deployer", "--kubeconfig", s.Hub.Kubeconfig); last.code == exitOK && ok(last.stdout) {
				return ""
			}
			return fmt.Sprintf("never shown; last output (exit %d):\n%s%s", last.code, last.stdout, last.stderr)
		})
	}
	waitOutput("both clusters waiting for a deployer", func(out string) bool {
		return strings.Contains(out, "2 cluster(s) (nd1, nd2) are waiting for the add-on's deployer to report ManifestApplied — is an add-on manager deploying this add-on?") &&
			strings.Contains(out, "2 waiting for the add-on's deployer (no ManifestApplied): nd1, nd2")
	})
	t.Logf("status:\n%s", last.stdout)

	r := status("no-deployer", "-o", "json", "--kubeconfig", s.Hub.Kubeconfig)
	var v rolloutview.View
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	if v.DeployerWait == nil || strings.Join(v.DeployerWait.Clusters, ",") != "nd1,nd2" || v.DeployerWait.Message != addonstatus.MessageWaitingForDeployer {
		t.Fatalf("-o json: deployerWait %+v", v.DeployerWait)
	}
	r = status("no-deployer", "--clusters", "--kubeconfig", s.Hub.Kubeconfig)
	if !strings.Contains(r.stdout, "installing... "+addonstatus.MessageWaitingForDeployer) {
		t.Fatalf("--clusters does not show the MCA's message:\n%s", r.stdout)
	}

	// A deployer reports on nd1.
	api := s.Hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns("nd1")
	for i := 0; ; i++ {
		m, err := api.Get(s.Ctx, "no-deployer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionManifestApplied, Status: metav1.ConditionTrue,
			Reason: "AddonManifestApplied", Message: "manifests of addon are applied successfully"})
		if _, err = api.UpdateStatus(s.Ctx, m, metav1.UpdateOptions{}); err == nil {
			break
		} else if i == 10 {
			t.Fatal(err)
		}
	}
	waitOutput("only nd2 waiting", func(out string) bool {
		return strings.Contains(out, "1 cluster(s) (nd2) are waiting for the add-on's deployer") &&
			strings.Contains(out, "1 waiting for the add-on's deployer (no ManifestApplied): nd2")
	})
}
