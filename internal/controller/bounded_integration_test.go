//go:build integration

package controller

// Bounded work from hostile or careless objects on a real API server.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/agentrbac"
	"github.com/addonops/addonops/internal/testing/apiaudit"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
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
	harness.Consistently(t, window, "at most one discovery for 500 unsupported kinds", func() string {
		if n := discoveryRequests(t, auditLog, user, from, time.Now()); n > 2 {
			return fmt.Sprintf("%d discovery requests", n)
		}
		return ""
	}, harness.Every(time.Second))
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
	// The first decision on the new spec looks them up: the window starts after it (no trace of
	// that decision to poll for: its lookups may be served by the discovery of the last period).
	harness.Pass(time.Second)
	from = time.Now()
	// One discovery (GET /api and /apis) per period, and one more for a period that started in
	// the window.
	limit := 2 * (int(window/hubcache.RediscoverAfter) + 1)
	harness.Consistently(t, window, "one discovery per period for 500 unserved supported kinds", func() string {
		if n := discoveryRequests(t, auditLog, user, from, time.Now()); n > limit {
			return fmt.Sprintf("%d discovery requests, want at most %d", n, limit)
		}
		return ""
	}, harness.Every(time.Second))
	n = discoveryRequests(t, auditLog, user, from, time.Now())
	t.Logf("%d discovery requests in %s for 500 unserved supported kinds", n, window)
	if n > limit {
		t.Errorf("%d discovery requests in %s for 500 unserved supported kinds, want at most %d", n, window, limit)
	}
}

// A managed cluster's agents, with the hub RBAC OCM gives them (internal/testing/agentrbac), write status
// far over the cache's limits: its ManifestWork's status feedback (1,000 values, one of 100 KiB)
// and 50 made-up work conditions, its MCA's 100 made-up conditions and a 30 KiB message. The
// controller's cache keeps a bounded part of each (hubcache's bound.go) and raises one Warning
// event StatusTrimmed per object version naming what it dropped; its own conditions stay, and it
// does not write the MCA again and again over the cut message.
func TestClusterStatusOverLimitsIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noAgent: true})
	e.ensureClusters("c1")
	cluster := e.cluster("c1")
	e.adc("cfg-default", "v1")
	e.cma(nil)
	e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual}
		cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: e.name, Name: "cfg-default"}
	})
	e.createUserMCA(cluster)
	// The add-on's work in the cluster's namespace, as a deployer writes it.
	workName := "addon-" + e.name + "-deploy-0"
	cm := []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}`)
	if _, err := e.c.Work.WorkV1().ManifestWorks(cluster).Create(e.ctx, &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: workName, Labels: map[string]string{addonv1alpha1.AddonLabelKey: e.name}},
		Spec:       workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: cm}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// With the template reconcilers the cache keeps the works' resource status (the deployer and
	// health prober read its feedback); they leave this add-on alone (it has no template).
	ctrl, _ := e.runController(Options{DeployTemplates: &templatedeploy.Options{Workers: 1}})
	e.waitFor(20*time.Second, "Configured=True", func() bool {
		m := e.rec.mca(cluster)
		return m != nil && meta.IsStatusConditionTrue(m.Status.Conditions, addonstatus.ConditionConfigured)
	})

	if err := agentrbac.Apply(e.ctx, e.c.Kube, cluster); err != nil {
		t.Fatal(err)
	}
	agent, err := agentrbac.Clients(e.hub.Config, cluster)
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	fake := func(n int) []metav1.Condition {
		out := make([]metav1.Condition, n)
		for i := range out {
			out[i] = metav1.Condition{Type: fmt.Sprintf("example.com/Fake%d", i), Status: metav1.ConditionTrue, Reason: "Fake", Message: "fake", LastTransitionTime: now}
		}
		return out
	}
	huge := strings.Repeat("v", 100<<10)
	var workRV string
	if err := retryConflicts(func() error {
		w, err := agent.Work.WorkV1().ManifestWorks(cluster).Get(e.ctx, workName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		vals := []workv1.FeedbackValue{{Name: "PodPhase", Value: workv1.FieldValue{Type: workv1.String, String: &huge}}}
		for i := range 1000 {
			v := int64(i)
			vals = append(vals, workv1.FeedbackValue{Name: fmt.Sprintf("v%d", i), Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}})
		}
		w.Status.Conditions = append(fake(50), metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "ok", LastTransitionTime: now})
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Ordinal: 0, Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "default", Name: "x"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: vals},
			Conditions:      []metav1.Condition{},
		}}
		w, err = agent.Work.WorkV1().ManifestWorks(cluster).UpdateStatus(e.ctx, w, metav1.UpdateOptions{})
		if err == nil {
			workRV = w.ResourceVersion
		}
		return err
	}); err != nil {
		t.Fatalf("the work agent's status write: %v", err)
	}
	var mcaRV string
	if err := retryConflicts(func() error {
		m, err := agent.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Get(e.ctx, e.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		m.Status.Conditions = append(fake(100), m.Status.Conditions...)
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionTrue,
			Reason: "Lease", Message: strings.Repeat("a", 30<<10)})
		m, err = agent.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).UpdateStatus(e.ctx, m, metav1.UpdateOptions{})
		if err == nil {
			mcaRV = m.ResourceVersion
		}
		return err
	}); err != nil {
		t.Fatalf("the registration agent's status write: %v", err)
	}

	// The cache holds the versions the agents wrote, bounded.
	var cachedWork *workv1.ManifestWork
	var cachedMCA *addonv1alpha1.ManagedClusterAddOn
	e.waitFor(20*time.Second, "the agents' versions in the cache", func() bool {
		obj, ok, _ := ctrl.hub.WorkInformer.GetIndexer().GetByKey(cluster + "/" + workName)
		w, _ := obj.(*workv1.ManifestWork)
		m, err := ctrl.hub.MCAs.ManagedClusterAddOns(cluster).Get(e.name)
		if !ok || w == nil || err != nil {
			return false
		}
		cachedWork, cachedMCA = w, m
		return w.ResourceVersion == workRV && m.ResourceVersion == mcaRV
	})
	vals := cachedWork.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
	if len(vals) != hubcache.MaxFeedbackValues || vals[0].Name != "v0" {
		t.Errorf("the cache keeps %d feedback values (the first %q), want %d without the 100 KiB one", len(vals), vals[0].Name, hubcache.MaxFeedbackValues)
	}
	if n := len(cachedWork.Status.Conditions); n != 1+hubcache.MaxOtherConditions || meta.FindStatusCondition(cachedWork.Status.Conditions, workv1.WorkApplied) == nil {
		t.Errorf("the cache keeps %d work conditions, want Applied and %d others", n, hubcache.MaxOtherConditions)
	}
	if n := len(cachedMCA.Status.Conditions); n > 12+hubcache.MaxOtherConditions {
		t.Errorf("the cache keeps %d MCA conditions", n)
	}
	if c := meta.FindStatusCondition(cachedMCA.Status.Conditions, addonstatus.ConditionAvailable); c == nil || len(c.Message) > addonstatus.MaxMessage {
		t.Errorf("the cached Available condition: %v", c)
	}
	if !meta.IsStatusConditionTrue(cachedMCA.Status.Conditions, addonstatus.ConditionConfigured) {
		t.Errorf("the controller's own Configured condition was dropped: %+v", cachedMCA.Status.Conditions)
	}

	// One Warning event per object version, naming what was dropped.
	events := func(kind, name string) []corev1.Event {
		list, err := e.c.Kube.CoreV1().Events(cluster).List(e.ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", kind), fields.OneTermEqualSelector("involvedObject.name", name),
			fields.OneTermEqualSelector("reason", EventReasonStatusTrimmed)).String()})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	e.waitFor(10*time.Second, "StatusTrimmed events on the work and the MCA", func() bool {
		return len(events("ManifestWork", workName)) > 0 && len(events("ManagedClusterAddOn", e.name)) > 0
	})
	e.quiet(3 * time.Second) // the controller does not write the MCA over and over
	for _, tc := range []struct {
		kind, name, rv string
		want           []string
	}{
		{"ManifestWork", workName, workRV, []string{`status feedback values over 1024 bytes: "PodPhase" (102408 bytes)`, "936 status feedback values beyond the 64 kept",
			"status.conditions: 42 conditions of types addonops does not read, beyond the 8 it keeps"}},
		{"ManagedClusterAddOn", e.name, mcaRV, []string{"status.conditions: 92 conditions of types addonops does not read", "the message of Available (30720 bytes) cut to 2048 bytes"}},
	} {
		evs := events(tc.kind, tc.name)
		if len(evs) != 1 || evs[0].Count > 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].InvolvedObject.ResourceVersion != tc.rv {
			t.Errorf("%s events: %+v, want one Warning for resourceVersion %s", tc.kind, evs, tc.rv)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(evs[0].Message, w) {
				t.Errorf("%s event %q does not say %q", tc.kind, evs[0].Message, w)
			}
		}
	}
}

// retryConflicts runs f until it succeeds or fails with another error than a conflict.
func retryConflicts(f func() error) error {
	for {
		if err := f(); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// A version history ConfigMap in the controller's namespace that the add-on's CMA does not own
// (forged by whoever may create ConfigMaps there, or left by a deleted add-on of the same name):
// the controller ignores it, says so once with a Warning event VersionHistoryInvalid on the CMA,
// never writes over it, and rolls the add-on out without it. (Before: it read the forged record,
// taking its versions for known-good ones, and wrote its own on top.)
func TestForgedHistoryIsRefusedIntegration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1")
	e.adc("cfg-a", "v1")
	e.placement("p", [][]string{{"c1"}})
	e.cma(nil, install{placement: "p", config: "cfg-a", strategy: allStrategy})
	cma, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(e.ctx, e.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	completed := metav1.Now()
	forged := &history.Record{Addon: e.name, Placements: []history.Placement{{Placement: e.name + "/p", Versions: []history.Version{{
		ID: "f0f0f0f0f0", Configs: []history.Config{{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs", Namespace: e.name, Name: "cfg-forged", SpecHash: "forged"}},
		Kind: "Install", Started: completed, Completed: &completed, Result: history.Succeeded}}}}}
	data, err := forged.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The harness's controllers keep histories in "default".
	cms := e.c.Kube.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(e.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: history.ConfigMapName(e.name),
		Labels:      map[string]string{history.AddonLabel: history.AddonLabelValue(e.name)},
		Annotations: map[string]string{history.AddonAnnotation: e.name},
		// Named like the CMA, with another UID: a deleted add-on's record, or a forgery.
		OwnerReferences: []metav1.OwnerReference{{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ClusterManagementAddOn", Name: e.name, UID: "0d1e7ed0-0000-0000-0000-000000000000"}}},
		Data: map[string]string{history.DataKey: data}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), cm.Name, metav1.DeleteOptions{}) })

	e.startController(Options{})
	e.waitProgression(20*time.Second, "p", addonstatus.ReasonInstallSucceed, "1/1 install completed")
	invalid := func() []corev1.Event {
		list, err := e.c.Kube.CoreV1().Events("").List(e.ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.kind", "ClusterManagementAddOn"), fields.OneTermEqualSelector("involvedObject.name", e.name),
			fields.OneTermEqualSelector("reason", "VersionHistoryInvalid")).String()})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	e.waitFor(10*time.Second, "a VersionHistoryInvalid event", func() bool { return len(invalid()) > 0 })
	want := fmt.Sprintf("its ownerReference names ClusterManagementAddOn %s with UID [0d1e7ed0-0000-0000-0000-000000000000], not the add-on's %s", e.name, cma.UID)
	if evs := invalid(); len(evs) != 1 || evs[0].Count > 1 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Message, want) {
		t.Errorf("VersionHistoryInvalid events %+v, want one Warning saying %q", evs, want)
	}
	now, err := cms.Get(e.ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != cm.ResourceVersion || now.Data[history.DataKey] != data {
		t.Errorf("the controller wrote over a history ConfigMap its add-on does not own:\n%s", now.Data[history.DataKey])
	}
}
