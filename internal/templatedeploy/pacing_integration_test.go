//go:build integration

package templatedeploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
)

// agentTemplate is a template of a ConfigMap and a Deployment. Hub and managed clusters are one API
// server here, so each cluster's MCA gets an AddOnDeploymentConfig that installs into the cluster
// namespace (mcaInNamespace): the work agents of several clusters never share an object.
func agentTemplate(name, addon, version string, extra string) string {
	return fmt.Sprintf(`apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: %[1]s}
spec:
  addonName: %[2]s
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: %[2]s-settings, namespace: default}
        data: {version: %[3]q}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: %[2]s-agent, namespace: default}
        spec:
          replicas: 1
          selector: {matchLabels: {app: %[2]s}}
          template:
            metadata: {labels: {app: %[2]s, version: %[3]q}}
            spec:
              containers: [{name: agent, image: "example.com/agent:%[3]s"}]
%[4]s`, name, addon, version, extra)
}

// workEvent is one observed state of an add-on work.
type workEvent struct {
	cluster string
	name    string
	config  string // template name in the config-spec-hash annotation
	version string // data.version of the work's ConfigMap
	ready   bool   // Applied and Available at its generation
	deleted bool
}

// watchWorks records every change of the add-on's works, in the API server's order.
func (e *env) watchWorks() (events func() []workEvent) {
	e.t.Helper()
	sel := addonv1alpha1.AddonLabelKey + "=" + e.addon
	api := e.c.Work.WorkV1().ManifestWorks("")
	list, err := api.List(e.ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(e.ctx, list.ResourceVersion, watchFunc(func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = sel
		return api.Watch(ctx, o)
	}))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	var mu sync.Mutex
	var evs []workEvent
	go func() {
		for ev := range w.ResultChan() {
			wk, ok := ev.Object.(*workv1.ManifestWork)
			if !ok {
				continue
			}
			mu.Lock()
			evs = append(evs, workEvent{cluster: wk.Namespace, name: wk.Name, config: templateOf(wk), version: settingsVersion(wk),
				ready: workReady(wk), deleted: ev.Type == watch.Deleted})
			mu.Unlock()
		}
	}()
	return func() []workEvent {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(evs)
	}
}

// settingsVersion is data.version of the ConfigMap in a work.
func settingsVersion(w *workv1.ManifestWork) string {
	for _, m := range w.Spec.Workload.Manifests {
		var obj struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if json.Unmarshal(m.Raw, &obj) == nil && obj.Kind == "ConfigMap" {
			return obj.Data["version"]
		}
	}
	return ""
}

func templateOf(w *workv1.ManifestWork) string {
	for k := range configHashes(w) {
		if strings.HasPrefix(k, "addontemplates.") {
			return k[strings.LastIndex(k, "/")+1:]
		}
	}
	return ""
}

// TestTemplateUpgradePacing: a template upgrade under a Progressive rollout with maxConcurrency 1
// over 5 clusters, with OCM's work agents applying the works. Watching the works shows the new
// template reaching one cluster at a time: a cluster's works change only after the previous
// cluster's new works are applied and available, and the clusters waiting for their turn keep
// their old works untouched.
func TestTemplateUpgradePacing(t *testing.T) {
	const addon = "pacing"
	e := newEnv(t, addon, envOptions{})
	ocm := ocmhub.ForTest(t, e.hub, ocmhub.Options{StatusSyncInterval: 2 * time.Second})
	var clusters []ocmhub.Cluster
	var names []string
	for i := range 5 {
		n := fmt.Sprintf("pacing%d", i+1)
		clusters = append(clusters, ocmhub.Cluster{Name: n, Labels: map[string]string{"pacing": "yes"}})
		names = append(names, n)
	}
	if _, err := ocm.AddClusters(e.ctx, clusters...); err != nil {
		t.Fatal(err)
	}
	const ns = "pacing-placements"
	if err := localhub.EnsureNamespace(e.ctx, e.c.Kube, ns); err != nil {
		t.Fatal(err)
	}
	if err := ocm.BindClusterSet(e.ctx, ns); err != nil {
		t.Fatal(err)
	}
	e.cleanup(names...)
	if _, err := e.c.Cluster.ClusterV1beta1().Placements(ns).Create(e.ctx, &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"},
		Spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pacing": "yes"}}}}}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	e.apply(agentTemplate("pacing-v1", addon, "1", ""))
	e.apply(agentTemplate("pacing-v2", addon, "2", ""))
	strategy := func(template string) addonv1alpha1.PlacementStrategy {
		return addonv1alpha1.PlacementStrategy{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: "all"},
			Configs: []addonv1alpha1.AddOnConfig{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"},
				ConfigReferent:      addonv1alpha1.ConfigReferent{Name: template},
			}},
			RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
				MaxConcurrency: intstr.FromInt32(1)}},
		}
	}
	for _, c := range names {
		e.mcaInNamespace(c)
	}
	e.cma("", "", strategy("pacing-v1"))

	// Install: every cluster ends up running v1.
	installed := func(version string) func() string {
		return func() string {
			var waiting []string
			for _, c := range names {
				m := e.getMCA(c)
				w := e.work(c, "addon-pacing-deploy-0")
				if m == nil || w == nil || templateOf(w) != version || !workReady(w) || !applied(m, version) {
					waiting = append(waiting, c)
				}
			}
			if len(waiting) > 0 {
				return fmt.Sprintf("clusters not running %s: %v", version, waiting)
			}
			return ""
		}
	}
	took := e.waitFor(3*time.Minute, "v1 on every cluster", installed("pacing-v1"))
	t.Logf("installed on 5 clusters one at a time in %v", took.Round(time.Millisecond))
	for _, c := range names {
		e.waitCondition(time.Minute, c, "ManifestApplied", "True/AddonManifestApplied")
	}
	generations := map[string]int64{}
	for _, c := range names {
		generations[c] = e.work(c, "addon-pacing-deploy-0").Generation
	}

	events := e.watchWorks()
	api := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	// The controller writes the CMA's status meanwhile: read, change and write until no conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cma, err := api.Get(e.ctx, addon, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cma.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{strategy("pacing-v2")}
		_, err = api.Update(e.ctx, cma, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	took = e.waitFor(3*time.Minute, "v2 on every cluster", installed("pacing-v2"))
	t.Logf("upgraded 5 clusters one at a time in %v", took.Round(time.Millisecond))

	checkPacing(t, events(), "pacing-v2", "")
	// OCM's agents applied what was rendered: each cluster's own ConfigMap at version 2.
	for _, c := range names {
		cm, err := e.c.Kube.CoreV1().ConfigMaps(c).Get(e.ctx, "pacing-settings", metav1.GetOptions{})
		if err != nil || cm.Data["version"] != "2" {
			t.Errorf("ConfigMap %s/pacing-settings: %v %v", c, cm.Data, err)
		}
	}
	// One update per cluster: the work's generation moved by exactly one.
	for _, c := range names {
		if got := e.work(c, "addon-pacing-deploy-0").Generation; got != generations[c]+1 {
			t.Errorf("%s work generation %d -> %d, want one update", c, generations[c], got)
		}
		generations[c]++
	}

	// pacing-v2 edited in place: the rollout holds the clusters whose turn has not come
	// (Configured=False, desired spec hash unchanged) and the deployer must not render the edited
	// template for them, although it is the object their desired config names (OCM would).
	events = e.watchWorks()
	e.apply(agentTemplate("pacing-v2", addon, "2b", ""))
	took = e.waitFor(3*time.Minute, "the edited v2 on every cluster", func() string {
		for _, c := range names {
			cm, err := e.c.Kube.CoreV1().ConfigMaps(c).Get(e.ctx, "pacing-settings", metav1.GetOptions{})
			if err != nil || cm.Data["version"] != "2b" {
				return c + " not running 2b yet"
			}
			if w := e.work(c, "addon-pacing-deploy-0"); !workReady(w) {
				return c + " work not ready"
			}
		}
		return installed("pacing-v2")()
	})
	t.Logf("in-place edit rolled out in %v", took.Round(time.Millisecond))
	checkPacing(t, events(), "pacing-v2", "2b")
	for _, c := range names {
		if got := e.work(c, "addon-pacing-deploy-0").Generation; got != generations[c]+1 {
			t.Errorf("%s work generation %d -> %d, want one update for the edit", c, generations[c], got)
		}
	}
}

// checkPacing replays works' history during a rollout to template (content version when the
// template was edited in place): at no time more than one cluster had new works that were not yet
// applied and available; every cluster switched exactly once and never back; nothing was deleted.
func checkPacing(t *testing.T, events []workEvent, template, version string) {
	t.Helper()
	isNew := func(ev workEvent) bool { return ev.config == template && (version == "" || ev.version == version) }
	var order []string
	inFlight := map[string]bool{}
	switched := map[string]int{}
	most := 0
	for _, ev := range events {
		if ev.deleted {
			t.Errorf("work %s/%s deleted during the rollout", ev.cluster, ev.name)
		}
		if isNew(ev) && switched[ev.cluster] == 0 {
			switched[ev.cluster]++
			order = append(order, ev.cluster)
		}
		if !isNew(ev) && switched[ev.cluster] > 0 {
			t.Errorf("%s went back to the old version", ev.cluster)
		}
		inFlight[ev.cluster] = isNew(ev) && !ev.ready
		n := 0
		for _, f := range inFlight {
			if f {
				n++
			}
		}
		most = max(most, n)
	}
	if most != 1 {
		t.Errorf("at most %d clusters had new works in flight at once, want 1 (maxConcurrency 1)", most)
	}
	if len(order) != 5 {
		t.Errorf("clusters switched: %v, want all 5", order)
	}
	t.Logf("rollout order: %v", order)
}

// applied reports whether the MCA applied the template (lastAppliedConfig).
func applied(m *addonv1alpha1.ManagedClusterAddOn, template string) bool {
	for _, r := range m.Status.ConfigReferences {
		if r.Resource == "addontemplates" && r.LastAppliedConfig != nil && r.LastAppliedConfig.Name == template &&
			r.DesiredConfig != nil && *r.DesiredConfig == *r.LastAppliedConfig {
			return true
		}
	}
	return false
}
