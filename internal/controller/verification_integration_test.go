//go:build integration

package controller

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/operations"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/promserver"
	"github.com/addonops/addonops/internal/testing/ssapply"
	"github.com/addonops/addonops/internal/testing/webhooks"
	"github.com/addonops/addonops/internal/verification"
)

// Verification gates on the real API server: addonops' own CRDs for Argo Rollouts' template kinds
// (config/components/verification), templates stored as users write them, a webhook receiver and
// a real Prometheus server as the gates' providers.

var crdOnce sync.Once

// ensureAnalysisTemplateCRDs installs config/components/verification's CRDs on the shared hub once
// and waits until they are served.
func (e *env) ensureAnalysisTemplateCRDs() {
	e.t.Helper()
	var err error
	crdOnce.Do(func() {
		var crds []*unstructured.Unstructured
		if crds, err = ssapply.DecodeFile("config/components/verification/analysistemplates.yaml"); err == nil {
			err = localhub.ApplyCRDs(e.ctx, e.c, "addonops-test", crds)
		}
	})
	if err != nil {
		e.t.Fatalf("installing config/components/verification's CRDs: %v", err)
	}
}

// analysisTemplate stores an AnalysisTemplate (YAML, as a user writes it) in the test's namespace.
func (e *env) analysisTemplate(src string) {
	e.t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(src), &obj); err != nil {
		e.t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(e.name)
	if _, err := e.c.Dynamic.Resource(analysisTemplates).Namespace(e.name).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating AnalysisTemplate %s: %v", u.GetName(), err)
	}
}

// verifications reads the history's verification runs of placement's last version: "1:Successful
// 2:Failed".
func (e *env) verifications(placement string) (string, []history.Verification) {
	rec := e.historyRecord()
	if rec == nil {
		return "", nil
	}
	last := rec.Placement(e.name + "/" + placement).Last()
	if last == nil {
		return "", nil
	}
	var parts []string
	for _, v := range last.Verifications {
		s := fmt.Sprintf("%d:%s", v.Batch, v.Phase)
		if v.Promoted {
			s += ":promoted"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " "), last.Verifications
}

func (e *env) waitVerifications(timeout time.Duration, placement, want string) []history.Verification {
	e.t.Helper()
	var got string
	var vs []history.Verification
	e.waitFor(timeout, "verifications of "+placement+": "+want, func() bool {
		got, vs = e.verifications(placement)
		return got == want
	})
	return vs
}

// gateReceiver starts the webhook gate's receiver for the test, answering "pass" at once until
// the test changes it.
func gateReceiver(t *testing.T) *webhooks.GateReceiver {
	g := webhooks.NewGateReceiver(webhooks.GateOptions{Verdict: "pass"})
	t.Cleanup(g.Close)
	return g
}

// webhookTemplate is a web gate: POST the batch, pass on {"verdict": "pass"}, fail on "fail";
// a request that takes more than timeout seconds is an error, and one error ends the metric
// (Error: inconclusive).
func webhookTemplate(url string, timeout int) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: webhook
spec:
  args:
  - name: version
  metrics:
  - name: webhook
    successCondition: result == "pass"
    failureCondition: result == "fail"
    consecutiveErrorLimit: 0
    provider:
      web:
        url: ` + url + `/verify?version={{args.version}}
        method: POST
        jsonPath: "{$.verdict}"
        timeoutSeconds: ` + fmt.Sprint(timeout) + `
`
}

// verificationEnv: placement "p" (c1..c4, two clusters at a time, maxFailures 0) at cfg-a, its
// batches verified with the template src (stored first).
func verificationEnv(t *testing.T, src string, annotations map[string]string) (*env, []string) {
	return verificationEnvWith(t, src, annotations, func(*env) Options { return Options{} })
}

// verificationEnvWith is verificationEnv with the controller's options from opts, called once the
// test's namespace exists (for what the options need in it).
func verificationEnvWith(t *testing.T, src string, annotations map[string]string, opts func(*env) Options) (*env, []string) {
	e := newEnv(t, envOptions{agentDelay: 200 * time.Millisecond})
	all := []string{"c1", "c2", "c3", "c4"}
	e.ensureClusters(all...)
	e.adc("cfg-a", "a")
	e.adc("cfg-b", "b")
	e.ensureAnalysisTemplateCRDs()
	e.analysisTemplate(src)
	e.placement("p", [][]string{all})
	ann := map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}
	for k, v := range annotations {
		ann[k] = v
	}
	e.cma(ann, install{placement: "p", config: "cfg-a", strategy: progressive(intstr.FromInt32(2), clusterv1alpha1.RolloutConfig{})})
	e.startController(opts(e))
	e.waitInstalled(60*time.Second, "cfg-a", all...)
	// The install was verified too, batch by batch; the upgrade below starts from there.
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonInstallSucceed, "install completed")
	return e, all
}

const verifyAll = `[{"placement": "*", "template": "webhook"}]`

// A webhook gate passes batch by batch: the second batch starts only after the first one's verdict,
// each run is in the version history and its events.
func TestVerificationWebhookGatePasses(t *testing.T) {
	t.Parallel()
	rc := gateReceiver(t)
	// The receiver holds its answer while the test looks: a timeout longer than that.
	e, all := verificationEnv(t, webhookTemplate(rc.URL, 30), map[string]string{verification.Annotation: verifyAll})
	installRuns := len(rc.Runs())
	rc.Hold()
	e.setConfig("p", "cfg-b")
	e.waitFor(60*time.Second, "the first batch POSTed to the receiver", func() bool { return len(rc.Runs()) > installRuns })
	first := rc.Runs()[installRuns]
	if strings.Join(first.Clusters, ",") != strings.Join(e.clusters("c1", "c2"), ",") || first.Addon != e.name || first.Placement != e.name+"/p" || first.Version != e.desiredVersion("p") {
		t.Fatalf("the receiver got %+v, want batch 1 (c1, c2) of version %s", first, e.desiredVersion("p"))
	}
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonVerifying, "verifying batch 1 of version "+first.Version+" (2 clusters: "+strings.Join(first.Clusters, ", ")+") with AnalysisTemplate "+e.name+"/webhook")
	e.waitCMAEvent(10*time.Second, "VerificationStarted", "placement "+e.name+"/p: verifying batch 1")
	// While the gate decides, no cluster of the next batch starts.
	e.quiet(time.Second)
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c3", "c4")); i >= 0 {
		t.Fatalf("c3 or c4 got cfg-b (event %d) while batch 1 was being verified", i)
	}
	released := time.Now()
	rc.Release()
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	vs := e.waitVerifications(10*time.Second, "p", "1:Successful 2:Successful")
	if vs[1].Clusters != 2 || strings.Join(vs[1].Sample, ",") != strings.Join(e.clusters("c3", "c4"), ",") || !strings.Contains(vs[1].Message, "every metric passed") {
		t.Fatalf("history of batch 2: %+v", vs[1])
	}
	e.waitCMAEvent(10*time.Second, "VerificationPassed", "placement "+e.name+"/p: the verification of batch 2")
	runs := rc.Runs()
	t.Logf("webhook gate: batch 1 decided %s after its verdict was released; batch 2 POSTed %s after batch 1's release",
		vs[0].Finished.Sub(released.Truncate(time.Second)).Round(time.Second), runs[len(runs)-1].Arrived.Sub(released).Round(10*time.Millisecond))
}

// A webhook gate that fails the first batch fails its clusters: maxFailures 0 is exceeded and
// auto-abort returns them; the next batch never starts.
func TestVerificationWebhookGateFails(t *testing.T) {
	t.Parallel()
	rc := gateReceiver(t)
	e, _ := verificationEnv(t, webhookTemplate(rc.URL, 1), map[string]string{verification.Annotation: verifyAll, operations.AutoAbortAnnotation: "true"})
	rc.Set("fail", 0)
	start := time.Now()
	e.setConfig("p", "cfg-b")
	e.waitProgression(90*time.Second, "p", addonstatus.ReasonAborted, "aborted automatically: more clusters failed than maxFailures allows")
	e.waitCMAEvent(10*time.Second, "Warning VerificationFailed", "placement "+e.name+"/p: the verification of batch 1")
	e.waitCluster(30*time.Second, "c1", "cfg-a/cfg-a/True/RollbackSucceeded")
	e.waitCluster(30*time.Second, "c2", "cfg-a/cfg-a/True/RollbackSucceeded")
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c3", "c4")); i >= 0 {
		t.Fatalf("c3 or c4 got cfg-b (event %d) after batch 1 failed its verification", i)
	}
	vs := e.waitVerifications(10*time.Second, "p", "1:Failed")
	e.waitVersions(10*time.Second, "p", "cfg-a:Superseded:c cfg-b:Aborted")
	t.Logf("webhook gate: batch 1 failed %s after its run started (%s after the change)", vs[0].Finished.Sub(vs[0].Started.Time), time.Since(start).Round(100*time.Millisecond))
}

// A webhook gate that passes the first batch and fails the second: the second batch's clusters
// are failed in their MCAs too (UpgradeFailed, naming the run), written once and not rewritten,
// while the first batch's stay UpgradeSucceed; without auto-abort the rollout stops there. A retry
// verifies them again (a new batch) and their MCAs follow: the version completes.
func TestVerificationWebhookGateFailsTheSecondBatch(t *testing.T) {
	t.Parallel()
	rc := gateReceiver(t)
	e, all := verificationEnv(t, webhookTemplate(rc.URL, 30), map[string]string{verification.Annotation: verifyAll})
	installRuns := len(rc.Runs())
	rc.Hold()
	from := e.rec.count()
	e.setConfig("p", "cfg-b")
	e.waitFor(60*time.Second, "the first batch POSTed to the receiver", func() bool { return len(rc.Runs()) > installRuns })
	rc.Set("fail", 0) // batch 1 was answered "pass" when it arrived; the next one fails
	rc.Release()
	e.waitProgression(90*time.Second, "p", addonstatus.ReasonUpgradeFailed, "more clusters failed than maxFailures allows")
	vs := e.waitVerifications(10*time.Second, "p", "1:Successful 2:Failed")
	// The failed batch's MCAs say so, naming the run; the passed batch's stay succeeded.
	want := fmt.Sprintf("upgrade failed: the verification of batch 2 of placement %s/p with AnalysisTemplate %s/webhook failed: %s", e.name, e.name, vs[1].Message)
	for _, c := range []string{"c3", "c4"} {
		e.waitCluster(30*time.Second, c, "cfg-b/cfg-b/True/UpgradeFailed")
		cond := meta.FindStatusCondition(e.rec.mca(e.cluster(c)).Status.Conditions, addonstatus.ConditionProgressing)
		if cond.Status != metav1.ConditionFalse || !strings.HasPrefix(cond.Message, want) || !cond.LastTransitionTime.Equal(&vs[1].Finished) {
			t.Fatalf("%s: Progressing %+v, want False with a message starting %q, transition time the run's end %s", c, cond, want, vs[1].Finished)
		}
	}
	for _, c := range []string{"c1", "c2"} {
		e.waitCluster(10*time.Second, c, "cfg-b/cfg-b/True/UpgradeSucceed")
	}
	// Written once, and neither writer takes it back: the progress tracker keeps what the history
	// says. A flap would show as UpgradeFailed more than once in a cluster's sequence of reasons.
	mark := e.rec.count()
	e.quiet(3 * time.Second)
	for _, c := range all {
		if n := e.rec.writes(e.cluster(c), mark); n != 0 {
			t.Fatalf("%s: %d controller writes of its MCA after the verdict settled:\n%s", c, n, e.rec.eventsOf(e.cluster(c)))
		}
	}
	for _, c := range []string{"c3", "c4"} {
		if got := progressingReasons(e.rec.events()[from:], e.cluster(c)); !strings.HasSuffix(got, "UpgradeSucceed UpgradeFailed") || strings.Count(got, "UpgradeFailed") != 1 {
			t.Fatalf("%s: Progressing reasons %q, want ... UpgradeSucceed UpgradeFailed, failed once", c, got)
		}
	}
	// A retry verifies them again; their MCAs follow the rollout to its end.
	rc.Set("pass", 0)
	e.annotateAs(cliFieldManager, operations.RetryAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("p"): "r1"}))
	e.waitProgression(90*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	for _, c := range all {
		e.waitCluster(30*time.Second, c, "cfg-b/cfg-b/True/UpgradeSucceed")
	}
	if got, vs := e.verifications("p"); got != "1:Successful 2:Failed 3:Successful" || !vs[1].Retried {
		t.Fatalf("verifications %s (%+v), want 1:Successful 2:Failed (retried) 3:Successful", got, vs)
	}
}

// progressingReasons lists the distinct consecutive Progressing reasons of cluster's MCA in events.
func progressingReasons(events []mcaEvent, cluster string) string {
	var out []string
	for _, ev := range events {
		if ev.Cluster != cluster || ev.Type == watch.Deleted {
			continue
		}
		if c := meta.FindStatusCondition(ev.MCA.Status.Conditions, addonstatus.ConditionProgressing); c != nil && (len(out) == 0 || out[len(out)-1] != c.Reason) {
			out = append(out, c.Reason)
		}
	}
	return strings.Join(out, " ")
}

// A webhook gate that times out is inconclusive: the placement holds for a person; a promote
// passes it and the rollout goes on.
func TestVerificationWebhookGateTimesOut(t *testing.T) {
	t.Parallel()
	rc := gateReceiver(t)
	e, all := verificationEnv(t, webhookTemplate(rc.URL, 1), map[string]string{verification.Annotation: verifyAll})
	rc.Set("pass", 5*time.Second) // past timeoutSeconds: 1
	e.setConfig("p", "cfg-b")
	e.waitProgression(60*time.Second, "p", addonstatus.ReasonVerificationInconclusive, "the verification of batch 1 (2 clusters: "+strings.Join(e.clusters("c1", "c2"), ", ")+") with AnalysisTemplate "+e.name+"/webhook was inconclusive")
	e.waitProgression(time.Second, "p", addonstatus.ReasonVerificationInconclusive, "context deadline exceeded")
	e.waitCMAEvent(10*time.Second, "Warning VerificationInconclusive", "was inconclusive")
	vs := e.waitVerifications(10*time.Second, "p", "1:Inconclusive")
	e.quiet(time.Second)
	if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c3", "c4")); i >= 0 {
		t.Fatalf("c3 or c4 got cfg-b (event %d) while the placement waited for a person", i)
	}
	rc.Set("pass", 0)
	e.annotateAs(cliFieldManager, operations.PromoteAnnotation, operations.FormatMap(map[canary.PlacementKey]string{e.placementKey("p"): e.desiredVersion("p")}))
	e.waitCMAEvent(30*time.Second, "VerificationPromoted", "a person passed the inconclusive verification of batch(es) [1]")
	e.waitUpgraded(60*time.Second, "cfg-b", all...)
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "4/4 upgrade completed")
	e.waitVerifications(10*time.Second, "p", "1:Inconclusive:promoted 2:Successful")
	t.Logf("webhook gate: batch 1 inconclusive %s after its run started (timeoutSeconds 1)", vs[0].Finished.Sub(vs[0].Started.Time))
}

// promTemplate gates on the batch's error rate, as scraped by a real Prometheus: three
// measurements a second apart, each below 5%.
func promTemplate(address string) string {
	return `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: error-rate
spec:
  args:
  - name: clusters
  metrics:
  - name: error-rate
    interval: 1s
    count: 3
    successCondition: result[0] < 0.05
    consecutiveErrorLimit: 1
    provider:
      prometheus:
        address: ` + address + `
        timeout: 5
        query: max(addon_error_rate{cluster=~"{{args.clusters}}"})
`
}

// promEnv: placement "prod" (c1, c2, one cluster at a time) gated by "canary" (k1); the canary
// and prod are verified against the error-rate series a real Prometheus scrapes from the test's
// exporter; both run cfg-a, healthy.
func promEnv(t *testing.T, address string, exp *promserver.Exporter) *env {
	e := newEnv(t, envOptions{agentDelay: 200 * time.Millisecond})
	prod := []string{"c1", "c2"}
	e.ensureClusters(append(slices.Clone(prod), "k1")...)
	for _, c := range append(slices.Clone(prod), "k1") {
		exp.ErrorRate.WithLabelValues(e.cluster(c)).Set(0.01)
	}
	e.adc("cfg-a", "a")
	e.adc("cfg-b", "b")
	e.ensureAnalysisTemplateCRDs()
	e.analysisTemplate(promTemplate(address))
	e.placement("prod", [][]string{prod})
	e.placement("canary", [][]string{{"k1"}})
	e.cma(map[string]string{
		addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
		rolloutplan.CanaryAnnotation:              `{"` + e.name + `/prod": "` + e.name + `/canary"}`,
		operations.AutoAbortAnnotation:            "true",
	},
		install{placement: "prod", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})},
		// Progressive (maxFailures 0): a failed cluster exceeds maxFailures, which auto-abort acts on.
		install{placement: "canary", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})},
	)
	e.startController(Options{})
	e.waitInstalled(60*time.Second, "cfg-a", append(slices.Clone(prod), "k1")...)
	e.waitProgression(30*time.Second, "prod", addonstatus.ReasonInstallSucceed, "2/2 install completed")
	e.annotate(verification.Annotation, `[{"placement": "*", "template": "error-rate"}]`)
	return e
}

// A version applied and ready whose error rate rises on its canary is stopped at the canary by the
// metric gate and auto-aborted; prod never gets it. The same version with a healthy series passes
// batch by batch, each batch's run in the history.
func TestVerificationPrometheusGate(t *testing.T) {
	t.Parallel()
	prom, exp := promserver.ForTest(t)

	t.Run("rising error rate on the canary", func(t *testing.T) {
		e := promEnv(t, prom.URL, exp)
		start := time.Now()
		e.setBoth("cfg-b")
		// The canary is told to run cfg-b, which applies and is ready; its error rate rises.
		e.waitFor(60*time.Second, "k1 told to run cfg-b", func() bool { return e.rec.firstDesireIndex("cfg-b", e.clusters("k1")) >= 0 })
		exp.ErrorRate.WithLabelValues(e.cluster("k1")).Set(0.4)
		e.waitProgression(90*time.Second, "canary", addonstatus.ReasonAborted, "aborted automatically")
		e.waitCMAEvent(10*time.Second, "Warning VerificationFailed", "placement "+e.name+"/canary: the verification of batch 1")
		vs := e.waitVerifications(10*time.Second, "canary", "1:Failed")
		if !strings.Contains(vs[0].Message, "last value [0.4]") {
			t.Fatalf("the failed run's message does not show the series: %s", vs[0].Message)
		}
		if e.rec.lastApplyIndex("cfg-b", e.clusters("k1")) < 0 {
			t.Fatalf("the canary never applied cfg-b: the gate must judge a version that runs")
		}
		e.waitCluster(60*time.Second, "k1", "cfg-a/cfg-a/True/RollbackSucceeded")
		if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c1", "c2")); i >= 0 {
			t.Fatalf("prod got cfg-b (event %d) although the canary's gate failed", i)
		}
		t.Logf("Prometheus gate: the canary's run failed after %s (%s after the change)", vs[0].Finished.Sub(vs[0].Started.Time), time.Since(start).Round(100*time.Millisecond))
	})

	t.Run("healthy series", func(t *testing.T) {
		e := promEnv(t, prom.URL, exp)
		e.setBoth("cfg-b")
		e.waitCluster(120*time.Second, "c1", "cfg-b/cfg-b/True/UpgradeSucceed")
		e.waitCluster(60*time.Second, "c2", "cfg-b/cfg-b/True/UpgradeSucceed")
		e.waitProgression(30*time.Second, "prod", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")
		e.waitVerifications(10*time.Second, "canary", "1:Successful")
		vs := e.waitVerifications(10*time.Second, "prod", "1:Successful 2:Successful")
		for i, v := range vs {
			if v.Clusters != 1 || !strings.Contains(v.Message, "error-rate (3 measurements)") {
				t.Fatalf("prod batch %d: %+v", i+1, v)
			}
			t.Logf("Prometheus gate: prod batch %d (%s) passed in %s", v.Batch, v.Sample[0], v.Finished.Sub(v.Started.Time))
		}
		// One cluster at a time: c2 started only after c1's run passed.
		if first, last := e.rec.firstDesireIndex("cfg-b", e.clusters("c2")), e.rec.lastApplyIndex("cfg-b", e.clusters("c1")); first < last {
			t.Fatalf("c2 got cfg-b (event %d) before c1 applied it (event %d)", first, last)
		}
	})

	t.Run("unreachable Prometheus", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String()
		_ = l.Close()
		e := promEnv(t, down, exp)
		e.setBoth("cfg-b")
		e.waitProgression(60*time.Second, "canary", addonstatus.ReasonVerificationInconclusive, "connection refused")
		vs := e.waitVerifications(10*time.Second, "canary", "1:Inconclusive")
		e.waitProgression(10*time.Second, "prod", addonstatus.ReasonWaitingForCanary, "waiting for the verification of canary placement")
		if i := e.rec.firstDesireIndex("cfg-b", e.clusters("c1", "c2")); i >= 0 {
			t.Fatalf("prod got cfg-b (event %d) although the canary's gate was inconclusive", i)
		}
		t.Logf("Prometheus gate: unreachable, inconclusive after %s", vs[0].Finished.Sub(vs[0].Started.Time))
	})
}
