package controller

// Bounded work from hostile or careless objects (issue 37, item 5) on a real API server.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/apiaudit"
	"github.com/addonops/addonops/internal/localhub"
)

// discoveryRequests counts the discovery requests (GET /api, /apis and their group/versions) user
// made, by the API server's audit log, received between from and to.
func discoveryRequests(t *testing.T, log, user string, from, to time.Time) int {
	t.Helper()
	n := 0
	err := apiaudit.Read(log, func(r apiaudit.Request) {
		if r.User != user || r.Resource != "" || r.Verb != "get" || r.Received.Before(from) || r.Received.After(to) {
			return
		}
		path, _, _ := strings.Cut(r.URI, "?")
		if path == "/api" || path == "/apis" || strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/apis/") {
			n++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// madeUpConfigs are n config references of kinds no API server serves.
func madeUpConfigs(prefix string, n int, namespace string) []addonv1alpha1.AddOnConfig {
	out := make([]addonv1alpha1.AddOnConfig, n)
	for i := range out {
		out[i] = addonv1alpha1.AddOnConfig{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: fmt.Sprintf("%s%d.example.com", prefix, i), Resource: "widgets"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: namespace, Name: "w"},
		}
	}
	return out
}

// 500 made-up config kinds cost the API server a bounded number of discovery requests, counted by
// its own audit log for the controller's identity:
//   - in an MCA's spec.configs, not in the CMA's supportedConfigs, none at all: they are never
//     looked up, and the MCA says ConfigurationUnsupported (naming five and counting the rest, in
//     a status the API server accepts);
//   - in the CMA's supportedConfigs with default configs (the administrator's mistake), at most
//     one discovery per hubcache.RediscoverAfter, shared by all of them.
//
// Before, every unserved kind reset the REST mapper and asked discovery again every 10 s: some
// 500 discoveries per 10 s.
func TestUnservedConfigKindsBoundedDiscoveryIntegration(t *testing.T) {
	t.Parallel()
	const user = "addonops-discovery-test"
	auditArgs, auditLog, err := apiaudit.APIServerArgs(t.TempDir(), user)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := localhub.Start(context.Background(), localhub.Options{ExtraAPIServerArgs: auditArgs, Users: []string{user}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hub.Stop(); err != nil {
			t.Errorf("stopping the hub: %v", err)
		}
	})
	e := newEnvOn(t, hub, envOptions{noAgent: true})
	e.controllerConfig = hub.UserConfig(user)
	e.ensureClusters("c1")
	e.adc("cfg-default", "v1")
	e.cma(nil)
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}
		cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "cfg-default"}
	})
	if _, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster("c1")).Create(e.ctx, &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.cluster("c1")},
		Spec:       addonv1alpha1.ManagedClusterAddOnSpec{Configs: madeUpConfigs("mca", 500, e.cluster("c1"))},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(Options{})
	e.waitFor(30*time.Second, "Configured=False ConfigurationUnsupported naming 5 of 500 types", func() bool {
		m := e.rec.mca(e.cluster("c1"))
		if m == nil {
			return false
		}
		c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionConfigured)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == addonstatus.ReasonConfigurationUnsupported &&
			strings.Contains(c.Message, "and 495 more unsupported types")
	})

	// Two and a half rediscovery periods: the unsupported kinds cost nothing.
	window := 5 * hubcache.RediscoverAfter / 2
	from := time.Now()
	time.Sleep(window)
	n := discoveryRequests(t, auditLog, user, from, time.Now())
	t.Logf("%d discovery requests in %s for 500 unsupported kinds in an MCA's spec", n, window)
	if n > 2 {
		t.Errorf("%d discovery requests in %s for 500 unsupported kinds in an MCA's spec, want none (at most one discovery)", n, window)
	}

	// The same number of unserved kinds the add-on does support (the administrator's CMA names
	// them): looked up, at most once per RediscoverAfter for all of them.
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		for _, c := range madeUpConfigs("cma", 500, e.name) {
			cma.Spec.SupportedConfigs = append(cma.Spec.SupportedConfigs, addonv1alpha1.ConfigMeta{ConfigGroupResource: c.ConfigGroupResource,
				DefaultConfig: &addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name}})
		}
	})
	time.Sleep(time.Second) // the first decision on the new spec looks them up
	from = time.Now()
	time.Sleep(window)
	// One discovery (GET /api and /apis) per period, and one more for a period that started in
	// the window.
	limit := 2 * (int(window/hubcache.RediscoverAfter) + 1)
	n = discoveryRequests(t, auditLog, user, from, time.Now())
	t.Logf("%d discovery requests in %s for 500 unserved supported kinds", n, window)
	if n > limit {
		t.Errorf("%d discovery requests in %s for 500 unserved supported kinds, want at most %d", n, window, limit)
	}
}
