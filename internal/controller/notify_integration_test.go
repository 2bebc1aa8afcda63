//go:build integration

package controller

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/simagent"
	"github.com/addonops/addonops/internal/testing/webhooks"
	"github.com/addonops/addonops/internal/verification"
)

// Notifications on the real API server: the shipped catalog (config/notifications/catalog.yaml)
// with webhook services pointing at local receivers.

// notificationReceiver starts a webhook receiver for the test recording what it is sent: the
// catalog's JSON body for a service named "webhook", only its message (Text) for any other; a body
// that is not what it expects fails the test.
func notificationReceiver(t *testing.T, catalogJSON bool) *webhooks.NotificationReceiver {
	r := webhooks.NewNotificationReceiver(webhooks.NotificationOptions{Text: !catalogJSON, OnError: func(err error) { t.Errorf("receiver: %v", err) }})
	t.Cleanup(r.Close)
	return r
}

// notificationConfig creates the catalog with webhook services (service name: URL) in the test's
// namespace, each retried once, quickly.
func (e *env) notificationConfig(urls map[string]string) {
	e.t.Helper()
	services := map[string]webhooks.Webhook{}
	for name, url := range urls {
		services[name] = webhooks.Webhook{URL: url, FastRetry: true}
	}
	cm, secret, err := webhooks.NotificationConfig(filepath.Join("..", ".."), e.name, services)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Kube.CoreV1().ConfigMaps(e.name).Create(e.ctx, cm, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.c.Kube.CoreV1().Secrets(e.name).Create(e.ctx, secret, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// subscribeAll returns the annotations subscribing to every trigger with service.
func subscribeAll(service string) map[string]string {
	out := map[string]string{}
	for _, t := range notify.Triggers() {
		out["notifications.argoproj.io/subscribe."+t+"."+service] = ""
	}
	return out
}

// Every trigger but on-verification-failed (TestNotificationsVerificationFailed) delivered once per
// placement and version, with the version id and the placement's clusters, through install,
// canary failure, rollback, pause, abort (with the controller restarted mid-abort), a failed batch
// and a failed rollback.
func TestNotificationsEveryTriggerOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{agentDelay: 300 * time.Millisecond})
	recv := notificationReceiver(t, true)
	// The catalog's JSON body goes to a service named "webhook".
	e.notificationConfig(map[string]string{"webhook": recv.URL})
	e.ensureClusters(append(slices.Clone(awsShorts), canaryShorts...)...)
	for _, c := range []string{"cfg-a", "cfg-b", "cfg-c", "cfg-d"} {
		e.adc(c, c)
	}
	e.placement("aws", [][]string{awsShorts})
	e.placement("canary", [][]string{canaryShorts})
	ann := subscribeAll("webhook")
	ann[addonv1alpha1.AddonLifecycleAnnotationKey] = addonv1alpha1.AddonLifecycleSelfManageAnnotationValue
	ann[rolloutplan.CanaryAnnotation] = `{"` + e.name + `/aws": "` + e.name + `/canary"}`
	e.cma(ann,
		install{placement: "aws", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})},
		install{placement: "canary", config: "cfg-a", strategy: allStrategy},
	)
	opts := Options{Notifications: &notify.Options{Namespace: e.name, SendTimeout: 10 * time.Second}}
	e.startController(opts)

	type want struct{ trigger, placement, cfg string }
	var wants []want
	expect := func(what string, ws ...want) {
		t.Helper()
		wants = append(wants, ws...)
		e.waitFor(30*time.Second, what+": notifications delivered", func() bool {
			got := recv.Notifications()
			for _, w := range ws {
				if !slices.ContainsFunc(got, func(d webhooks.Notification) bool {
					return d.Trigger == w.trigger && d.Placement == e.name+"/"+w.placement
				}) {
					return false
				}
			}
			return true
		})
	}

	// Install through the canary.
	e.waitInstalled(60*time.Second, "cfg-a", append(slices.Clone(awsShorts), canaryShorts...)...)
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonInstallSucceed, "4/4 install completed")
	expect("install", want{notify.OnRolloutStarted, "canary", "cfg-a"}, want{notify.OnRolloutCompleted, "canary", "cfg-a"},
		want{notify.OnCanaryPassed, "aws", "cfg-a"}, want{notify.OnRolloutStarted, "aws", "cfg-a"}, want{notify.OnRolloutCompleted, "aws", "cfg-a"})

	// cfg-b fails on the canary; the revert rolls the canary back.
	e.outcome("k2", "cfg-b", simagent.Fail)
	e.setBoth("cfg-b")
	e.waitProgression(30*time.Second, "canary", addonstatus.ReasonUpgradeFailed, "")
	expect("canary failed", want{notify.OnRolloutStarted, "canary", "cfg-b"}, want{notify.OnCanaryFailed, "canary", "cfg-b"})
	e.setBoth("cfg-a")
	e.waitProgression(30*time.Second, "canary", addonstatus.ReasonRollbackSucceeded, "")
	expect("canary rolled back", want{notify.OnRollbackStarted, "canary", "cfg-a"}, want{notify.OnRollbackSucceeded, "canary", "cfg-a"})

	// cfg-c passes the canary; aws is paused, resumed, then aborted while c1 goes back slowly,
	// the controller restarted meanwhile: Aborting before the restart and Aborted after it are one
	// on-aborted.
	e.outcome("c2", "cfg-c", simagent.Never)
	e.setBoth("cfg-c")
	e.waitCluster(60*time.Second, "c2", "cfg-c/cfg-a/True/Upgrading")
	e.annotate(operations.PauseAnnotation, e.name+"/aws")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonPaused, "")
	expect("paused", want{notify.OnRolloutStarted, "canary", "cfg-c"}, want{notify.OnRolloutCompleted, "canary", "cfg-c"},
		want{notify.OnCanaryPassed, "aws", "cfg-c"}, want{notify.OnRolloutStarted, "aws", "cfg-c"}, want{notify.OnPaused, "aws", "cfg-c"})
	e.annotate(operations.PauseAnnotation, "")
	e.waitProgression(10*time.Second, "aws", addonstatus.ReasonUpgrading, "")
	e.outcome("c1", "cfg-a", simagent.Never)
	id := e.desiredVersion("aws")
	e.annotate(operations.AbortAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("aws"): id}))
	e.waitProgression(30*time.Second, "aws", addonstatus.ReasonAborting, "")
	expect("aborting", want{notify.OnAborted, "aws", "cfg-c"})
	e.stopController()
	e.startController(opts)
	e.outcome("c1", "cfg-a", simagent.Succeed)
	e.agent.Recheck()
	e.waitProgression(60*time.Second, "aws", addonstatus.ReasonAborted, "")

	// cfg-d: c1 takes it, c2 fails (maxFailures 0): the batch failed; the revert of aws to cfg-a
	// fails on c1.
	e.outcome("c2", "cfg-d", simagent.Fail)
	e.setBoth("cfg-d")
	e.waitProgression(60*time.Second, "aws", addonstatus.ReasonUpgradeFailed, "")
	e.waitCluster(10*time.Second, "c1", "cfg-d/cfg-d/True/UpgradeSucceed")
	expect("batch failed", want{notify.OnRolloutStarted, "canary", "cfg-d"}, want{notify.OnRolloutCompleted, "canary", "cfg-d"},
		want{notify.OnCanaryPassed, "aws", "cfg-d"}, want{notify.OnRolloutStarted, "aws", "cfg-d"}, want{notify.OnBatchFailed, "aws", "cfg-d"})
	e.outcome("c1", "cfg-a", simagent.Fail)
	e.setConfig("aws", "cfg-a")
	e.waitProgression(60*time.Second, "aws", addonstatus.ReasonRollbackFailed, "")
	expect("rollback failed", want{notify.OnRollbackStarted, "aws", "cfg-a"}, want{notify.OnRollbackFailed, "aws", "cfg-a"})
	// Nothing is delivered twice, also a moment after the last.
	e.holds(2*time.Second, "no notification delivered twice", func() string {
		seen := map[string]bool{}
		for _, d := range recv.Notifications() {
			key := d.Trigger + " " + d.Placement + " " + d.VersionID
			if seen[key] {
				return key + " delivered twice"
			}
			seen[key] = true
		}
		return ""
	})

	// The version ids as the history records them, per placement and config.
	ids := map[string]string{}
	rec := e.historyRecord()
	for _, p := range []string{"aws", "canary"} {
		hp := rec.Placement(e.name + "/" + p)
		if hp == nil {
			t.Fatalf("no history of %s", p)
		}
		for _, v := range hp.Versions {
			ids[p+"/"+v.Configs[0].Name] = v.ID
		}
	}
	clusters := map[string][]string{"aws": e.clusters(awsShorts...), "canary": e.clusters(canaryShorts...)}
	got := recv.Notifications()
	byKey := map[string]int{}
	for _, d := range got {
		byKey[d.Trigger+" "+d.Placement+" "+d.VersionID]++
	}
	for _, w := range wants {
		key := w.trigger + " " + e.name + "/" + w.placement + " " + ids[w.placement+"/"+w.cfg]
		if n := byKey[key]; n != 1 {
			t.Errorf("%s (%s) delivered %d times, want once", key, w.cfg, n)
		}
		i := slices.IndexFunc(got, func(d webhooks.Notification) bool { return d.Trigger+" "+d.Placement+" "+d.VersionID == key })
		if i < 0 {
			continue
		}
		if d := got[i]; d.Addon != e.name || !slices.Equal(d.Clusters, clusters[w.placement]) {
			t.Errorf("%s: delivered %+v, want add-on %s and clusters %v", key, d, e.name, clusters[w.placement])
		}
	}
	for key, n := range byKey {
		if n != 1 {
			t.Errorf("%s delivered %d times", key, n)
		}
	}
	var triggers []string
	for _, d := range got {
		if !slices.Contains(triggers, d.Trigger) {
			triggers = append(triggers, d.Trigger)
		}
	}
	slices.Sort(triggers)
	wantTriggers := slices.DeleteFunc(notify.Triggers(), func(s string) bool { return s == notify.OnVerificationFailed })
	if !slices.Equal(triggers, wantTriggers) {
		t.Errorf("triggers delivered %v, want %v", triggers, wantTriggers)
	}
	if t.Failed() {
		for _, d := range got {
			t.Logf("delivered: %+v", d)
		}
	}
	// The history records what was sent.
	if hp := rec.Placement(e.name + "/aws"); hp != nil {
		if v := hp.Find(hp.Last().Configs); v == nil || !slices.Contains(v.Notified, notify.OnRollbackFailed) {
			t.Errorf("the history of aws does not record on-rollback-failed: %+v", hp.Last())
		}
	}
}

// A service answering 500 and one that never answers: the rollout completes regardless, each
// failure a NotificationFailed event and a count of addonops_notifications_total.
func TestNotificationsNeverBlockARollout(t *testing.T) {
	t.Parallel()
	e, all := upgradeEnvWith(t, func(e *env) (Options, map[string]string) {
		fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "broken", http.StatusInternalServerError)
		}))
		t.Cleanup(fail.Close)
		hang := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}))
		// Cleanups run last first: the hanging handlers return before the server closes.
		t.Cleanup(slow.Close)
		t.Cleanup(func() { close(hang) })
		// Service names short enough for annotation keys (63 characters after the prefix), and
		// used by no other test of this process: the metric is counted by service.
		e.notificationConfig(map[string]string{"fail": fail.URL, "hang": slow.URL})
		ann := subscribeAll("fail")
		maps.Copy(ann, subscribeAll("hang"))
		return Options{Notifications: &notify.Options{Namespace: e.name, SendTimeout: 2 * time.Second}}, ann
	})
	failSvc, hangSvc := "fail", "hang"
	e.setConfig("p", "cfg-b")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "upgrade completed")
	e.waitCMAEvent(30*time.Second, "Warning "+notify.EventReasonNotificationFailed, "to "+failSvc+" not sent (failed)")
	e.waitCMAEvent(30*time.Second, "Warning "+notify.EventReasonNotificationFailed, "to "+hangSvc+" not sent (timeout)")
	for _, c := range []struct{ service, result string }{{failSvc, notify.ResultFailed}, {hangSvc, notify.ResultTimeout}} {
		e.waitFor(30*time.Second, fmt.Sprintf("addonops_notifications_total{trigger=on-rollout-completed,service=%s,result=%s}", c.service, c.result), func() bool {
			return notificationCount(t, notify.OnRolloutCompleted, c.service, c.result) >= 1
		})
		if n := notificationCount(t, notify.OnRolloutStarted, c.service, notify.ResultSent); n != 0 {
			t.Errorf("%s: %v notifications counted sent", c.service, n)
		}
	}
}

// upgradeEnvWith is upgradeEnv (placement p: c1 c2 c3 one at a time, installed on cfg-a) with
// notifications: config sets them up and returns the controller's options and the CMA's
// subscription annotations.
func upgradeEnvWith(t *testing.T, config func(*env) (Options, map[string]string)) (*env, []string) {
	e := newEnv(t, envOptions{agentDelay: 100 * time.Millisecond})
	all := []string{"c1", "c2", "c3"}
	e.ensureClusters(all...)
	e.adc("cfg-a", "a")
	e.adc("cfg-b", "b")
	e.placement("p", [][]string{all})
	opts, ann := config(e)
	ann[addonv1alpha1.AddonLifecycleAnnotationKey] = addonv1alpha1.AddonLifecycleSelfManageAnnotationValue
	e.cma(ann, install{placement: "p", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})})
	e.startController(opts)
	e.waitInstalled(60*time.Second, "cfg-a", all...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstallSucceed, "install completed")
	return e, all
}

// notificationCount reads addonops_notifications_total{trigger,service,result} from the
// controller's registry.
func notificationCount(t *testing.T, trigger, service, result string) float64 {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "addonops_notifications_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsAre(m, map[string]string{"trigger": trigger, "service": service, "result": result}) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelsAre(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// A notification ConfigMap that does not parse: the rollout goes on, the add-on's subscriber is
// told by a NotificationFailed event that names the ConfigMap, and config-error is counted; once
// fixed, the next moment is sent.
func TestNotificationsBrokenConfig(t *testing.T) {
	t.Parallel()
	recv := notificationReceiver(t, false)
	e, all := upgradeEnvWith(t, func(e *env) (Options, map[string]string) {
		e.notificationConfig(map[string]string{"fixed": recv.URL})
		cm, err := e.c.Kube.CoreV1().ConfigMaps(e.name).Get(e.ctx, notify.ConfigMapName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["trigger.broken"] = "- when: [not a condition"
		if _, err := e.c.Kube.CoreV1().ConfigMaps(e.name).Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return Options{Notifications: &notify.Options{Namespace: e.name, SendTimeout: 2 * time.Second}}, subscribeAll("fixed")
	})
	e.waitCMAEvent(30*time.Second, "Warning "+notify.EventReasonNotificationFailed, "ConfigMap "+e.name+"/"+notify.ConfigMapName)
	e.waitFor(10*time.Second, "addonops_notifications_total{service=fixed,result=config-error}", func() bool {
		return notificationCount(t, notify.OnRolloutCompleted, "fixed", notify.ResultConfigError) >= 1
	})
	if got := recv.Notifications(); len(got) != 0 {
		t.Fatalf("delivered with a broken configuration: %+v", got)
	}

	cm, err := e.c.Kube.CoreV1().ConfigMaps(e.name).Get(e.ctx, notify.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, "trigger.broken")
	if _, err := e.c.Kube.CoreV1().ConfigMaps(e.name).Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.setConfig("p", "cfg-b")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitFor(30*time.Second, "on-rollout-completed of cfg-b delivered", func() bool {
		// The catalog's message for a service not named "webhook".
		return slices.ContainsFunc(recv.Notifications(), func(d webhooks.Notification) bool {
			return strings.Contains(d.Text, "Add-on "+e.name+" upgrade to version "+e.desiredVersion("p")+" completed")
		})
	})
}

// on-verification-failed: a batch whose webhook gate answers "fail" is delivered once, with the
// placement, the version id and the placement's clusters, then the automatic abort's moments.
func TestNotificationsVerificationFailed(t *testing.T) {
	t.Parallel()
	gate := gateReceiver(t)
	recv := notificationReceiver(t, true)
	ann := subscribeAll("webhook")
	ann[verification.Annotation] = verifyAll
	ann[operations.AutoAbortAnnotation] = "true"
	e, _ := verificationEnvWith(t, webhookTemplate(gate.URL, 1), ann, func(e *env) Options {
		e.notificationConfig(map[string]string{"webhook": recv.URL})
		return Options{Notifications: &notify.Options{Namespace: e.name, SendTimeout: 10 * time.Second}}
	})
	gate.Set("fail", 0)
	e.setConfig("p", "cfg-b")
	e.waitProgression(90*time.Second, "p", addonstatus.ReasonAborted, "aborted automatically")
	placement := e.name + "/p"
	var failed []webhooks.Notification
	e.waitFor(30*time.Second, "on-verification-failed and on-aborted delivered", func() bool {
		failed = failed[:0]
		aborted := false
		for _, d := range recv.Notifications() {
			switch {
			case d.Trigger == notify.OnVerificationFailed && d.Placement == placement:
				failed = append(failed, d)
			case d.Trigger == notify.OnAborted && d.Placement == placement:
				aborted = true
			}
		}
		return len(failed) > 0 && aborted
	})
	only := func() []webhooks.Notification {
		return slices.DeleteFunc(recv.Notifications(), func(d webhooks.Notification) bool {
			return d.Trigger != notify.OnVerificationFailed || d.Placement != placement
		})
	}
	e.holds(2*time.Second, "on-verification-failed delivered once", func() string {
		if n := len(only()); n != 1 {
			return fmt.Sprintf("delivered %d times", n)
		}
		return ""
	})
	failed = only()
	d := failed[0]
	if d.VersionID == "" || d.Kind != "Upgrade" || len(d.Clusters) == 0 {
		t.Errorf("on-verification-failed without the version id, kind or clusters: %+v", d)
	}
	vs := e.waitVerifications(10*time.Second, "p", "1:Failed")
	t.Logf("on-verification-failed: version %s, clusters %v, after a run of %s", d.VersionID, d.Clusters, vs[0].Finished.Sub(vs[0].Started.Time))
}
