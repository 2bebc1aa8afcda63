//go:build integration

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

// The addonops controller in its default mode: OCM's own addon-manager renders the AddOnTemplate
// into ManifestWorks, registers the agents and writes health; the controller (controller.New and
// Run only, no --deploy-templates) paces the rollout through desired configs and Configured.

// amClusters are this test's clusters: few, to keep it fast.
var amClusters = []string{"cluster1", "cluster2", "cluster3"}

// TestAddonManagerDefaultMode installs examples/hello-template with OCM's addon-manager deploying
// it, then upgrades it to a new AddOnTemplate one cluster at a time.
func TestAddonManagerDefaultMode(t *testing.T) {
	started := time.Now()
	s := newAddonManagerSuite(t)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	mcas := s.recordMCAs(ctx, t, helloAddon)
	conds := s.recordConditions(ctx, t)

	// (a) Install.
	objs, _ := s.build(t, "e2e/testdata/hello-template/base")
	tpl := only(t, objs, "AddOnTemplate").GetName()
	adc := only(t, objs, "AddOnDeploymentConfig").GetName()
	s.apply(t, objs)
	t.Logf("applied %d objects: template %s, config %s", len(objs), tpl, adc)

	works := s.waitWorksByOCM(t, tpl)
	for _, c := range amClusters {
		if msg := s.checkWorkWriters(works[c]); msg != "" {
			t.Errorf("%s: %s", c, msg)
		}
	}
	// No Deployment is ready yet: OCM's prober must not call the add-on available.
	for c, m := range mcas.Latest() {
		if strings.HasPrefix(m.Available, "True") {
			t.Errorf("%s: Available %s before any Deployment is ready", c, m.Available)
		}
	}
	stopReady := s.keepDeploymentsReady(t)
	defer stopReady()
	waitRecorded(t, s, mcas, "every cluster InstallSucceed with "+tpl+" and Available", func(m map[string]mcaSnap) string {
		for _, c := range amClusters {
			got := m[c]
			if got.AppliedTpl != tpl || got.DesiredTpl != tpl || got.AppliedADC != adc || got.Progressing != installSucceed ||
				got.Available != "True/ProbeAvailable" {
				return fmt.Sprintf("%s (want template %s, adc %s, %s, True/ProbeAvailable)", got, tpl, adc, installSucceed)
			}
		}
		return ""
	})
	s.checkTemplateVersion(t, false)
	t.Logf("install done after %s", time.Since(started).Round(100*time.Millisecond))

	// (b) Progressive upgrade, maxConcurrency 1.
	upStart := time.Now()
	objs, _ = s.build(t, "e2e/testdata/hello-template/upgrade-progressive")
	newTpl := only(t, objs, "AddOnTemplate").GetName()
	if newTpl == tpl {
		t.Fatalf("the upgrade's template has the base's name %s: nothing would roll out", tpl)
	}
	before := map[string]int64{}
	for c, w := range works {
		before[c] = w.Generation
	}
	mark := mcas.Mark()
	frozen := s.watchFrozenWorks(ctx, t, newTpl, before)
	s.apply(t, objs)
	t.Logf("applied the upgrade: template %s -> %s, placement Progressive maxConcurrency 1", tpl, newTpl)
	waitRecorded(t, s, mcas, "every cluster UpgradeSucceed with "+newTpl+" and Available", func(m map[string]mcaSnap) string {
		for _, c := range amClusters {
			got := m[c]
			if got.AppliedTpl != newTpl || got.DesiredTpl != newTpl || got.Progressing != upgradeSucceed || got.Available != "True/ProbeAvailable" {
				return fmt.Sprintf("%s (want template %s, %s, True/ProbeAvailable)", got, newTpl, upgradeSucceed)
			}
		}
		return ""
	})
	t.Logf("upgrade done after %s", time.Since(upStart).Round(100*time.Millisecond))
	if err := frozen(); err != nil {
		t.Error(err)
	}

	start, events := mcas.Since(mark)
	t.Logf("ManagedClusterAddOn changes:%s", eventLog(events))
	most, when := templateInFlight(start, events, amClusters, newTpl)
	if most != 1 {
		t.Errorf("at most %d clusters were upgrading at once (%v), want exactly 1 (maxConcurrency 1)", most, when)
	}
	// OCM's deployer reports a lost ManifestWork update race (it retries at once) as
	// ManifestApplied=False for a moment: that is no failure, and nothing may fail in this upgrade.
	_, condEvents := conds.Since(0)
	for _, f := range failuresOf(condEvents) {
		t.Errorf("failure: %s", f)
	}
	if unfrozen := toldWithoutWaiting(start, events, amClusters, newTpl); len(unfrozen) > 0 {
		t.Errorf("clusters told to run %s after another without having waited with Configured=False: %v", newTpl, unfrozen)
	}
	for _, c := range amClusters {
		got := reasonsOf(start, events, c, func(m mcaSnap) string { return m.Progressing })
		if want := []string{installSucceed, upgrading, upgradeSucceed}; !slices.Equal(got, want) {
			t.Errorf("%s: Progressing reasons %v, want %v", c, got, want)
		}
	}
	after := s.works(t)
	for _, c := range amClusters {
		if msg := s.checkWorkWriters(after[c]); msg != "" {
			t.Errorf("%s after the upgrade: %s", c, msg)
		}
	}
	s.checkTemplateVersion(t, true)
	t.Logf("wall time: %s (suite start, install, upgrade of %d clusters)", time.Since(started).Round(100*time.Millisecond), len(amClusters))
}

// newAddonManagerSuite starts a hub of its own with OCM's placement controller, addon-manager and a
// work agent per cluster, and the addonops controller in its default mode.
func newAddonManagerSuite(t *testing.T) *suite {
	t.Helper()
	start := time.Now()
	// A hub of its own, not the package's shared one: TestEndToEnd deploys the same hello-template
	// add-on, and neither OCM's addon-manager nor the objects this test leaves (no garbage
	// collector runs on a test hub) may meet it there.
	hub := ownHub(t, "the default-mode test")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &suite{ctx: ctx, hub: hub, c: hub.Clients}
	s.ocm = ocmhub.ForTest(t, hub, ocmhub.Options{StatusSyncInterval: statusSync, AddonManager: true})
	var cls []ocmhub.Cluster
	for _, name := range amClusters {
		cls = append(cls, ocmhub.Cluster{Name: name})
	}
	if _, err := s.ocm.AddClusters(ctx, cls...); err != nil {
		t.Fatal(err)
	}
	if err := localhub.EnsureNamespace(ctx, s.c.Kube, installNamespace); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.applier, err = ssapply.New(s.c.Dynamic, s.c.Kube.Discovery(), fieldManager); err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(s.c.Kube.Discovery())
	if err != nil {
		t.Fatalf("discovering the hub's API resources: %v", err)
	}
	s.mapper = restmapper.NewDiscoveryRESTMapper(groups)
	// What users apply for the default mode: config/default alone (no deploy-templates component).
	s.startController(t, "config/default", controller.Options{Addons: controller.AddonsSelf})
	t.Logf("suite ready in %s: hub, OCM placement controller, addon-manager (ready in %s), %d work agents, "+
		"addonops controller without template deployment", time.Since(start).Round(time.Millisecond),
		s.ocm.AddonManagerStartup.Round(time.Millisecond), len(amClusters))
	return s
}

// helloWorkName is the deploy work OCM's agentdeploy controller writes for a template add-on with
// no hook and a manifest under the size limit.
const helloWorkName = "addon-" + helloAddon + "-deploy-0"

// works returns the hello-template deploy work of every cluster that has one.
func (s *suite) works(t *testing.T) map[string]*workv1.ManifestWork {
	t.Helper()
	out, err := s.listWorks(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *suite) listWorks(ctx context.Context) (map[string]*workv1.ManifestWork, error) {
	out := map[string]*workv1.ManifestWork{}
	sel := labels.SelectorFromSet(labels.Set{addonv1alpha1.AddonLabelKey: helloAddon}).String()
	list, err := s.c.Work.WorkV1().ManifestWorks(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the add-on's ManifestWorks: %w", err)
	}
	for i := range list.Items {
		w := &list.Items[i]
		if w.Name == helloWorkName {
			out[w.Namespace] = w
		}
	}
	return out, nil
}

// waitWorksByOCM waits until every cluster has its deploy work, rendered from tpl: the Deployment
// in it is named after the cluster (the template's {{CLUSTER_NAME}}, substituted by OCM).
func (s *suite) waitWorksByOCM(t *testing.T, tpl string) map[string]*workv1.ManifestWork {
	t.Helper()
	var works map[string]*workv1.ManifestWork
	s.eventually(t, "OCM's addon-manager rendered "+tpl+" into a work per cluster", func() string {
		works = s.works(t)
		for _, c := range amClusters {
			w := works[c]
			if w == nil {
				return fmt.Sprintf("no work %s/%s yet", c, helloWorkName)
			}
			if !slices.ContainsFunc(w.Spec.Workload.Manifests, func(m workv1.Manifest) bool {
				return strings.Contains(string(m.Raw), `"name":"`+helloAgentName(c)+`"`)
			}) {
				return fmt.Sprintf("work %s/%s has no manifest named %s", c, helloWorkName, helloAgentName(c))
			}
		}
		return ""
	})
	return works
}

// checkWorkWriters says what is wrong with who wrote w: its spec only OCM's addon-manager (client-go
// names a field manager after the binary), and nothing in it this test process, where the addonops
// controller runs (the work agent owns metadata.finalizers and the status).
func (s *suite) checkWorkWriters(w *workv1.ManifestWork) string {
	if w == nil {
		return "no deploy work"
	}
	want := filepath.Base(s.ocm.AddonManagerPath)
	self := filepath.Base(os.Args[0])
	var spec, all []string
	for _, f := range w.ManagedFields {
		all = append(all, f.Manager)
		var fields map[string]any
		if f.FieldsV1 != nil {
			if err := json.Unmarshal(f.FieldsV1.Raw, &fields); err != nil {
				return fmt.Sprintf("work %s/%s: managedFields of %s: %v", w.Namespace, w.Name, f.Manager, err)
			}
		}
		if _, ok := fields["f:spec"]; ok && f.Subresource == "" {
			spec = append(spec, f.Manager)
		}
	}
	if !slices.Equal(spec, []string{want}) || slices.Contains(all, self) {
		return fmt.Sprintf("work %s/%s: spec written by %v, managers %v; want the spec written by OCM's addon-manager (%s) "+
			"alone and nothing by this process (%s)", w.Namespace, w.Name, spec, all, want, self)
	}
	return ""
}

// keepDeploymentsReady plays the Deployment controller and kubelet, which do not run here: every
// 200 ms, each hello-template agent Deployment whose status lags its generation gets a 1/1 ready
// status, so the work agents report it through status feedback and OCM's prober writes Available.
func (s *suite) keepDeploymentsReady(t *testing.T) (stop func()) {
	t.Helper()
	t.Logf("no kubelet runs: the test keeps the agent Deployments' status at 1/1 ready itself")
	ctx, cancel := context.WithCancel(s.ctx)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var lastErr error
	wg.Go(func() {
		deps := s.c.Kube.AppsV1().Deployments(installNamespace)
		for ctx.Err() == nil {
			for _, c := range amClusters {
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					d, err := deps.Get(ctx, helloAgentName(c), metav1.GetOptions{})
					if err != nil || d.Status.ObservedGeneration == d.Generation {
						return err
					}
					d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
					_, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
					return err
				})
				if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "not found") {
					errMu.Lock()
					lastErr = fmt.Errorf("setting the status of Deployment %s/%s: %w", installNamespace, helloAgentName(c), err)
					errMu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		errMu.Lock()
		defer errMu.Unlock()
		if lastErr != nil {
			t.Error(lastErr)
		}
	}
}

// watchFrozenWorks polls, every 50 ms until the returned function is called, the deploy works and
// then the ManagedClusterAddOns: a cluster's work whose generation moved past before[cluster]
// must belong to a cluster whose MCA was already told to run newTpl (works are read first, so a
// work changed by then was changed after OCM saw the MCA's turn, and the turn, once given, stays).
// The function returned stops the polling and returns the first violation, or an error when no
// poll ran or not every cluster's work was seen to change (the check would have been vacuous).
func (s *suite) watchFrozenWorks(ctx context.Context, t *testing.T, newTpl string, before map[string]int64) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var violation error
	polls, changesSeen := 0, 0
	wg.Go(func() {
		for ctx.Err() == nil {
			// Works first, then MCAs (see above); a failed read skips the poll.
			works, err := s.listWorks(ctx)
			var mcaList *addonv1alpha1.ManagedClusterAddOnList
			if err == nil {
				mcaList, err = s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			}
			if err == nil {
				polls++
				told := map[string]bool{}
				for i := range mcaList.Items {
					m := &mcaList.Items[i]
					if m.Name == helloAddon {
						told[m.Namespace] = snapMCA(m)[0].DesiredTpl == newTpl
					}
				}
				changed := 0
				for _, c := range amClusters {
					w := works[c]
					if w == nil || w.Generation == before[c] {
						continue
					}
					changed++
					if !told[c] && violation == nil {
						violation = fmt.Errorf("%s: its work %s moved to generation %d (from %d) before its MCA was told to run %s: a waiting cluster's work changed",
							c, helloWorkName, w.Generation, before[c], newTpl)
					}
				}
				changesSeen = max(changesSeen, changed)
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return func() error {
		cancel()
		wg.Wait()
		t.Logf("works of waiting clusters: %d polls, up to %d of %d works changed", polls, changesSeen, len(amClusters))
		if polls == 0 {
			return fmt.Errorf("the works were never read during the upgrade")
		}
		if changesSeen != len(amClusters) {
			return fmt.Errorf("only %d of %d works were seen changed: the upgrade never rendered into them", changesSeen, len(amClusters))
		}
		return violation
	}
}

// checkTemplateVersion checks every cluster's agent Deployment: applied by its own work agent, with
// the cluster's name, at the expected template version.
func (s *suite) checkTemplateVersion(t *testing.T, upgraded bool) {
	t.Helper()
	for _, c := range amClusters {
		d, err := s.c.Kube.AppsV1().Deployments(installNamespace).Get(s.ctx, helloAgentName(c), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		if msg := s.appliedBy(d, c); msg != "" {
			t.Errorf("%s: Deployment %s", c, msg)
		}
		if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--cluster-name="+c) {
			t.Errorf("%s: agent args %v lack --cluster-name=%s", c, args, c)
		}
		v2 := d.Labels["addon-template-version"] == "v2" && d.Spec.Template.Labels["addon-template-version"] == "v2"
		if v2 != upgraded {
			t.Errorf("%s: Deployment labels %v, pod labels %v; upgraded=%v", c, d.Labels, d.Spec.Template.Labels, upgraded)
		}
	}
}

// recordConditions records every condition of the add-on's MCAs as it changes.
func (s *suite) recordConditions(ctx context.Context, t *testing.T) *recorder[condSnap] {
	t.Helper()
	api := s.c.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll)
	sel := fields.OneTermEqualSelector("metadata.name", helloAddon).String()
	return record(ctx, t, "conditions of ManagedClusterAddOns "+helloAddon,
		func(ctx context.Context, o metav1.ListOptions) ([]*addonv1alpha1.ManagedClusterAddOn, string, error) {
			o.FieldSelector = sel
			l, err := api.List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			var out []*addonv1alpha1.ManagedClusterAddOn
			for i := range l.Items {
				out = append(out, &l.Items[i])
			}
			return out, l.ResourceVersion, nil
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return api.Watch(ctx, o)
		},
		func(m *addonv1alpha1.ManagedClusterAddOn) []condSnap {
			var out []condSnap
			for _, c := range m.Status.Conditions {
				out = append(out, condSnap{m.Namespace, c.Type, string(c.Status), c.Reason, c.Message})
			}
			return out
		})
}
