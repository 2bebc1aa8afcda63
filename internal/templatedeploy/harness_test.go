//go:build integration

package templatedeploy_test

// The integration suite runs the rollout controller (controller.New/Run) and the template
// reconcilers (templatedeploy.New/Run) in-process against the real kube-apiserver and etcd of
// internal/testing/localhub; tests that need ManifestWorks applied and reported run OCM's own work agent
// (internal/testing/ocmhub). The rollout controller manages every self-managed CMA of the hub and cannot be
// restricted from outside its package, so tests run one after the other, each with its own add-on,
// clusters and controller, and delete their CMA at the end.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

type env struct {
	healthGate bool
	healthSoak string
	t          *testing.T
	ctx        context.Context
	hub        *localhub.Hub
	c          *localhub.Clients
	addon      string
	opts       envOptions
	// stop stops the running controller and waits until it has (restart, the test's cleanup).
	stop func()
}

type envOptions struct {
	caRecheck time.Duration
	// healthGate keeps the rollout's health gate on (rolloutplan.HealthChecked): these tests run OCM's
	// work agent without a kubelet, so an agent Deployment never becomes ready unless the test sets
	// its status; tests about deployment mechanics annotate their CMA addonops.io/health-check: none.
	healthGate bool
	// healthSoak is the CMA's addonops.io/health-soak when the health gate is on ("" = 0s: the
	// tests not about the soak do not wait for it).
	healthSoak string
	// interimHold is the controller's Options.InterimHold (0: its default, 15s).
	interimHold time.Duration
	// signingCANamespace and controllerNamespaces are templatedeploy.Options'.
	signingCANamespace   string
	controllerNamespaces []string
}

// newEnv starts the rollout controller and the template reconcilers for one test's add-on.
func newEnv(t *testing.T, addon string, o envOptions) *env {
	t.Helper()
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, hub: hub, c: hub.Clients, addon: addon, healthGate: o.healthGate, healthSoak: o.healthSoak, opts: o}
	e.start()
	t.Cleanup(func() {
		// The CMA goes first, so the next test's controller leaves this test's objects alone.
		_ = e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), addon, metav1.DeleteOptions{})
		e.stop()
	})
	return e
}

// start runs a new controller with the test's options.
func (e *env) start() {
	t := e.t
	t.Helper()
	cfg := rest.CopyConfig(e.hub.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))
	runCtx, stop := context.WithCancel(klog.NewContext(context.Background(), logger))
	ctrl, err := rolloutsim.StartController(runCtx, cfg, controller.Options{Addons: controller.AddonsSelf, HistoryNamespace: "default", Only: []string{e.addon}, Coalesce: 50 * time.Millisecond, Resync: time.Minute,
		InterimHold: e.opts.interimHold, DeployTemplates: &templatedeploy.Options{Workers: 2, CARecheck: e.opts.caRecheck,
			SigningCANamespace: e.opts.signingCANamespace, ControllerNamespaces: e.opts.controllerNamespaces}})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	e.stop = func() {
		stop()
		if err := ctrl.Stop(); err != nil {
			t.Errorf("controller: %v", err)
		}
	}
}

// restart stops the controller and starts a new one, as after a crash: nothing the old one held
// in memory (changes deferred to a later write, interim status, queues) reaches the new one, which
// starts from what the API server has.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// cleanup removes, when the test ends, the add-on's CMA, its MCAs in clusters and their works,
// and waits until the works are gone, so the test can run again on the same hub (go test -count).
// Call it after starting OCM's work agents: cleanups run in reverse order, and works carrying an
// agent's finalizer only go while the agent runs.
func (e *env) cleanup(clusters ...string) {
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(ctx, e.addon, metav1.DeleteOptions{})
		sel := metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + e.addon}
		for _, c := range clusters {
			mcas := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(c)
			if m, err := mcas.Get(ctx, e.addon, metav1.GetOptions{}); err == nil && len(m.Finalizers) > 0 {
				m.Finalizers = nil
				_, _ = mcas.Update(ctx, m, metav1.UpdateOptions{})
			}
			_ = mcas.Delete(ctx, e.addon, metav1.DeleteOptions{})
			_ = e.c.Work.WorkV1().ManifestWorks(c).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
		}
		// ctx bounds the wait; Until cannot fail the test, which is ending: Errorf says it.
		if _, err := harness.Until(ctx, 2*time.Minute, 200*time.Millisecond, func() string {
			left := 0
			for _, c := range clusters {
				if l, err := e.c.Work.WorkV1().ManifestWorks(c).List(ctx, sel); err == nil {
					left += len(l.Items)
				}
			}
			if left > 0 {
				return fmt.Sprintf("%d works left", left)
			}
			return ""
		}); err != nil {
			e.t.Errorf("cleanup: the works of %s in %v did not go: %v", e.addon, clusters, err)
		}
	})
}

// apply creates or replaces objects given as YAML documents, with the dynamic client.
func (e *env) apply(docs string) {
	e.t.Helper()
	for _, doc := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			e.t.Fatalf("%v in\n%s", err, doc)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			e.t.Fatal(err)
		}
		gvr := gvrOf(u.GetKind())
		var api interface {
			Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
			Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
			Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error)
		}
		if u.GetNamespace() != "" {
			api = e.c.Dynamic.Resource(gvr).Namespace(u.GetNamespace())
		} else {
			api = e.c.Dynamic.Resource(gvr)
		}
		cur, err := api.Get(e.ctx, u.GetName(), metav1.GetOptions{})
		if err == nil {
			u.SetResourceVersion(cur.GetResourceVersion())
			_, err = api.Update(e.ctx, u, metav1.UpdateOptions{})
		} else {
			_, err = api.Create(e.ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			e.t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// kinds are the kinds tests apply from YAML.
var kinds = map[string]schema.GroupVersionResource{
	"AddOnTemplate":         {Group: addonv1alpha1.GroupName, Version: "v1alpha1", Resource: "addontemplates"},
	"AddOnDeploymentConfig": {Group: addonv1alpha1.GroupName, Version: "v1alpha1", Resource: "addondeploymentconfigs"},
	"Secret":                {Version: "v1", Resource: "secrets"},
	"Namespace":             {Version: "v1", Resource: "namespaces"},
	"ClusterRole":           {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"Role":                  {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	"ClusterRoleBinding":    {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
}

func gvrOf(kind string) schema.GroupVersionResource {
	gvr, ok := kinds[kind]
	if !ok {
		panic("test applies unknown kind " + kind)
	}
	return gvr
}

// cma creates the test's ClusterManagementAddOn (lifecycle self, manual install unless placements
// are given) with a default AddOnTemplate and optional default ADC ("ns/name").
func (e *env) cma(template, adc string, placements ...addonv1alpha1.PlacementStrategy) {
	e.t.Helper()
	cma := &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: e.addon, Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"}},
				{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}},
			},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
		},
	}
	if template != "" {
		cma.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Name: template}
	}
	if adc != "" {
		ns, name, _ := strings.Cut(adc, "/")
		cma.Spec.SupportedConfigs[1].DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: ns, Name: name}
	}
	if len(placements) > 0 {
		cma.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: placements}
	}
	if !e.healthGate {
		cma.Annotations[rolloutplan.HealthCheckAnnotation] = "none"
	} else {
		cma.Annotations[rolloutplan.HealthSoakAnnotation] = cmp.Or(e.healthSoak, "0s")
	}
	if _, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(e.ctx, cma, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// setDefaultTemplate points the CMA's default AddOnTemplate at name.
func (e *env) setDefaultTemplate(name string) {
	e.t.Helper()
	api := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	for range 10 {
		cur, err := api.Get(e.ctx, e.addon, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		cur.Spec.SupportedConfigs[0].DefaultConfig = &addonv1alpha1.ConfigReferent{Name: name}
		if _, err = api.Update(e.ctx, cur, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	e.t.Fatal("updating the CMA kept conflicting")
}

// mca creates the add-on's ManagedClusterAddOn in a cluster namespace (manual install).
func (e *env) mca(cluster string) {
	e.t.Helper()
	_, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Create(e.ctx,
		&addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: e.addon, Namespace: cluster}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

// mcaInNamespace creates the add-on's MCA in a cluster namespace with its own
// AddOnDeploymentConfig (spec.configs) installing the agent into the cluster namespace, so clusters
// sharing this one API server never share an object.
func (e *env) mcaInNamespace(cluster string) {
	e.t.Helper()
	e.apply(fmt.Sprintf("apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: %s, namespace: %s}\nspec: {agentInstallNamespace: %s}\n", e.addon, cluster, cluster))
	_, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Create(e.ctx, &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: e.addon, Namespace: cluster},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: []addonv1alpha1.AddOnConfig{{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: cluster, Name: e.addon},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) getMCA(cluster string) *addonv1alpha1.ManagedClusterAddOn {
	m, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Get(e.ctx, e.addon, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return m
}

func (e *env) works(cluster string) []workv1.ManifestWork {
	list, err := e.c.Work.WorkV1().ManifestWorks(cluster).List(e.ctx, metav1.ListOptions{LabelSelector: addonv1alpha1.AddonLabelKey + "=" + e.addon})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

func (e *env) work(cluster, name string) *workv1.ManifestWork {
	w, err := e.c.Work.WorkV1().ManifestWorks(cluster).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return w
}

// waitFor polls cond every 100ms until it returns "" or timeout passes; the failure quotes cond's
// last answer.
func (e *env) waitFor(timeout time.Duration, what string, cond func() string) time.Duration {
	e.t.Helper()
	return harness.Eventually(e.t, timeout, what, cond, harness.Within(e.ctx))
}

// holds lets d pass, failing as soon as check reports something: the wait of a test proving that a
// thing does NOT happen.
func (e *env) holds(d time.Duration, what string, check func() string) {
	e.t.Helper()
	harness.Consistently(e.t, d, what, check, harness.Within(e.ctx))
}

// condition renders an MCA condition as "Status/Reason: message" ("-" when absent).
func condition(m *addonv1alpha1.ManagedClusterAddOn, typ string) string {
	if m == nil {
		return "(no MCA)"
	}
	c := meta.FindStatusCondition(m.Status.Conditions, typ)
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

// waitCondition waits until the MCA's condition starts with want ("Status/Reason" or more).
func (e *env) waitCondition(timeout time.Duration, cluster, typ, want string) {
	e.t.Helper()
	e.waitFor(timeout, fmt.Sprintf("%s %s %s", cluster, typ, want), func() string {
		got := condition(e.getMCA(cluster), typ)
		if strings.HasPrefix(got, want) {
			return ""
		}
		return got
	})
}

// configHashes parses a work's config-spec-hash annotation.
func configHashes(w *workv1.ManifestWork) map[string]string {
	var m map[string]string
	_ = json.Unmarshal([]byte(w.Annotations[workv1.ManifestConfigSpecHashAnnotationKey]), &m)
	return m
}

// manifestNames lists "Kind/name" of a work's manifests in order.
func manifestNames(w *workv1.ManifestWork) []string {
	var out []string
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err == nil {
			out = append(out, u.GetKind()+"/"+u.GetName())
		}
	}
	return out
}

func workReady(w *workv1.ManifestWork) bool {
	for _, t := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		c := meta.FindStatusCondition(w.Status.Conditions, t)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
			return false
		}
	}
	return true
}

// eventsFor lists the reasons and messages of the events about an object (this incarnation of it:
// uid).
func (e *env) eventsFor(namespace, name, uid string) []string {
	list, err := e.c.Kube.CoreV1().Events(namespace).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",involvedObject.uid=" + uid})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return out
}
