// Package rolloutsim drives real add-on rollouts for the tests of the health checks and of the
// status command: addonops' controller runs in-process against an internal/testing/localhub API server,
// internal/testing/simagent plays OCM's add-on manager and work agent, and a Scenario sets up clusters, a
// placement, hashed AddOnDeploymentConfigs and a ClusterManagementAddOn the way a GitOps repository
// rendered by config-hash would. Nothing is faked: every status the tests read was written by the
// controller.
//
// One Scenario runs one controller, which manages every CMA annotated
// addon.open-cluster-management.io/lifecycle=self on the hub, so a test package runs its scenarios
// one after the other. At the end of the test a Scenario stops its controller, deletes what it
// created (the CMA and any other CMA given to Track, their ManagedClusterAddOns and ManifestWorks,
// its configs, placements, decisions and clusters) and stops its agent, so the same test can run
// again on the same hub (go test -count=N) and see the same objects.
package rolloutsim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonwork"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// TB is the part of testing.TB a Scenario uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// Scenario is one add-on on a live hub. Its name is the CMA's name and the namespace of its
// placement and configs.
type Scenario struct {
	t     TB
	Hub   *localhub.Hub
	Ctx   context.Context
	Addon string

	mu       sync.Mutex
	outcomes map[string]simagent.Outcome // "<cluster>" or "<cluster>/<config name>"
	clusters []string
	addons   []string // CMAs to delete at the end

	stopController func()
	// controllerOpts are the options of the controller StartController runs.
	controllerOpts controller.Options
}

// Options configure a scenario beyond New's defaults.
type Options struct {
	// AgentDelay is how long the simulated work agent waits before it reports.
	AgentDelay time.Duration
	// NoDeployer runs no simulated add-on manager or work agent: nothing deploys the add-on.
	NoDeployer bool
	// Controller are the controller's options (Coalesce defaults to 50ms).
	Controller controller.Options
}

// New starts a scenario for add-on addon on hub: its namespace, the simulated add-on manager and
// work agent (restricted to addon; every work succeeds unless Outcome says otherwise, and reports
// after agentDelay) and a controller.
func New(t TB, hub *localhub.Hub, addon string, agentDelay time.Duration) *Scenario {
	t.Helper()
	return NewWith(t, hub, addon, Options{AgentDelay: agentDelay})
}

// NewWith is New with options.
func NewWith(t TB, hub *localhub.Hub, addon string, o Options) *Scenario {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if o.Controller.Coalesce == 0 {
		o.Controller.Coalesce = 50 * time.Millisecond
	}
	s := &Scenario{t: t, Hub: hub, Ctx: ctx, Addon: addon, outcomes: map[string]simagent.Outcome{}, addons: []string{addon}, controllerOpts: o.Controller}
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, addon); err != nil {
		t.Fatalf("%v", err)
	}
	// Registered before the controller starts, so it runs after the controller stopped (cleanups
	// run last-in first-out) and before the agent stops.
	t.Cleanup(s.deleteAll)
	if o.NoDeployer {
		s.StartController()
		return s
	}
	agentDelay := o.AgentDelay
	agent, err := simagent.New(s.config(), simagent.Options{
		Addons: []string{addon}, Delay: agentDelay, Workers: 2,
		Outcome: func(cluster, _ string, configs map[string]string) simagent.Outcome {
			s.mu.Lock()
			defer s.mu.Unlock()
			for key := range configs {
				if o, ok := s.outcomes[cluster+"/"+key[strings.LastIndex(key, "/")+1:]]; ok {
					return o
				}
			}
			if o, ok := s.outcomes[cluster]; ok {
				return o
			}
			return simagent.Succeed
		},
	})
	if err != nil {
		t.Fatalf("simagent: %v", err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatalf("simagent: %v", err)
	}
	s.StartController()
	return s
}

func (s *Scenario) config() *rest.Config {
	cfg := rest.CopyConfig(s.Hub.Config)
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

// StartController runs addonops' controller (--addons=self) until StopController or the end of
// the test.
func (s *Scenario) StartController() {
	s.t.Helper()
	c, err := StartController(s.Ctx, s.config(), s.controllerOpts)
	if err != nil {
		s.t.Fatalf("controller: %v", err)
	}
	// Only a controller that does not stop fails the test: an error it returns once stopped is
	// about the stop.
	var once sync.Once
	s.stopController = func() {
		once.Do(func() {
			if err := c.Stop(); !stopped(err) {
				s.t.Errorf("%v", err)
			}
		})
	}
	s.t.Cleanup(s.stopController)
}

// StopController stops the controller and waits for it: the hub then keeps the status it wrote
// last, as after a crash.
func (s *Scenario) StopController() { s.stopController() }

// Track adds a CMA created outside the Scenario (with its MCAs and works) to what it deletes at
// the end.
func (s *Scenario) Track(addon string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addons = append(s.addons, addon)
}

// deleteAll removes what the scenario created and waits until it is gone; a leftover fails the
// test, since the next run would see it.
func (s *Scenario) deleteAll() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := s.Hub.Clients
	s.mu.Lock()
	addons, clusters := slices.Clone(s.addons), slices.Clone(s.clusters)
	s.mu.Unlock()
	var errs []error
	del := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", what, err))
		}
	}
	for _, a := range addons {
		del("ClusterManagementAddOn "+a, c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(ctx, a, metav1.DeleteOptions{}))
		mcas, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + a})
		del("ManagedClusterAddOns "+a, err)
		if err == nil {
			for _, m := range mcas.Items {
				del("ManagedClusterAddOn "+m.Namespace+"/"+m.Name, c.Addon.AddonV1alpha1().ManagedClusterAddOns(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{}))
			}
		}
		works, err := c.Work.WorkV1().ManifestWorks(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + a})
		del("ManifestWorks of "+a, err)
		if err == nil {
			for _, w := range works.Items {
				del("ManifestWork "+w.Namespace+"/"+w.Name, c.Work.WorkV1().ManifestWorks(w.Namespace).Delete(ctx, w.Name, metav1.DeleteOptions{}))
			}
		}
	}
	del("AddOnDeploymentConfigs", c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(s.Addon).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	del("PlacementDecisions", c.Cluster.ClusterV1beta1().PlacementDecisions(s.Addon).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	del("Placements", c.Cluster.ClusterV1beta1().Placements(s.Addon).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	for _, cl := range clusters {
		del("ManagedCluster "+cl, c.Cluster.ClusterV1().ManagedClusters().Delete(ctx, cl, metav1.DeleteOptions{}))
	}
	_, err := harness.Until(ctx, 30*time.Second, harness.DefaultInterval, func() string {
		for _, a := range addons {
			if _, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, a, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("add-on %s still exists (%v)", a, err)
			}
			mcas, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + a})
			if err != nil || len(mcas.Items) > 0 {
				return fmt.Sprintf("add-on %s has ManagedClusterAddOns (%v)", a, err)
			}
		}
		return ""
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("add-ons %v or their ManagedClusterAddOns still exist: %w", addons, err))
	}
	if err := errors.Join(errs...); err != nil {
		s.t.Errorf("cleaning up scenario %s: %v", s.Addon, err)
	}
}

// Outcome sets what the work agent reports for cluster's works: for every config, or (config
// non-empty) for works rendered from the config named config. It applies to the next work
// generation the agent sees; Poke makes it look at the current one again.
func (s *Scenario) Outcome(cluster, config string, o simagent.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := cluster
	if config != "" {
		key += "/" + config
	}
	s.outcomes[key] = o
}

// Poke touches the add-on's work on cluster (a label, no spec change), so the simulated work agent
// reports on its current generation again with the current Outcome: an agent that "never"
// answered answers now.
func (s *Scenario) Poke(cluster string) {
	s.t.Helper()
	api := s.Hub.Clients.Work.WorkV1().ManifestWorks(cluster)
	name := addonwork.DeployWorkName(s.Addon, 0)
	for range 10 {
		w, err := api.Get(s.Ctx, name, metav1.GetOptions{})
		if err != nil {
			s.t.Fatalf("poking work %s/%s: %v", cluster, name, err)
		}
		if w.Labels == nil {
			w.Labels = map[string]string{}
		}
		w.Labels["rolloutsim/poke"] = fmt.Sprint(time.Now().UnixNano())
		if _, err = api.Update(s.Ctx, w, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	s.t.Fatalf("poking work %s/%s kept conflicting", cluster, name)
}

// Clusters makes joined, available ManagedClusters.
func (s *Scenario) Clusters(names ...string) {
	s.t.Helper()
	for _, n := range names {
		if _, err := localhub.EnsureManagedCluster(s.Ctx, s.Hub.Clients, n, nil); err != nil {
			s.t.Fatalf("%v", err)
		}
		s.mu.Lock()
		s.clusters = append(s.clusters, n)
		s.mu.Unlock()
	}
}

// Placement makes Placement <addon>/name selecting clusters, in one decision group.
func (s *Scenario) Placement(name string, clusters ...string) {
	s.t.Helper()
	if _, err := localhub.EnsurePlacement(s.Ctx, s.Hub.Clients, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: s.Addon, Name: name}}); err != nil {
		s.t.Fatalf("%v", err)
	}
	if err := localhub.SetPlacementDecisions(s.Ctx, s.Hub.Clients, s.Addon, name, []localhub.DecisionGroup{{Clusters: clusters}}); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Config creates an AddOnDeploymentConfig version as config-hash renders it: named
// <base>-<suffix of its spec hash>, annotated with its base name, with one customized variable
// version=value. It returns the name.
func (s *Scenario) Config(base, value string) string {
	s.t.Helper()
	spec := addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "version", Value: value}}}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&addonv1alpha1.AddOnDeploymentConfig{Spec: spec})
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	hash, err := spechash.Of(content)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	suffix, err := spechash.Suffix(hash)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	name := base + "-" + suffix
	_, err = s.Hub.Clients.Addon.AddonV1alpha1().AddOnDeploymentConfigs(s.Addon).Create(s.Ctx, &addonv1alpha1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Addon, Annotations: map[string]string{rolloutview.BaseNameAnnotation: base}},
		Spec:       spec,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		s.t.Fatalf("creating AddOnDeploymentConfig %s/%s: %v", s.Addon, name, err)
	}
	return name
}

// Install is one install placement of the scenario's CMA.
type Install struct {
	Placement string
	Config    string // AddOnDeploymentConfig name in the scenario's namespace; "" for none
	Strategy  clusterv1alpha1.RolloutStrategy
}

// CMA creates the scenario's ClusterManagementAddOn (annotated lifecycle=self, so the controller
// manages it, and health-soak 0s) or, if it exists, sets its install placements: what a GitOps sync of a new version
// does.
func (s *Scenario) CMA(installs ...Install) {
	s.t.Helper()
	var placements []addonv1alpha1.PlacementStrategy
	for _, in := range installs {
		ps := addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: s.Addon, Name: in.Placement}, RolloutStrategy: in.Strategy}
		if in.Config != "" {
			ps.Configs = []addonv1alpha1.AddOnConfig{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
				ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: s.Addon, Name: in.Config},
			}}
		}
		placements = append(placements, ps)
	}
	api := s.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	for range 10 {
		cur, err := api.Get(s.Ctx, s.Addon, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = api.Create(s.Ctx, &addonv1alpha1.ClusterManagementAddOn{
				// No health soak: the simulated prober never reports an old agent's health for a
				// new version, and the scenarios are not about the soak.
				ObjectMeta: metav1.ObjectMeta{Name: s.Addon, Annotations: map[string]string{
					addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
					rolloutplan.HealthSoakAnnotation:          "0s"}},
				Spec: addonv1alpha1.ClusterManagementAddOnSpec{
					SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}}},
					InstallStrategy:  addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: placements},
				},
			}, metav1.CreateOptions{})
		} else if err == nil {
			cur.Spec.InstallStrategy.Placements = placements
			_, err = api.Update(s.Ctx, cur, metav1.UpdateOptions{})
		}
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			s.t.Fatalf("writing ClusterManagementAddOn %s: %v", s.Addon, err)
		}
	}
	s.t.Fatalf("writing ClusterManagementAddOn %s kept conflicting", s.Addon)
}

// GetCMA reads the CMA.
func (s *Scenario) GetCMA() (*addonv1alpha1.ClusterManagementAddOn, error) {
	return s.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(s.Ctx, s.Addon, metav1.GetOptions{})
}

// WaitCMA polls the CMA until cond holds; on timeout the test fails with the CMA's progressions.
func (s *Scenario) WaitCMA(timeout time.Duration, what string, cond func(*addonv1alpha1.ClusterManagementAddOn) bool) *addonv1alpha1.ClusterManagementAddOn {
	s.t.Helper()
	var last *addonv1alpha1.ClusterManagementAddOn
	_, err := harness.Until(s.Ctx, timeout, harness.DefaultInterval, func() string {
		cma, err := s.GetCMA()
		if err == nil {
			if last = cma; cond(cma) {
				return ""
			}
		}
		return fmt.Sprintf("CMA %s: %s (%v)", s.Addon, describe(last), err)
	})
	if err != nil {
		s.t.Fatalf("waiting for %s: %v", what, err)
	}
	return last
}

func describe(cma *addonv1alpha1.ClusterManagementAddOn) string {
	if cma == nil {
		return "(not read)"
	}
	var b strings.Builder
	for _, ip := range cma.Status.InstallProgressions {
		for _, c := range ip.Conditions {
			fmt.Fprintf(&b, "\n  %s/%s %s=%s %s: %s", ip.Namespace, ip.Name, c.Type, c.Status, c.Reason, c.Message)
		}
	}
	if b.Len() == 0 {
		return "no install progressions"
	}
	return b.String()
}

// Progressing returns the Progressing reason and message of the CMA's progression for placement.
func Progressing(cma *addonv1alpha1.ClusterManagementAddOn, placement string) (reason, message string) {
	for _, ip := range cma.Status.InstallProgressions {
		if ip.Name != placement {
			continue
		}
		for _, c := range ip.Conditions {
			if c.Type == addonv1alpha1.ManagedClusterAddOnConditionProgressing {
				return c.Reason, c.Message
			}
		}
	}
	return "", ""
}
