//go:build integration

package ocmhub_test

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
)

// TestAddonManagerRunsAndStops: with Options.AddonManager, OCM's addon-manager runs next to the
// placement controller (it holds its lease, acquired after its start), its log is kept like the
// others', and Stop ends it too.
func TestAddonManagerRunsAndStops(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	ocm, err := ocmhub.Start(ctx, hub, ocmhub.Options{AddonManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("addon-manager running %s after launch", ocm.AddonManagerStartup.Round(time.Millisecond))
	if ocm.AddonManagerLog == "" || !strings.HasSuffix(ocm.AddonManagerLog, "addon-manager.log") {
		t.Errorf("AddonManagerLog = %q, want .../addon-manager.log", ocm.AddonManagerLog)
	}
	logs := ocm.LogFiles()
	if len(logs) != 2 || logs[1] != ocm.AddonManagerLog {
		t.Errorf("LogFiles() = %v, want the placement controller's and the addon-manager's", logs)
	}
	l, err := hub.Clients.Kube.CoordinationV1().Leases(ocmhub.PlacementNamespace).Get(ctx, "manager-lock", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the addon-manager's lease: %v", err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Errorf("lease manager-lock has no holder: %+v", l.Spec)
	}

	pids := ocm.PIDs()
	if len(pids) != 2 {
		t.Fatalf("PIDs() = %v, want the placement controller and the addon-manager", pids)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("process %d not running before Stop: %v", pid, err)
		}
	}
	if err := ocm.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(ocm.LogDir); !os.IsNotExist(err) {
		t.Errorf("log directory %s still there after Stop (%v)", ocm.LogDir, err)
	}
}

// TestAddonManagerBinaryMissing: a wrong $ADDONOPS_OCM_ADDON fails Start before anything runs,
// naming the variable; without AddonManager the variable is not looked at.
func TestAddonManagerBinaryMissing(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	t.Setenv("ADDONOPS_OCM_ADDON", "/nonexistent/ocm-addon")
	_, err := ocmhub.Start(ctx, hub, ocmhub.Options{AddonManager: true})
	if err == nil || !strings.Contains(err.Error(), "$ADDONOPS_OCM_ADDON") || !strings.Contains(err.Error(), "OCM addon-manager") {
		t.Fatalf("Start with a missing addon binary: err = %v, want one naming the OCM addon-manager and $ADDONOPS_OCM_ADDON", err)
	}
	ocm, err := ocmhub.Start(ctx, hub, ocmhub.Options{})
	if err != nil {
		t.Fatalf("Start without AddonManager looked at $ADDONOPS_OCM_ADDON: %v", err)
	}
	if err := ocm.Stop(); err != nil {
		t.Fatal(err)
	}
}
