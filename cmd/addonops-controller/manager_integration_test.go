//go:build integration

package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/simagent"
)

func lease(t *testing.T, hub *localhub.Hub, ns string) *coordinationv1.Lease {
	t.Helper()
	l, err := hub.Clients.Kube.CoordinationV1().Leases(ns).Get(context.Background(), LeaderElectionID, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

// waitTakeover waits until the Lease in ns is held by another than old (its holder identity),
// and returns how long after since that was seen.
func waitTakeover(t *testing.T, hub *localhub.Hub, ns, old string, since time.Time, timeout time.Duration, who string) time.Duration {
	t.Helper()
	var took time.Duration
	harness.EventuallyTrue(t, timeout, who+" to take the Lease over", func() bool {
		h := holder(lease(t, hub, ns))
		if h == "" || h == old {
			return false
		}
		took = time.Since(since)
		return true
	})
	return took
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// Two replicas: only the Lease holder runs the controller; when it is stopped it releases the
// Lease and the other takes over within seconds.
func TestLeaderElection(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := context.Background()
	const ns = "leader-election"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	args := []string{"--leader-election-namespace", ns}

	a := startInstance(t, hub, "a", args...)
	harness.EventuallyTrue(t, 30*time.Second, "a to take the Lease and sync its caches", func() bool {
		_, ok := a.log.first(time.Time{}, "Caches synced")
		return ok && holder(lease(t, hub, ns)) != ""
	})
	first := holder(lease(t, hub, ns))

	b := startInstance(t, hub, "b", args...)
	// b waits: it is healthy and ready (a standby), but runs no controller.
	harness.EventuallyTrue(t, 30*time.Second, "b's probes", func() bool {
		code, _ := b.readyz()
		hc, _ := b.healthz()
		return code == http.StatusOK && hc == http.StatusOK
	})
	// Three retry periods of the Lease: b tries and does not get it.
	harness.Consistently(t, 6*time.Second, "b standing by while a holds the Lease", func() string {
		if _, ok := b.log.first(time.Time{}, "Caches synced"); ok {
			return "b started the controller"
		}
		if got := holder(lease(t, hub, ns)); got != first {
			return fmt.Sprintf("Lease holder changed from %q to %q", first, got)
		}
		return ""
	}, harness.Every(500*time.Millisecond))
	if _, ok := b.log.first(time.Time{}, "Caches synced"); ok {
		t.Fatalf("b started the controller while a holds the Lease:\n%s", b.log)
	}
	if got := holder(lease(t, hub, ns)); got != first {
		t.Fatalf("Lease holder changed from %q to %q while a runs", first, got)
	}
	if code, body := a.readyz(); code != http.StatusOK {
		t.Fatalf("leader a not ready: %d %s", code, body)
	}

	a.stop()
	stopped := a.stopped
	takeover := waitTakeover(t, hub, ns, first, stopped, 15*time.Second, "b")
	t.Logf("takeover: b holds the Lease %s after a's context was cancelled", takeover.Round(time.Millisecond))
	harness.EventuallyTrue(t, 30*time.Second, "b to start the controller", func() bool {
		_, ok := b.log.first(stopped, "Caches synced")
		return ok
	})
	t.Logf("takeover: b's controller synced %s after a's context was cancelled", time.Since(stopped).Round(time.Millisecond))
	if takeover > 5*time.Second {
		t.Errorf("takeover took %s; with LeaderElectionReleaseOnCancel it should be one retry period (2s)", takeover)
	}
	harness.EventuallyTrue(t, 30*time.Second, "b ready", func() bool { code, _ := b.readyz(); return code == http.StatusOK })
}

// /readyz follows the hub (with the template reconcilers too): false and an error line within 10 s of its API server stopping, true
// again when it is back.
func TestReadyzFollowsHub(t *testing.T) {
	hub := localhub.ForTest(t)
	in := startInstance(t, hub, "solo", "--leader-elect=false", "--history-namespace=default", "--deploy-templates")
	harness.EventuallyTrue(t, 30*time.Second, "ready", func() bool { code, _ := in.readyz(); return code == http.StatusOK })
	code, body := in.readyz()
	for _, check := range []string{"[+]hub ok", "[+]informers ok"} {
		if !strings.Contains(body, check) {
			t.Errorf("/readyz (%d) lacks %q:\n%s", code, check, body)
		}
	}

	// kube-apiserver closes its port at once but takes about 10 s to exit (its open watches):
	// everything is timed from the stop.
	down := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- hub.StopAPIServer() }()
	t.Cleanup(func() { _ = hub.StartAPIServer(context.Background()) })
	harness.EventuallyTrue(t, 15*time.Second, "/readyz to fail", func() bool { code, _ := in.readyz(); return code == http.StatusInternalServerError })
	t.Logf("/readyz failed %s after the API server stopped", time.Since(down).Round(time.Millisecond))
	if code, body := in.healthz(); code != http.StatusOK {
		t.Errorf("/healthz %d while the hub is away (the process itself is fine): %s", code, body)
	}
	if _, body := in.readyz(); !strings.Contains(body, "[-]hub failed") {
		t.Errorf("/readyz does not name the hub check:\n%s", body)
	}
	harness.EventuallyTrue(t, 10*time.Second-time.Since(down), "an error log line about the hub", func() bool {
		_, ok := in.log.first(down, "Hub unreachable", `"error"=`)
		return ok
	})
	ln, _ := in.log.first(down, "Hub unreachable")
	t.Logf("error line %s after the API server stopped", ln.at.Sub(down).Round(time.Millisecond))
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver exited %s after SIGTERM", time.Since(down).Round(time.Millisecond))

	// The controller may see the API server ready before StartAPIServer (which waits for its
	// readiness too) returns: its line about the hub is looked for from the restart on.
	restart := time.Now()
	if err := hub.StartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	up := time.Now()
	harness.EventuallyTrue(t, 30*time.Second, "/readyz to pass again", func() bool { code, _ := in.readyz(); return code == http.StatusOK })
	t.Logf("/readyz passed %s after the API server was back", time.Since(up).Round(time.Millisecond))
	if _, ok := in.log.first(restart, "Hub reachable again"); !ok {
		t.Errorf("no log line about the hub being back:\n%s", in.log)
	}
}

var clustersSample = regexp.MustCompile(`(?m)^addonops_rollout_clusters\{addon="([^"]+)",placement="([^"]+)",state="([^"]+)"\} (\S+)$`)

// states returns addon's addonops_rollout_clusters samples as "placement state" -> count.
func states(body, addon string) map[string]int {
	out := map[string]int{}
	for _, m := range clustersSample.FindAllStringSubmatch(body, -1) {
		if m[1] == addon {
			n, _ := strconv.ParseFloat(m[4], 64)
			out[m[2]+" "+m[3]] = int(n)
		}
	}
	return out
}

// /metrics scraped during a rollout: addonops_rollout_clusters moves through the states, the
// duration histogram records the finished progressions, and the workqueue and REST client metrics
// are there.
func TestMetricsDuringRollout(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	const addon = "metrics-rollout"
	c := hub.Clients
	fx := newRolloutFixture(t, ctx, hub, addon, []string{"metrics-c1", "metrics-c2", "metrics-c3"}, 1)
	in := startInstance(t, hub, "solo", "--leader-elect=false", "--history-namespace=default", "--coalesce=50ms")
	fx.install(t, ctx)
	// The CMA's progression, for the log: the histogram is fed by its transitions.
	w, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + addon})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			if cma, ok := ev.Object.(*addonv1alpha1.ClusterManagementAddOn); ok {
				for _, ip := range cma.Status.InstallProgressions {
					for _, cond := range ip.Conditions {
						t.Logf("CMA rv %s progression %s: %s %s %s (since %s)", cma.ResourceVersion, ip.Name, cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime.Format(time.TimeOnly))
					}
				}
			}
		}
	}()

	// Scrape every 200ms and keep every distinct view of the add-on's clusters.
	const p = addon + "/all"
	var seen []map[string]int
	scrapeUntil := func(what string, timeout time.Duration, done func(map[string]int) bool) string {
		t.Helper()
		var body string
		harness.EventuallyTrue(t, timeout, what, func() bool {
			body = in.scrape()
			if body == "" {
				return false
			}
			st := states(body, addon)
			if len(seen) == 0 || !equal(seen[len(seen)-1], st) {
				seen = append(seen, st)
				t.Logf("addonops_rollout_clusters %v", st)
			}
			return done(st)
		})
		return body
	}
	// The histogram follows the CMA's install progression, which the rollout reconciler writes a
	// moment after the last MCA changed: wait for it before the upgrade, which would otherwise turn
	// Installing into Upgrading with no install ever finished.
	installed := `addonops_rollout_duration_seconds_count{addon="` + addon + `",placement="` + p + `",result="InstallSucceed"} 1`
	upgraded := `addonops_rollout_duration_seconds_count{addon="` + addon + `",placement="` + p + `",result="UpgradeSucceed"} 1`
	scrapeUntil("every cluster installed and the install progression finished", 60*time.Second, func(st map[string]int) bool {
		return st[p+" InstallSucceed"] == 3 && strings.Contains(in.scrape(), installed)
	})
	if !anySeen(seen, p+" Installing") {
		t.Errorf("never saw a cluster Installing: %v", seen)
	}

	fx.upgrade(t, ctx, "v2")
	body := scrapeUntil("every cluster upgraded and the progression finished", 60*time.Second, func(st map[string]int) bool {
		return st[p+" UpgradeSucceed"] == 3 && strings.Contains(in.scrape(), upgraded)
	})
	body = in.scrape()
	if !anySeen(seen, p+" Upgrading") {
		t.Errorf("never saw a cluster Upgrading: %v", seen)
	}
	// Progressive with maxConcurrency 1: one cluster upgrading at a time, the others waiting in
	// their old state.
	mixed := false
	for _, st := range seen {
		if st[p+" Upgrading"] == 1 && st[p+" InstallSucceed"] >= 1 {
			mixed = true
		}
	}
	if !mixed {
		t.Errorf("never saw one cluster upgrading while others still ran v1: %v", seen)
	}

	for _, want := range []string{
		installed, upgraded,
		`workqueue_adds_total{controller="rollout",name="rollout"`,
		`workqueue_depth{controller="progress",name="progress"`,
		`rest_client_requests_total{code="200"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s; it has:\n%s", want, grepLines(body, "addonops_"))
		}
	}
	if strings.Contains(body, "addonops_rollout_failures_total{addon=\""+addon) {
		t.Errorf("a failure was counted in a rollout without failures")
	}
}

func equal(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func anySeen(seen []map[string]int, key string) bool {
	for _, st := range seen {
		if st[key] > 0 {
			return true
		}
	}
	return false
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) && !strings.Contains(l, "_bucket{") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// rolloutFixture is an add-on on the test hub, deployed by simulated agents (1.5 s per work
// generation) to clusters through the placement "all", with a Progressive strategy, configs
// AddOnDeploymentConfigs v1 and v2 in the add-on's namespace.
type rolloutFixture struct {
	hub      *localhub.Hub
	addon    string
	clusters []string
	cma      *addonv1alpha1.ClusterManagementAddOn
}

func newRolloutFixture(t *testing.T, ctx context.Context, hub *localhub.Hub, addon string, clusters []string, maxConcurrency int32) *rolloutFixture {
	t.Helper()
	c := hub.Clients
	if err := localhub.EnsureNamespace(ctx, c.Kube, addon); err != nil {
		t.Fatal(err)
	}
	for _, cl := range clusters {
		if _, err := localhub.EnsureManagedCluster(ctx, c, cl, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := localhub.EnsurePlacement(ctx, c, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: addon, Name: "all"}}); err != nil {
		t.Fatal(err)
	}
	if err := localhub.SetPlacementDecisions(ctx, c, addon, "all", []localhub.DecisionGroup{{Clusters: clusters}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"v1", "v2"} {
		_, err := c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(addon).Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: addon, Name: name},
			Spec:       addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "version", Value: name}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	agent, err := simagent.New(hub.Config, simagent.Options{Addons: []string{addon}, Delay: 1500 * time.Millisecond, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	adcRef := addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}
	cma := &addonv1alpha1.ClusterManagementAddOn{
		// No health soak: the takeover bounds are about leader election, not health.
		ObjectMeta: metav1.ObjectMeta{Name: addon, Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
			rolloutplan.HealthSoakAnnotation: "0s"}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcRef}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef: addonv1alpha1.PlacementRef{Namespace: addon, Name: "all"},
				Configs:      []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcRef, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: addon, Name: "v1"}}},
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
					MaxConcurrency: intstr.FromInt32(maxConcurrency)}},
			}}},
		},
	}
	return &rolloutFixture{hub: hub, addon: addon, clusters: clusters, cma: cma}
}

// install creates the CMA (deleted when the test ends).
func (f *rolloutFixture) install(t *testing.T, ctx context.Context) {
	t.Helper()
	api := f.hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	if _, err := api.Create(ctx, f.cma, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), f.addon, metav1.DeleteOptions{}) })
}

// upgrade points the placement at config version.
func (f *rolloutFixture) upgrade(t *testing.T, ctx context.Context, version string) {
	t.Helper()
	api := f.hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	// The controller writes the CMA's status at any time (its install progression), which moves
	// its resourceVersion: a person's edit read before that write conflicts and is made again.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, f.addon, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.InstallStrategy.Placements[0].Configs[0].Name = version
		_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
