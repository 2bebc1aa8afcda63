//go:build integration

package rolloutbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	watchtools "k8s.io/client-go/tools/watch"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/simagent"
)

const addon = "bench"

func BenchmarkRollout(b *testing.B) {
	switch *modeFlag {
	case "rollout":
	case "template":
		benchmarkTemplate(b)
		return
	default:
		b.Fatalf("-mode: unknown mode %q (rollout, template)", *modeFlag)
	}
	if *peerFlag != "" {
		b.Fatalf("-peer=%s: only the template mode has a peer", *peerFlag)
	}
	if *soaksFlag != "default" || *apiProfileFlag != "" || *roundsFlag != 1 {
		b.Fatalf("-soaks, -rounds and -apiserver-profile are for the template mode (-mode=template)")
	}
	for _, n := range strings.Split(*clustersFlag, ",") {
		clusters, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || clusters <= 0 {
			b.Fatalf("-clusters: %q is not a positive number", n)
		}
		for _, s := range strings.Split(*strategiesFlag, ",") {
			s = strings.TrimSpace(s)
			b.Run(fmt.Sprintf("clusters=%d/strategy=%s", clusters, s), func(b *testing.B) {
				for range b.N {
					runScenario(b, clusters, s)
				}
			})
		}
	}
}

type figures struct {
	setup, install, upgrade          time.Duration
	writes, maxWrites, cmaWrites     int
	cpuInstall, cpuUpgrade, cpuTotal float64
	peakRSSMB                        float64
	apiserverCPU, etcdCPU, benchCPU  float64
	agent                            simagent.Stats
}

// benchmarkTemplate runs the template mode: per cluster count and strategy, the peer (if any and
// if the count is small enough) then addonops, and prints the comparison.
func benchmarkTemplate(b *testing.B) {
	if *peerFlag != "" && *peerFlag != "ocm" {
		b.Fatalf("-peer: unknown peer %q (ocm, or empty)", *peerFlag)
	}
	if *roundsFlag < 1 {
		b.Fatalf("-rounds=%d: want 1 or more", *roundsFlag)
	}
	if *roundsFlag > 1 && *apiProfileFlag != "" {
		b.Fatalf("-apiserver-profile with -rounds=%d: each round would overwrite the last one's profiles; profile one round", *roundsFlag)
	}
	var ours []managerKind
	for _, s := range strings.Split(*soaksFlag, ",") {
		m := byAddonops
		if s = strings.TrimSpace(s); s != "default" {
			if _, _, err := rolloutplan.ParseHealthSoak(map[string]string{rolloutplan.HealthSoakAnnotation: s}); err != nil {
				b.Fatalf("-soaks: %v (or \"default\")", err)
			}
			m = managerKind{soak: s}
		}
		if slices.Contains(ours, m) {
			b.Fatalf("-soaks: %q twice: each soak is one run and one row", s)
		}
		ours = append(ours, m)
	}
	for _, n := range strings.Split(*clustersFlag, ",") {
		clusters, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || clusters <= 0 {
			b.Fatalf("-clusters: %q is not a positive number", n)
		}
		for _, s := range strings.Split(*strategiesFlag, ",") {
			s = strings.TrimSpace(s)
			rs := rolloutStrategy(b, s)
			b.Run(fmt.Sprintf("template/clusters=%d/strategy=%s", clusters, s), func(b *testing.B) {
				b.StopTimer()
				for range b.N {
					var rounds [][]*templateResult
					for round := range *roundsFlag {
						var results []*templateResult
						if *peerFlag == "ocm" && clusters <= *peerMaxClusters {
							results = append(results, runTemplate(b, clusters, rs, byOCM, nil))
						}
						for _, m := range ours {
							results = append(results, runTemplate(b, clusters, rs, m, nil))
						}
						title := ""
						if *roundsFlag > 1 {
							title = fmt.Sprintf("round %d of %d", round+1, *roundsFlag)
						}
						printTemplate(clusters, s, title, results)
						rounds = append(rounds, results)
					}
					if len(rounds) > 1 {
						printMedians(clusters, s, rounds)
					}
					// Ours: the first soak's row, the median over the rounds (peak RSS: the highest).
					first := medianRows(rounds)[len(rounds[0])-len(ours)]
					b.ReportMetric(first[colInstall], "install-s")
					b.ReportMetric(first[colUpgrade], "upgrade-s")
					b.ReportMetric(first[colMCAUpgrade], "upgrade-MCA-writes/cluster")
					b.ReportMetric(first[colRSS], "ctrl-peak-rss-MB")
				}
			})
		}
	}
}

func rolloutStrategy(b *testing.B, strategy string) clusterv1alpha1.RolloutStrategy {
	switch strategy {
	case "all":
		return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}
	case "progressive":
		return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromString("25%")}}
	}
	b.Fatalf("-strategies: unknown strategy %q (all, progressive)", strategy)
	return clusterv1alpha1.RolloutStrategy{}
}

func runScenario(b *testing.B, n int, strategy string) {
	b.StopTimer()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs := rolloutStrategy(b, strategy)

	// A fresh hub per scenario, so one scenario's objects never weigh on the next one's figures.
	begin := time.Now()
	hub, cfg, c, stop := startHub(ctx, b, cancel, localhub.Options{})
	defer stop()
	hubPIDs := hub.PIDs() // kube-apiserver, etcd
	names := clusterNames(n)
	if err := createClusters(ctx, c, names); err != nil {
		b.Fatal(err)
	}
	ns := "bench"
	for _, name := range []string{"cfg-a", "cfg-b"} {
		if err := localhub.EnsureNamespace(ctx, c.Kube, ns); err != nil {
			b.Fatal(err)
		}
		_, err := c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(ns).Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "version", Value: name}}},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := localhub.EnsurePlacement(ctx, c, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}}); err != nil {
		b.Fatal(err)
	}
	if err := localhub.SetPlacementDecisions(ctx, c, ns, "all", []localhub.DecisionGroup{{Clusters: names}}); err != nil {
		b.Fatal(err)
	}
	var f figures
	f.setup = time.Since(begin)

	counter, err := countWrites(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	agent, err := simagent.New(cfg, simagent.Options{Addons: []string{addon}, Workers: 32})
	if err != nil {
		b.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		b.Fatal(err)
	}
	proc, err := startController(hub.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	defer proc.stop()

	// Install.
	start := time.Now()
	cpu0 := proc.cpu()
	_, err = c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addon, Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef:    addonv1alpha1.PlacementRef{Namespace: ns, Name: "all"},
				Configs:         []addonv1alpha1.AddOnConfig{adcRef(ns, "cfg-a")},
				RolloutStrategy: rs,
			}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if err := waitProgression(ctx, c, addonstatus.ReasonInstallSucceed, n, 30*time.Minute, proc); err != nil {
		b.Fatal(err)
	}
	f.install = time.Since(start)
	f.cpuInstall = proc.cpu() - cpu0

	// Upgrade: the measured part. The trace says what the writes over the budget of two per MCA
	// changed and who wrote them.
	if err := counter.reset(); err != nil {
		b.Fatal(err)
	}
	trace := &writesTrace{}
	if err := trace.start(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	traceFrom := time.Now()
	cpu1 := proc.cpu()
	hubCPU1 := []float64{cpuOf(hubPIDs[0]), cpuOf(hubPIDs[1])}
	self1 := cpuOf(os.Getpid())
	b.StartTimer()
	start = time.Now()
	if err := setConfig(ctx, c, ns, "cfg-b"); err != nil {
		b.Fatal(err)
	}
	if err := waitProgression(ctx, c, addonstatus.ReasonUpgradeSucceed, n, 30*time.Minute, proc); err != nil {
		b.Fatal(err)
	}
	f.upgrade = time.Since(start)
	b.StopTimer()
	f.cpuUpgrade = proc.cpu() - cpu1
	f.apiserverCPU = cpuOf(hubPIDs[0]) - hubCPU1[0]
	f.etcdCPU = cpuOf(hubPIDs[1]) - hubCPU1[1]
	f.benchCPU = cpuOf(os.Getpid()) - self1
	if f.writes, f.maxWrites, f.cmaWrites, err = counter.totals(); err != nil {
		b.Fatal(err)
	}
	if counter.broken.Load() {
		b.Fatal("the MCA watch failed during the upgrade: write counts are incomplete")
	}
	f.peakRSSMB = proc.peakRSSMB()
	f.agent = agent.Stats()
	f.cpuTotal = proc.stop()
	if proc.stuck {
		b.Errorf("the controller did not stop within 30s of SIGTERM: see the goroutines in %s", proc.log)
	}

	perMCA := float64(f.writes) / float64(n)
	b.ReportMetric(f.upgrade.Seconds(), "upgrade-s")
	b.ReportMetric(f.install.Seconds(), "install-s")
	b.ReportMetric(perMCA, "writes/MCA")
	b.ReportMetric(float64(f.maxWrites), "max-writes/MCA")
	b.ReportMetric(f.cpuUpgrade, "ctrl-cpu-upgrade-s")
	b.ReportMetric(f.cpuInstall, "ctrl-cpu-install-s")
	b.ReportMetric(f.peakRSSMB, "ctrl-peak-rss-MB")
	fmt.Printf("\n=== %d clusters, strategy %s%s ===\n", n, strategy, envLabel())
	fmt.Printf("hub setup (clusters, placement):        %8.1f s\n", f.setup.Seconds())
	fmt.Printf("fresh install, wall time:                %8.1f s   controller CPU %6.1f s\n", f.install.Seconds(), f.cpuInstall)
	fmt.Printf("config change until all MCAs completed:  %8.1f s   controller CPU %6.1f s\n", f.upgrade.Seconds(), f.cpuUpgrade)
	fmt.Printf("  meanwhile: kube-apiserver CPU %.1f s, etcd CPU %.1f s, simulated agent + benchmark CPU %.1f s (2 cores)\n", f.apiserverCPU, f.etcdCPU, f.benchCPU)
	fmt.Printf("MCA status writes during the upgrade:    %8d     (%.2f per MCA, at most %d for one MCA)\n", f.writes, perMCA, f.maxWrites)
	fmt.Printf("CMA status writes during the upgrade:    %8d\n", f.cmaWrites)
	fmt.Printf("controller CPU, whole run:               %8.1f s   peak RSS %.0f MB\n", f.cpuTotal, f.peakRSSMB)
	fmt.Printf("simulated agent: %d works created, %d updated, %d status reports\n", f.agent.WorksCreated, f.agent.WorksUpdated, f.agent.WorkStatusUpdates)
	if f.maxWrites > 2 {
		fmt.Print(overBudget(trace.between("MCA", traceFrom, time.Now()), 2, 3))
	}
}

// overBudget describes the writes of up to most MCAs that were written more than budget times
// (the most written first): what each write changed and who wrote it. Every change counts, not
// only status changes: the benchmark's counter counts every MODIFIED event.
func overBudget(mcas map[string][]change, budget, most int) string {
	var keys []string
	statusOnly := 0
	for k, cs := range mcas {
		if count(cs, func(c change) bool { return !c.created }) > budget {
			keys = append(keys, k)
		}
		if count(cs, func(c change) bool { return c.status }) > budget {
			statusOnly++
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(mcas[keys[i]]) != len(mcas[keys[j]]) {
			return len(mcas[keys[i]]) > len(mcas[keys[j]])
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d MCAs had more than %d writes (%d more than %d that changed their status); the most written:\n", len(keys), budget, statusOnly, budget)
	for _, k := range keys[:min(most, len(keys))] {
		fmt.Fprintf(&b, "MCA %s:\n%s", k, list(mcas[k]))
	}
	return b.String()
}

func adcRef(ns, name string) addonv1alpha1.AddOnConfig {
	return addonv1alpha1.AddOnConfig{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
		ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: ns, Name: name},
	}
}

// createClusters makes n joined ManagedClusters with their namespaces, in parallel.
// startHub starts a fresh hub for one scenario, with room for the bench's request rate, and
// returns a client configuration (and clients of it) for the bench's setup, watching and
// simulated agents. stop cancels ctx first (watches and simulated agents, so they do not retry
// against a stopped hub), then stops the hub.
func startHub(ctx context.Context, b testing.TB, cancel context.CancelFunc, opts localhub.Options) (*localhub.Hub, *rest.Config, *localhub.Clients, func()) {
	b.Helper()
	opts.ExtraAPIServerArgs = append([]string{"--max-requests-inflight=1000", "--max-mutating-requests-inflight=1000"}, opts.ExtraAPIServerArgs...)
	hub, err := localhub.Start(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	stop := func() {
		cancel()
		if err := hub.Stop(); err != nil {
			b.Errorf("stopping the hub: %v", err)
		}
	}
	cfg := rest.CopyConfig(hub.Config)
	cfg.QPS, cfg.Burst = 3000, 6000
	c, err := localhub.NewClients(cfg)
	if err != nil {
		stop()
		b.Fatal(err)
	}
	return hub, cfg, c, stop
}

// clusterNames are the bench's n cluster names, sorted as the API server lists them.
func clusterNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cluster-%05d", i)
	}
	return names
}

func createClusters(ctx context.Context, c *localhub.Clients, names []string) error {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := createCluster(ctx, c, name); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createCluster is localhub.EnsureManagedCluster without its read-before-write, which halves the
// set-up time at thousands of clusters on a fresh hub.
func createCluster(ctx context.Context, c *localhub.Clients, name string) error {
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	mc, err := c.Cluster.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ManagedCluster %s: %w", name, err)
	}
	for _, t := range []string{clusterv1.ManagedClusterConditionHubAccepted, clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable} {
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Simulated", Message: "simulated by the benchmark"})
	}
	if _, err := c.Cluster.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("ManagedCluster %s status: %w", name, err)
	}
	return nil
}

func setConfig(ctx context.Context, c *localhub.Clients, ns, cfg string) error {
	api := c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	for range 10 {
		cma, err := api.Get(ctx, addon, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cma.Spec.InstallStrategy.Placements[0].Configs = []addonv1alpha1.AddOnConfig{adcRef(ns, cfg)}
		if _, err = api.Update(ctx, cma, metav1.UpdateOptions{}); err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
	}
	return errors.New("updating the CMA kept conflicting")
}

// waitProgression waits until the placement's progression reports reason for all n clusters.
func waitProgression(ctx context.Context, c *localhub.Clients, reason string, n int, timeout time.Duration, proc *controllerProcess) error {
	want := fmt.Sprintf("%d/%d ", n, n)
	_, err := harness.UntilErr(ctx, timeout, 100*time.Millisecond, func() (string, error) {
		if err := proc.exited(); err != nil {
			return "", err
		}
		cma, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
		if err != nil || len(cma.Status.InstallProgressions) != 1 {
			return fmt.Sprintf("no install progression to read (%v)", err), nil
		}
		cond := meta.FindStatusCondition(cma.Status.InstallProgressions[0].Conditions, addonstatus.ConditionProgressing)
		switch {
		case cond == nil:
			return "no Progressing condition yet", nil
		case cond.Reason != reason || !strings.HasPrefix(cond.Message, want):
			return fmt.Sprintf("%s: %s, want %s %s...", cond.Reason, cond.Message, reason, want), nil
		}
		return "", nil
	})
	return err
}

// writeCounter counts status writes with watches: every MODIFIED event of an MCA of the add-on
// (the controller is the only writer of MCAs here) and of the CMA.
type writeCounter struct {
	ctx   context.Context
	c     *localhub.Clients
	mu    sync.Mutex
	perNS map[string]int
	cma   atomic.Int64
	// seen and cmaSeen are the resourceVersions of the objects as the watches last delivered them
	// (the MCAs by namespace), guarded by mu.
	seen    map[string]string
	cmaSeen string
	broken  atomic.Bool
	// stop ends the current watches.
	stop context.CancelFunc
}

func countWrites(ctx context.Context, c *localhub.Clients) (*writeCounter, error) {
	wc := &writeCounter{ctx: ctx, c: c, perNS: map[string]int{}, seen: map[string]string{}}
	return wc, wc.watch()
}

// watch starts the counter's watches from a fresh list.
func (wc *writeCounter) watch() error {
	ctx, stop := context.WithCancel(wc.ctx)
	wc.stop = stop
	sel := fields.OneTermEqualSelector("metadata.name", addon).String()
	mcas := wc.c.Addon.AddonV1alpha1().ManagedClusterAddOns("")
	ml, err := mcas.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	wc.mu.Lock()
	for _, m := range ml.Items {
		wc.seen[m.Namespace] = m.ResourceVersion
	}
	wc.mu.Unlock()
	// Retry watchers resume where the server closed a watch (it does under load), so no write is
	// missed, unless the server no longer has the events since (410 Expired): then the counter is
	// broken until reset watches again.
	mw, err := watchtools.NewRetryWatcherWithContext(ctx, ml.ResourceVersion, watchFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = sel
		return mcas.Watch(ctx, o)
	}))
	if err != nil {
		return err
	}
	cmas := wc.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	cl, err := cmas.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	wc.mu.Lock()
	for _, o := range cl.Items {
		wc.cmaSeen = o.ResourceVersion
	}
	wc.mu.Unlock()
	cw, err := watchtools.NewRetryWatcherWithContext(ctx, cl.ResourceVersion, watchFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = sel
		return cmas.Watch(ctx, o)
	}))
	if err != nil {
		return err
	}
	go func() {
		for ev := range mw.ResultChan() {
			if ev.Type == watch.Error {
				fmt.Fprintf(os.Stderr, "MCA watch error: %+v\n", ev.Object)
				wc.broken.Store(true)
			}
			if m, ok := ev.Object.(*addonv1alpha1.ManagedClusterAddOn); ok {
				wc.mu.Lock()
				wc.seen[m.Namespace] = m.ResourceVersion
				if ev.Type == watch.Modified {
					wc.perNS[m.Namespace]++
				}
				wc.mu.Unlock()
			}
		}
	}()
	go func() {
		for ev := range cw.ResultChan() {
			if o, ok := ev.Object.(*addonv1alpha1.ClusterManagementAddOn); ok {
				wc.mu.Lock()
				wc.cmaSeen = o.ResourceVersion
				wc.mu.Unlock()
			}
			if ev.Type == watch.Modified {
				wc.cma.Add(1)
			}
		}
	}()
	return nil
}

// reset starts counting again, with new watches if the old ones broke (the install's figures are
// not counted: a watch that expired then does not take the upgrade's with it).
func (wc *writeCounter) reset() error {
	if wc.broken.Load() {
		wc.stop()
		fmt.Fprintln(os.Stderr, "MCA watch broke before the upgrade: watching again from a fresh list")
		wc.broken.Store(false)
		if err := wc.watch(); err != nil {
			return err
		}
	}
	wc.mu.Lock()
	defer wc.mu.Unlock()
	wc.perNS = map[string]int{}
	wc.cma.Store(0)
	return nil
}

// totals counts the writes once the watches delivered every write made so far.
func (wc *writeCounter) totals() (total, most, cma int, err error) {
	if err := wc.caughtUp(); err != nil {
		return 0, 0, 0, err
	}
	wc.mu.Lock()
	defer wc.mu.Unlock()
	for _, n := range wc.perNS {
		total += n
		most = max(most, n)
	}
	return total, most, int(wc.cma.Load()), nil
}

// caughtUp waits until the watches delivered each MCA of the add-on and its CMA at the
// resourceVersion a fresh read has: nothing writes them once the rollout ended, so the counts
// are complete then.
func (wc *writeCounter) caughtUp() error {
	sel := fields.OneTermEqualSelector("metadata.name", addon).String()
	_, err := harness.UntilErr(wc.ctx, time.Minute, 50*time.Millisecond, func() (string, error) {
		ml, err := wc.c.Addon.AddonV1alpha1().ManagedClusterAddOns("").List(wc.ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return "", err
		}
		cma, err := wc.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(wc.ctx, addon, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		wc.mu.Lock()
		defer wc.mu.Unlock()
		for _, m := range ml.Items {
			if seen := wc.seen[m.Namespace]; seen != m.ResourceVersion {
				return fmt.Sprintf("the watch delivered MCA %s/%s at resourceVersion %q, it is at %s", m.Namespace, m.Name, seen, m.ResourceVersion), nil
			}
		}
		if wc.cmaSeen != cma.ResourceVersion {
			return fmt.Sprintf("the watch delivered the CMA at resourceVersion %q, it is at %s", wc.cmaSeen, cma.ResourceVersion), nil
		}
		return "", nil
	})
	if err != nil {
		return fmt.Errorf("counting the status writes: %w", err)
	}
	return nil
}

// startController starts the controller with -controller-args, -more-controller-args and extra
// (later flags win).
func startController(kubeconfig string, extra ...string) (*controllerProcess, error) {
	bin := *controllerBin
	if bin == "" {
		bin = os.Getenv("ADDONOPS_CONTROLLER")
	}
	if bin == "" {
		root, err := filepath.Abs("../../..")
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(root, "bin", "addonops-controller")
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("controller binary: %w (run `make bin/addonops-controller`, or use make bench-controller)", err)
	}
	logFile, err := os.CreateTemp("", "addonops-controller-bench-*.log")
	if err != nil {
		return nil, err
	}
	// One process, no Lease; no fixed ports that another process on the machine may hold.
	args := append([]string{"--kubeconfig=" + kubeconfig, "--addons=self", "--leader-elect=false", "--history-namespace=default",
		"--metrics-bind-address=0", "--health-probe-bind-address=0"}, append(strings.Fields(*controllerArgs), strings.Fields(*moreArgs)...)...)
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), strings.Fields(*controllerEnv)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &controllerProcess{cmd: cmd, log: logFile.Name(), done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited returns an error if the controller died.
func (p *controllerProcess) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("the controller exited: %v (log: %s)", p.waitErr, p.log)
	default:
		return nil
	}
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// cpu returns the controller's user+system CPU seconds so far (/proc/<pid>/stat).
func (p *controllerProcess) cpu() float64 { return cpuOf(p.cmd.Process.Pid) }

// cpuOf returns a process's user+system CPU seconds so far.
func cpuOf(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

// stop terminates the controller and returns its total CPU seconds (from its rusage).
func (p *controllerProcess) stop() float64 {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			// SIGQUIT: the Go runtime writes every goroutine's stack to the log, then exits, so a
			// controller that does not stop says where it hangs.
			p.stuck = true
			fmt.Fprintf(os.Stderr, "the controller did not stop within 30s of SIGTERM; its goroutines are in %s\n", p.log)
			_ = p.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			p.cpuSecs = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
	})
	return p.cpuSecs
}
