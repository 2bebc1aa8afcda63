//go:build integration

package rolloutbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/apiaudit"
	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// Template mode: the same template add-on rolled out, install then upgrade, once by OCM's
// addon-manager and once by addonops-controller --deploy-templates, each on a fresh hub set up the
// same way; the simulated work agent (internal/simagent, WorkAgentOnly) applies the works the
// manager writes and reports Applied, Available and the Deployment's status feedback as OCM's
// work agent does. Each manager reaches the API server as its own user, so the API server's audit
// log (internal/apiaudit) counts its requests and nobody else's.
//
// Why not both managers on one hub at once: OCM's addon-manager renders every template add-on,
// whatever its lifecycle annotation (its per-add-on template managers run in addonops' default
// mode too); next to --deploy-templates both would write the same works
// (docs/design/addon-template.md#who-deploys-a-template-add-on). So each run has one manager
// deploying the add-on, as on a real hub.

const (
	// The managers' users (localhub.Options.Users): the audit log counts their requests.
	userAddonops = "bench-addonops-controller"
	userOCM      = "bench-ocm-addon-manager"

	tplName    = "bench-tpl"
	agentNS    = "open-cluster-management-agent-addon"
	hubRole    = "bench-agent-hub"
	adcInstall = "cfg-a"
	adcUpgrade = "cfg-b"
)

// doneReasons is what an MCA's and the install progression's Progressing condition says, with
// status False, once the phase's rollout completed: OCM says Completed for install and upgrade
// alike; addonops tells them apart (docs/design/lifecycle.md#progressing-reasons).
func (m managerKind) doneReasons(upgrade bool) []string {
	switch {
	case m == byOCM:
		return []string{"Completed"}
	case upgrade:
		return []string{addonstatus.ReasonUpgradeSucceed}
	default:
		return []string{addonstatus.ReasonInstallSucceed}
	}
}

var phaseNames = [phases]string{"start-up", "install", "upgrade"}

// phaseTime is the wall time of phase p (install or upgrade).
func (r *templateResult) phaseTime(p int) time.Duration {
	if p == phaseInstall {
		return r.install
	}
	return r.upgrade
}

// runTemplate runs the scenario with m deploying the add-on on a fresh hub.
//
// With a trace, every change of the add-on's MCAs and works is recorded (writesTrace), for tests
// that tell which writes a transition cost.
func runTemplate(b testing.TB, n int, strategy clusterv1alpha1.RolloutStrategy, m managerKind, trace *writesTrace) *templateResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := &templateResult{manager: m, n: n}

	tmp := os.Getenv("ADDONOPS_HUB_TMPDIR")
	if tmp == "" {
		tmp = os.TempDir()
	}
	auditDir, err := os.MkdirTemp(tmp, "addonops-bench-audit-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(auditDir)
	auditArgs, auditLog, err := apiaudit.APIServerArgs(auditDir, userAddonops, userOCM)
	if err != nil {
		b.Fatal(err)
	}
	hub, cfg, c, stop := startHub(ctx, b, cancel, localhub.Options{ExtraAPIServerArgs: auditArgs, Users: []string{userAddonops, userOCM}})
	defer stop()
	hubPIDs := hub.PIDs() // kube-apiserver, etcd
	names := clusterNames(n)
	setupStart := time.Now()
	if err := createClusters(ctx, c, names); err != nil {
		b.Fatal(err)
	}
	const ns = "bench"
	if err := createTemplateObjects(ctx, c, ns); err != nil {
		b.Fatal(err)
	}
	if _, err := localhub.EnsurePlacement(ctx, c, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}}); err != nil {
		b.Fatal(err)
	}
	if err := localhub.SetPlacementDecisions(ctx, c, ns, "all", []localhub.DecisionGroup{{Clusters: names}}); err != nil {
		b.Fatal(err)
	}
	setup := time.Since(setupStart)

	agent, err := simagent.New(cfg, simagent.Options{Addons: []string{addon}, Workers: 32, WorkAgentOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		b.Fatal(err)
	}
	watcher, err := watchMCAs(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if trace != nil {
		if err := trace.start(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}

	// The manager, ready before the clock starts: OCM's holds its lease (its controllers run),
	// addonops' /readyz says its caches synced.
	var mgr *managerProc
	switch m {
	case byOCM:
		mgr, err = startOCMManager(ctx, hub)
	default:
		mgr, err = startAddonopsManager(ctx, hub)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer mgr.stop()
	res.managerLog = mgr.log
	fmt.Fprintf(os.Stderr, "%s, %d clusters: hub set up in %.1f s, manager ready, log %s\n", m.label(), n, setup.Seconds(), mgr.log)

	sample := func() snapshot { return takeSnapshot(mgr.pid, hubPIDs) }
	var bounds [phases + 1]time.Time // phase p runs from bounds[p] to bounds[p+1]
	bounds[phaseStartup] = time.Time{}
	s0 := sample()

	// Install.
	annotations := map[string]string{}
	if !m.ocm {
		annotations[addonv1alpha1.AddonLifecycleAnnotationKey] = addonv1alpha1.AddonLifecycleSelfManageAnnotationValue
		if m.soak != "" {
			annotations[rolloutplan.HealthSoakAnnotation] = m.soak
		}
	}
	bounds[phaseInstall] = time.Now()
	profiled := profileAPIServer(ctx, c, m, n, phaseInstall)
	_, err = c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, templateCMA(ns, annotations, strategy), metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	res.mcasDone[phaseInstall], err = waitPhase(ctx, c, watcher, mgr, n, adcInstall, m.doneReasons(false), bounds[phaseInstall])
	if err != nil {
		b.Fatalf("%s install: %v", m.label(), err)
	}
	res.install = time.Since(bounds[phaseInstall])
	s1 := sample()
	if err := profiled(); err != nil {
		b.Error(err)
	}
	// The upgrade's figures start here: a profile longer than the install is waited for in
	// neither phase.
	s1u := sample()

	// Upgrade: a new config version for the placement.
	bounds[phaseUpgrade] = time.Now()
	profiled = profileAPIServer(ctx, c, m, n, phaseUpgrade)
	if err := setConfigs(ctx, c, []addonv1alpha1.AddOnConfig{adcRef(ns, adcUpgrade)}); err != nil {
		b.Fatal(err)
	}
	res.mcasDone[phaseUpgrade], err = waitPhase(ctx, c, watcher, mgr, n, adcUpgrade, m.doneReasons(true), bounds[phaseUpgrade])
	if err != nil {
		b.Fatalf("%s upgrade: %v", m.label(), err)
	}
	res.upgrade = time.Since(bounds[phaseUpgrade])
	s2 := sample()
	if err := profiled(); err != nil {
		b.Error(err)
	}
	bounds[phases] = time.Now()
	res.bounds = bounds
	res.use[phaseInstall] = s1.since(s0)
	res.use[phaseUpgrade] = s2.since(s1u)
	res.peakRSSMB = peakRSSMBOf(mgr.pid)
	res.cpuTotal = cpuOf(mgr.pid)
	res.agent = agent.Stats()

	// Stopping the manager ends its watches, so the log holds every request it made.
	mgr.stop()
	if mgr.stuck != nil && mgr.stuck() {
		b.Errorf("%s did not stop within 30s of SIGTERM: see the goroutines in %s", m.label(), mgr.log)
	}
	for p := range phases {
		res.requests[p], res.failed[p] = apiaudit.Counts{}, apiaudit.Counts{}
	}
	user := userAddonops
	if m.ocm {
		user = userOCM
	}
	err = apiaudit.Read(auditLog, func(r apiaudit.Request) {
		if r.User != user {
			return
		}
		res.auditEvents++
		p := phaseStartup
		switch {
		case !r.Received.Before(bounds[phaseUpgrade]):
			p = phaseUpgrade
		case !r.Received.Before(bounds[phaseInstall]):
			p = phaseInstall
		}
		res.requests[p].Add(r)
		if r.Failed() {
			res.failed[p].Add(r)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// nonWord is what a profile's file name replaces in a manager's label.
var nonWord = regexp.MustCompile(`[^A-Za-z0-9.]+`)

// profileAPIServer takes a CPU profile of kube-apiserver (its /debug/pprof, on by default) for
// the first -apiserver-profile-seconds of a phase into -apiserver-profile, when that is set. The
// function it returns waits for the profile to be written and says why it was not.
func profileAPIServer(ctx context.Context, c *localhub.Clients, m managerKind, n, phase int) func() error {
	if *apiProfileFlag == "" {
		return func() error { return nil }
	}
	name := strings.Trim(nonWord.ReplaceAllString(m.label(), "-"), "-") + fmt.Sprintf("-%d-%s.pprof", n, phaseNames[phase])
	path := filepath.Join(*apiProfileFlag, name)
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if err := os.MkdirAll(*apiProfileFlag, 0o755); err != nil {
				return err
			}
			body, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", strconv.Itoa(*apiProfileSecs)).Stream(ctx)
			if err != nil {
				return err
			}
			defer body.Close()
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(path) // no half-written profile
			}
			return err
		}()
	}()
	return func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("kube-apiserver CPU profile %s: %w", path, err)
		}
		fmt.Fprintf(os.Stderr, "kube-apiserver CPU profile of the first %d s of the %s: %s\n", *apiProfileSecs, phaseNames[phase], path)
		return nil
	}
}

// createTemplateObjects creates the add-on's template, its two config versions and the ClusterRole
// its registration binds.
func createTemplateObjects(ctx context.Context, c *localhub.Clients, ns string) error {
	if err := localhub.EnsureNamespace(ctx, c.Kube, ns); err != nil {
		return err
	}
	for name, level := range map[string]string{adcInstall: "2", adcUpgrade: "4"} {
		_, err := c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(ns).Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: addonv1alpha1.AddOnDeploymentConfigSpec{AgentInstallNamespace: agentNS,
				CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "LOG_LEVEL", Value: level}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("AddOnDeploymentConfig %s: %w", name, err)
		}
	}
	if _, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: hubRole},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("ClusterRole %s: %w", hubRole, err)
	}
	manifests, err := agentManifests()
	if err != nil {
		return err
	}
	_, err = c.Addon.AddonV1alpha1().AddOnTemplates().Create(ctx, &addonv1alpha1.AddOnTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: tplName},
		Spec: addonv1alpha1.AddOnTemplateSpec{
			AddonName: addon,
			AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: manifests}},
			Registration: []addonv1alpha1.RegistrationSpec{{Type: addonv1alpha1.RegistrationTypeKubeClient,
				KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{HubPermissions: []addonv1alpha1.HubPermissionConfig{{
					Type: addonv1alpha1.HubPermissionsBindingCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: hubRole},
				}}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("AddOnTemplate %s: %w", tplName, err)
	}
	return nil
}

// agentManifests is examples/hello-template's agent, cut down: a Deployment whose arguments carry
// the config's LOG_LEVEL (so a new config version changes the work) and its ServiceAccount.
func agentManifests() ([]workv1.Manifest, error) {
	objs := []map[string]any{
		{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "bench-agent", "namespace": agentNS, "labels": map[string]any{"app": "bench-agent"}},
			"spec": map[string]any{"replicas": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": "bench-agent"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "bench-agent"}},
					"spec": map[string]any{"serviceAccountName": "bench-agent-sa", "containers": []any{map[string]any{
						"name": "agent", "image": "quay.io/open-cluster-management/addon-examples:latest",
						"args": []any{"/helloworld", "agent", "--cluster-name={{CLUSTER_NAME}}", "--hub-kubeconfig={{HUB_KUBECONFIG}}", "--v={{LOG_LEVEL}}"},
					}}}}}},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "bench-agent-sa", "namespace": agentNS}},
	}
	var out []workv1.Manifest
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		out = append(out, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return out, nil
}

func templateCMA(ns string, annotations map[string]string, rs clusterv1alpha1.RolloutStrategy) *addonv1alpha1.ClusterManagementAddOn {
	return &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addon, Annotations: annotations},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"},
					DefaultConfig: &addonv1alpha1.ConfigReferent{Name: tplName}},
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}},
			},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef:    addonv1alpha1.PlacementRef{Namespace: ns, Name: "all"},
				Configs:         []addonv1alpha1.AddOnConfig{adcRef(ns, adcInstall)},
				RolloutStrategy: rs,
			}}},
		},
	}
}

// mcaWatcher keeps the add-on's MCAs in a cache (the benchmark's own user: not counted).
type mcaWatcher struct{ store cache.Store }

func watchMCAs(ctx context.Context, cfg *rest.Config) (*mcaWatcher, error) {
	client, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	f := addoninformers.NewSharedInformerFactoryWithOptions(client, 0, addoninformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", addon).String()
	}))
	inf := f.Addon().V1alpha1().ManagedClusterAddOns().Informer()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("the MCA cache did not sync")
	}
	return &mcaWatcher{store: inf.GetStore()}, nil
}

// applied tells whether refs name the ADC adc as desired and every config's last applied version
// is its desired one.
func applied(adc string, desired func(i int) *addonv1alpha1.ConfigSpecHash, lastApplied func(i int) *addonv1alpha1.ConfigSpecHash, resource func(i int) string, n int) bool {
	found := false
	for i := range n {
		d, a := desired(i), lastApplied(i)
		if d == nil || a == nil || d.SpecHash == "" || a.SpecHash != d.SpecHash || a.Name != d.Name || a.Namespace != d.Namespace {
			return false
		}
		if resource(i) == "addondeploymentconfigs" && d.Name == adc {
			found = true
		}
	}
	return found
}

// mcaDone is the phase's end for one cluster: its MCA's Progressing condition is False with one of
// reasons, and every config it references was applied at the desired version, the ADC being adc.
func mcaDone(m *addonv1alpha1.ManagedClusterAddOn, adc string, reasons []string) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
	if c == nil || c.Status != metav1.ConditionFalse || !slices.Contains(reasons, c.Reason) {
		return false
	}
	refs := m.Status.ConfigReferences
	return applied(adc, func(i int) *addonv1alpha1.ConfigSpecHash { return refs[i].DesiredConfig },
		func(i int) *addonv1alpha1.ConfigSpecHash { return refs[i].LastAppliedConfig },
		func(i int) string { return refs[i].Resource }, len(refs))
}

// progressionDone is the phase's end for the add-on: its install progression's Progressing
// condition is False with one of reasons and records adc as desired and applied.
func progressionDone(cma *addonv1alpha1.ClusterManagementAddOn, adc string, reasons []string) bool {
	if len(cma.Status.InstallProgressions) != 1 {
		return false
	}
	p := cma.Status.InstallProgressions[0]
	c := meta.FindStatusCondition(p.Conditions, addonstatus.ConditionProgressing)
	if c == nil || c.Status != metav1.ConditionFalse || !slices.Contains(reasons, c.Reason) {
		return false
	}
	refs := p.ConfigReferences
	return applied(adc, func(i int) *addonv1alpha1.ConfigSpecHash { return refs[i].DesiredConfig },
		func(i int) *addonv1alpha1.ConfigSpecHash { return refs[i].LastAppliedConfig },
		func(i int) string { return refs[i].Resource }, len(refs))
}

// waitPhase waits until all n MCAs and the install progression report the phase done (mcaDone,
// progressionDone) and returns when the MCAs were, from start.
func waitPhase(ctx context.Context, c *localhub.Clients, w *mcaWatcher, mgr *managerProc, n int, adc string, reasons []string, start time.Time) (time.Duration, error) {
	const timeout = 60 * time.Minute
	var mcasAt time.Duration
	_, err := harness.UntilErr(ctx, timeout-time.Since(start), 200*time.Millisecond, func() (string, error) {
		if err := mgr.exited(); err != nil {
			return "", err
		}
		if mcasAt == 0 {
			done := 0
			for _, obj := range w.store.List() {
				if mcaDone(obj.(*addonv1alpha1.ManagedClusterAddOn), adc, reasons) {
					done++
				}
			}
			if done < n {
				return fmt.Sprintf("%d/%d MCAs done", done, n), nil
			}
			mcasAt = time.Since(start)
		}
		cma, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
		switch {
		case err != nil:
			return fmt.Sprintf("all MCAs done; reading the CMA: %v", err), nil
		case progressionDone(cma, adc, reasons):
			return "", nil
		case len(cma.Status.InstallProgressions) == 1:
			if cond := meta.FindStatusCondition(cma.Status.InstallProgressions[0].Conditions, addonstatus.ConditionProgressing); cond != nil {
				return fmt.Sprintf("all MCAs done; install progression %s %s: %s", cond.Status, cond.Reason, cond.Message), nil
			}
		}
		return "all MCAs done; no install progression yet", nil
	})
	if err != nil {
		return 0, fmt.Errorf("waiting for %s with %s: %w (manager log %s)", strings.Join(reasons, "|"), adc, err, mgr.log)
	}
	return mcasAt, nil
}

// setConfigs replaces the placement's configs.
func setConfigs(ctx context.Context, c *localhub.Clients, configs []addonv1alpha1.AddOnConfig) error {
	api := c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	for range 10 {
		cma, err := api.Get(ctx, addon, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cma.Spec.InstallStrategy.Placements[0].Configs = configs
		if _, err = api.Update(ctx, cma, metav1.UpdateOptions{}); err == nil {
			return nil
		}
	}
	return errors.New("updating the CMA kept failing")
}

// managerProc is the process deploying the add-on.
type managerProc struct {
	pid    int
	log    string
	exited func() error
	stop   func()
	// stuck, when set, tells whether the manager did not stop within its grace period.
	stuck func() bool
}

// startOCMManager starts OCM's addon-manager as userOCM, with the client rate limits addonops gets
// (-ocm-args): OCM's defaults (50 QPS, burst 100) would make the comparison about a flag.
func startOCMManager(ctx context.Context, hub *localhub.Hub) (*managerProc, error) {
	o, err := ocmhub.Start(ctx, hub, ocmhub.Options{
		WithoutPlacementController: true,
		AddonManager:               true,
		AddonManagerKubeconfig:     hub.UserKubeconfig(userOCM),
		AddonManagerArgs:           strings.Fields(*ocmArgs),
		KeepLogs:                   true,
		ReadyTimeout:               5 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	stopped := false
	return &managerProc{pid: o.AddonManagerPID(), log: o.AddonManagerLog,
		exited: func() error { return nil }, // a dead addon-manager shows as a timeout, its log named
		stop: func() {
			if !stopped {
				stopped = true
				if err := o.Stop(); err != nil {
					fmt.Fprintf(os.Stderr, "stopping OCM's addon-manager: %v\n", err)
				}
			}
		}}, nil
}

// startAddonopsManager starts addonops-controller --deploy-templates as userAddonops and waits
// until its /readyz says its caches synced.
func startAddonopsManager(ctx context.Context, hub *localhub.Hub) (*managerProc, error) {
	port, err := childproc.FreePort()
	if err != nil {
		return nil, err
	}
	probe := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := startController(hub.UserKubeconfig(userAddonops), "--deploy-templates", "--health-probe-bind-address="+probe)
	if err != nil {
		return nil, err
	}
	_, err = harness.UntilErr(ctx, 5*time.Minute, 200*time.Millisecond, func() (string, error) {
		if err := p.exited(); err != nil {
			return "", err
		}
		resp, err := http.Get("http://" + probe + "/readyz")
		if err != nil {
			return err.Error(), nil
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "/readyz: " + resp.Status, nil
		}
		return "", nil
	})
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("addonops-controller not ready: %w (log %s)", err, p.log)
	}
	return &managerProc{pid: p.cmd.Process.Pid, log: p.log, exited: p.exited, stop: func() { p.stop() }, stuck: func() bool { return p.stuck }}, nil
}

// snapshot is the CPU time of the processes and the machine at one moment.
type snapshot struct {
	at                              time.Time
	manager, apiserver, etcd, bench float64
	machineBusy, machineIdle        float64
	load                            string
}

func takeSnapshot(managerPID int, hubPIDs []int) snapshot {
	busy, idle := machineCPU()
	return snapshot{at: time.Now(), manager: cpuOf(managerPID), apiserver: cpuOf(hubPIDs[0]), etcd: cpuOf(hubPIDs[1]),
		bench: cpuOf(os.Getpid()), machineBusy: busy, machineIdle: idle, load: loadAvg()}
}

func (s snapshot) since(o snapshot) usage {
	return usage{wall: s.at.Sub(o.at), manager: s.manager - o.manager, apiserver: s.apiserver - o.apiserver, etcd: s.etcd - o.etcd,
		bench: s.bench - o.bench, machineBusy: s.machineBusy - o.machineBusy, machineIdle: s.machineIdle - o.machineIdle, load: o.load}
}

// machineCPU returns the machine's busy and idle CPU seconds so far, all cores (/proc/stat).
func machineCPU() (busy, idle float64) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return 0, 0
	}
	fields := strings.Fields(s.Text()) // cpu user nice system idle iowait irq softirq steal ...
	for i, f := range fields[1:] {
		v, _ := strconv.ParseFloat(f, 64)
		if i >= 8 { // guest times are already in user and nice
			break
		}
		if i == 3 || i == 4 {
			idle += v
		} else {
			busy += v
		}
	}
	return busy / clockTicks, idle / clockTicks
}

// ratioLabel names the row of m's ratios to OCM's figures.
func ratioLabel(m managerKind) string {
	if m.soak != "" {
		return "ratio, soak " + m.soak + "/OCM"
	}
	return "ratio addonops/OCM"
}

// managersOf is the managers of results, in their order.
func managersOf(results []*templateResult) []managerKind {
	var out []managerKind
	for _, r := range results {
		out = append(out, r.manager)
	}
	return out
}

// printTable prints one row per manager, then each addonops row's ratios to OCM's row, if any.
func printTable(managers []managerKind, rows [][]float64) {
	fmt.Printf("%-28s %9s %9s %13s %13s %15s %19s %8s\n", "", "install", "upgrade", "MCA writes", "work writes", "API requests", "manager CPU s", "peak RSS")
	fmt.Printf("%-28s %9s %9s %13s %13s %15s %19s %8s\n", "manager", "s", "s", "/cluster i/u", "/cluster i/u", "/cluster i/u", "inst/upg/whole run", "MB")
	var ocm []float64
	for i, m := range managers {
		v := rows[i]
		if m.ocm {
			ocm = v
		}
		fmt.Printf("%-28s %9.1f %9.1f %6.2f/%6.2f %6.2f/%6.2f %7.1f/%7.1f %6.1f/%5.1f/%6.1f %8.0f\n", m.label(), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11])
	}
	if ocm == nil {
		return
	}
	for i, m := range managers {
		if m.ocm {
			continue
		}
		ratio := make([]float64, columns)
		for c := range ratio {
			ratio[c] = rows[i][c] / ocm[c]
		}
		fmt.Printf("%-28s %9.2f %9.2f %6.2f/%6.2f %6.2f/%6.2f %7.2f/%7.2f %6.2f/%5.2f/%6.2f %8.2f\n", ratioLabel(m),
			ratio[0], ratio[1], ratio[2], ratio[3], ratio[4], ratio[5], ratio[6], ratio[7], ratio[8], ratio[9], ratio[10], ratio[11])
	}
}

// printCPURatios prints, per addonops row, cpuRatio for both phases next to the wall-time ratio.
func printCPURatios(results []*templateResult) {
	if len(results) == 0 || !results[0].manager.ocm {
		return
	}
	ocm := results[0]
	for _, r := range results[1:] {
		var parts []string
		for _, p := range []int{phaseInstall, phaseUpgrade} {
			ratio, ceiling := cpuRatio(ocm, r, p)
			wall := ocm.phaseTime(p).Seconds() / r.phaseTime(p).Seconds()
			parts = append(parts, fmt.Sprintf("%s %.1f/%.1f CPU s = %.2fx (wall %.2fx), at most %.2fx with a manager using no CPU (%.1f CPU s left)",
				phaseNames[p], ocm.use[p].processCPU(), r.use[p].processCPU(), ratio, wall, ceiling, r.use[p].processCPU()-r.use[p].manager))
		}
		fmt.Printf("%s, OCM's CPU over addonops' (manager, kube-apiserver, etcd, simulated agent + benchmark): %s\n", r.manager.label(), strings.Join(parts, "; "))
	}
}

// printMedians prints the medians over the rounds and, per addonops row, how many times faster
// than OCM it was in each round: the spread a single round's ratio has.
func printMedians(n int, strategy string, rounds [][]*templateResult) {
	managers := managersOf(rounds[0])
	fmt.Printf("\n=== template add-on, %d clusters, strategy %s: median of %d rounds (peak RSS: the highest) ===\n", n, strategy, len(rounds))
	printTable(managers, medianRows(rounds))
	if !managers[0].ocm {
		return
	}
	times := func(vs []float64) string {
		var s []string
		for _, v := range vs {
			s = append(s, fmt.Sprintf("%.1fx", v))
		}
		return fmt.Sprintf("%s (median %.1fx)", strings.Join(s, " "), median(vs))
	}
	for i, m := range managers[1:] {
		var walls, ratios, ceilings [phases][]float64 // per phase, one figure per round
		for _, results := range rounds {
			o, a := results[0], results[i+1]
			for _, p := range []int{phaseInstall, phaseUpgrade} {
				ratio, ceiling := cpuRatio(o, a, p)
				walls[p] = append(walls[p], o.phaseTime(p).Seconds()/a.phaseTime(p).Seconds())
				ratios[p] = append(ratios[p], ratio)
				ceilings[p] = append(ceilings[p], ceiling)
			}
		}
		fmt.Printf("%s, times faster than OCM in each round: install %s, upgrade %s\n", m.label(), times(walls[phaseInstall]), times(walls[phaseUpgrade]))
		fmt.Printf("%s, OCM's CPU over addonops' in each round: install %s, upgrade %s; at most, with a manager using no CPU: install %s, upgrade %s\n",
			m.label(), times(ratios[phaseInstall]), times(ratios[phaseUpgrade]), times(ceilings[phaseInstall]), times(ceilings[phaseUpgrade]))
	}
}

// printTemplate prints the comparison of one cluster count and strategy: the table, then per
// manager where the time went and its requests.
func printTemplate(n int, strategy, title string, results []*templateResult) {
	if title != "" {
		title = ", " + title
	}
	fmt.Printf("\n=== template add-on, %d clusters, strategy %s%s (load now: %s; at each phase's start below) ===\n", n, strategy, title, loadAvg())
	var rows [][]float64
	for _, r := range results {
		rows = append(rows, row(r))
	}
	printTable(managersOf(results), rows)
	printCPURatios(results)
	for _, r := range results {
		fmt.Printf("\n%s:\n", r.manager.label())
		for _, p := range []int{phaseInstall, phaseUpgrade} {
			u := r.use[p]
			cores := u.machineBusy + u.machineIdle
			// Where the time goes: a process busy for a fraction of the wall time on a saturated
			// machine waited for a core, or for the API server, or for the work agent the rest.
			wall := u.wall.Seconds()
			fmt.Printf("  %-8s wall %6.1f s (last MCA done at %6.1f s); CPU s: manager %6.1f (%3.0f%% of one core), "+
				"kube-apiserver %6.1f (%3.0f%%), etcd %5.1f, simulated agent + benchmark %5.1f; machine busy %5.1f of %5.1f CPU s "+
				"(other processes %4.1f); load at start %s\n",
				phaseNames[p], wall, r.mcasDone[p].Seconds(), u.manager, 100*u.manager/wall, u.apiserver, 100*u.apiserver/wall,
				u.etcd, u.bench, u.machineBusy, cores, u.machineBusy-u.manager-u.apiserver-u.etcd-u.bench, u.load)
		}
		for _, p := range []int{phaseStartup, phaseInstall, phaseUpgrade} {
			var parts []string
			for _, k := range r.requests[p].Sorted() {
				s := fmt.Sprintf("%s %d", k, r.requests[p][k])
				if f := r.failed[p][k]; f > 0 {
					s += fmt.Sprintf(" (%d failed)", f)
				}
				parts = append(parts, s)
			}
			fmt.Printf("  requests, %s: %s\n", phaseNames[p], strings.Join(parts, ", "))
		}
		fmt.Printf("  refused writes per cluster (install/upgrade): MCA %.2f/%.2f, work %.2f/%.2f\n",
			r.perCluster(r.refused(phaseInstall, isMCA)), r.perCluster(r.refused(phaseUpgrade, isMCA)),
			r.perCluster(r.refused(phaseInstall, isWork)), r.perCluster(r.refused(phaseUpgrade, isWork)))
		fmt.Printf("  simulated work agent: %d work status reports; manager log %s\n", r.agent.WorkStatusUpdates, r.managerLog)
	}
	fmt.Println("MCA and work writes: accepted creates, updates, patches and deletes of the object or a subresource, per cluster; " +
		"API requests: every request, reads, watches and refused writes included (the API server's audit log, the manager's own user).")
	fmt.Println("Phase end: every MCA Progressing=False with Completed (OCM) or InstallSucceed/UpgradeSucceed (addonops), its " +
		"configs applied at the desired versions, and the install progression saying the same. addonops' end includes " +
		"its health soak (" + rolloutplan.DefaultHealthSoak.String() + ", the default, unless the row names another; a soak of 0s still waits for the agent to be healthy on the new work generation); " +
		"OCM's Completed does not wait for health.")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
