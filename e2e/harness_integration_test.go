//go:build integration

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/ssapply"
)

const (
	// fieldManager is the suite's server-side apply field manager, in the role of Argo CD or Flux.
	fieldManager = "addonops-e2e"
	// installNamespace is where the examples' agents go (their AddOnDeploymentConfigs say so). On a
	// real managed cluster the klusterlet creates it; no klusterlet runs here, so the suite does.
	installNamespace = "open-cluster-management-agent-addon"
	// canaryLabel selects the clusters of kustomize-rollout-examples' canary-placement.
	canaryLabel = "addonops.io/canary"
	// statusSync is the work agents' --status-sync-interval: how soon they report a work Available
	// and a Deployment's status (OCM's default is 10 s; a rollout step waits for it per batch).
	statusSync = time.Second
	// timeout bounds each wait: two cores are shared by parallel test packages.
	timeout = 2 * time.Minute
	// deployment is how the suite deploys the controller: config/default, the deploy-templates
	// component and the grants hello-template needs.
	deployment = "e2e/testdata/hub-deploy"
)

// suite is what every scenario shares: the hub, OCM's placement controller and work agents, and
// the addonops controller with template deployment.
type suite struct {
	kubelet *kubelet
	ctx     context.Context
	hub     *localhub.Hub
	c       *localhub.Clients
	ocm     *ocmhub.OCM
	applier *ssapply.Applier
	mapper  meta.RESTMapper
}

// newSuite starts OCM with the clusters and the addonops controller for t (the whole suite) and
// stops them when t ends, controller first.
func newSuite(t *testing.T) *suite {
	t.Helper()
	return newSuiteOn(t, localhub.ForTest(t))
}

// ownHub starts a hub of its own for a test whose objects must not meet TestEndToEnd's on the
// package's shared hub (the same add-ons, its OCM: one placement controller per hub), and stops it
// when the test ends.
func ownHub(t *testing.T, what string) *localhub.Hub {
	t.Helper()
	hub, err := localhub.Start(context.Background(), localhub.Options{})
	if err != nil {
		t.Fatalf("starting a hub for %s: %v", what, err)
	}
	t.Cleanup(func() {
		if err := hub.Stop(); err != nil {
			t.Errorf("stopping the hub of %s: %v", what, err)
		}
	})
	return hub
}

// newSuiteOn is newSuite on hub: a test that must not meet TestEndToEnd's add-ons and OCM (one
// placement controller per hub) starts a hub of its own.
func newSuiteOn(t *testing.T, hub *localhub.Hub) *suite {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &suite{ctx: ctx, hub: hub, c: hub.Clients}

	s.ocm = ocmhub.ForTest(t, hub, ocmhub.Options{StatusSyncInterval: statusSync})
	var cls []ocmhub.Cluster
	for _, name := range clusters {
		cl := ocmhub.Cluster{Name: name}
		if slices.Contains(canaries, name) {
			cl.Labels = map[string]string{canaryLabel: "true"}
		}
		cls = append(cls, cl)
	}
	if _, err := s.ocm.AddClusters(ctx, cls...); err != nil {
		t.Fatal(err)
	}
	// No ManagedClusterSetBinding is made here: the examples bring their own, and OCM's placement
	// controller selects nothing without one, which is part of what the suite checks.
	if err := localhub.EnsureNamespace(ctx, s.c.Kube, installNamespace); err != nil {
		t.Fatal(err)
	}
	t.Logf("no klusterlet runs: the test creates the agents' install namespace %s itself", installNamespace)
	s.kubelet = s.startKubelet(t)

	var err error
	if s.applier, err = ssapply.New(s.c.Dynamic, s.c.Kube.Discovery(), fieldManager); err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(s.c.Kube.Discovery())
	if err != nil {
		t.Fatalf("discovering the hub's API resources: %v", err)
	}
	s.mapper = restmapper.NewDiscoveryRESTMapper(groups)

	s.startController(t, deployment, controller.Options{Addons: controller.AddonsSelf,
		DeployTemplates: &templatedeploy.Options{SigningCANamespace: configtest.Namespace}})
	t.Logf("suite ready in %s: hub, OCM placement controller (ready in %s), %d work agents, addonops controller",
		time.Since(start).Round(time.Millisecond), s.ocm.PlacementStartup.Round(time.Millisecond), len(clusters))
	return s
}

// startController deploys the controller as a user does (kustomize build of dir, relative to the
// repository root, server-side applied), then runs it in-process with opts, as
// `addonops-controller` with the matching flags does, with nothing but a token of the deployment's
// ServiceAccount: every request is authorized by the RBAC of dir and nothing else, and a
// "forbidden" anywhere in its log fails the test. It logs to a file whose last lines are printed
// when the test failed.
func (s *suite) startController(t *testing.T, dir string, opts controller.Options) {
	t.Helper()
	objs, err := configtest.Build(s.ctx, tools.Kustomize, tools.Root, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := configtest.Apply(s.ctx, s.hub, objs); err != nil {
		t.Fatalf("deploying %s: %v", dir, err)
	}
	t.Logf("no kube-controller-manager runs: the test aggregates the ClusterRoles of %s itself", dir)
	cfg, err := configtest.ServiceAccountConfig(s.ctx, s.hub, configtest.Namespace, configtest.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = s.hub.Config.QPS, s.hub.Config.Burst
	logDir, err := os.MkdirTemp("", "addonops-e2e-controller-")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(logDir, "controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(logFile)))
	runCtx, stop := context.WithCancel(klog.NewContext(context.Background(), logger))
	// client-go's event broadcasters report a refused event through the global logger: into the
	// same file, where a Forbidden fails the suite.
	klog.SetLogger(logger)

	if opts.HistoryNamespace == "" {
		opts.HistoryNamespace = configtest.Namespace // where config/ grants the history ConfigMaps
	}
	ctrl, err := rolloutsim.StartController(runCtx, cfg, opts)
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	t.Cleanup(func() {
		stop()
		if err := ctrl.Stop(); err != nil {
			t.Errorf("controller: %v", err)
		}
		klog.ClearLogger()
		_ = logFile.Close()
		// A Forbidden anywhere is a rule config/ lacks, even when the scenarios got through.
		if log, err := os.ReadFile(logPath); err != nil {
			t.Errorf("reading the controller's log: %v", err)
		} else if n := bytes.Count(log, []byte("forbidden")); n > 0 {
			t.Errorf("the controller was refused %d times with the RBAC of %s (grep forbidden %s)", n, dir, logPath)
		}
		if t.Failed() {
			t.Logf("last lines of the controller's log %s:\n%s", logPath, childproc.Tail(logPath, 60))
			return
		}
		_ = os.RemoveAll(logDir)
	})
}

// build runs `kustomize build --enable-alpha-plugins --enable-exec dir` (dir relative to the
// repository root) and returns the objects and the YAML.
func (s *suite) build(t *testing.T, dir string) ([]*unstructured.Unstructured, []byte) {
	t.Helper()
	objs, out, err := krmfntest.BuildObjects(s.ctx, []string{tools.Kustomize}, tools.Root, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return objs, out
}

// apply server-side applies objs in the order kustomize printed them, as `kubectl apply
// --server-side -f` of the output does: nothing waits for anything in between.
func (s *suite) apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	if _, err := s.applier.ApplyAll(s.ctx, objs); err != nil {
		t.Fatal(err)
	}
}

// get reads an object from the hub by kind.
func (s *suite) get(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return s.c.Dynamic.Resource(mapping.Resource).Namespace(namespace).Get(s.ctx, name, metav1.GetOptions{})
	}
	return s.c.Dynamic.Resource(mapping.Resource).Get(s.ctx, name, metav1.GetOptions{})
}

// eventually polls check until it returns "" or the timeout passes; then it fails the test with
// what check said last.
func (s *suite) eventually(t *testing.T, what string, check func() string) {
	t.Helper()
	harness.Eventually(t, timeout, what, check, harness.Within(s.ctx), harness.Logged())
}

// decisionGroup is one decision group of a Placement as OCM's placement controller writes it.
type decisionGroup struct {
	name     string
	clusters []string // sorted
}

// placementDecisions waits until OCM's placement controller decided exactly groups (by index) for
// the Placement and checks the layout it wrote: PlacementDecisions labelled with the placement and
// their decision group's index and name, and the Placement's status listing the groups. The suite
// never writes decisions itself.
func (s *suite) placementDecisions(t *testing.T, namespace, placement string, groups ...decisionGroup) {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: placement}).String()
	s.eventually(t, fmt.Sprintf("OCM's decisions for Placement %s/%s", namespace, placement), func() string {
		list, err := s.c.Cluster.ClusterV1beta1().PlacementDecisions(namespace).List(s.ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err.Error()
		}
		got := make([]decisionGroup, len(groups))
		for _, d := range list.Items {
			i, err := strconv.Atoi(d.Labels[clusterv1beta1.DecisionGroupIndexLabel])
			if err != nil || i < 0 || i >= len(groups) {
				return fmt.Sprintf("PlacementDecision %s has decision group index %q, want 0..%d", d.Name, d.Labels[clusterv1beta1.DecisionGroupIndexLabel], len(groups)-1)
			}
			got[i].name = d.Labels[clusterv1beta1.DecisionGroupNameLabel]
			for _, c := range d.Status.Decisions {
				got[i].clusters = append(got[i].clusters, c.ClusterName)
			}
		}
		for i := range got {
			slices.Sort(got[i].clusters)
			if got[i].name != groups[i].name || !slices.Equal(got[i].clusters, groups[i].clusters) {
				return fmt.Sprintf("decision groups %+v, want %+v", got, groups)
			}
		}
		p, err := s.c.Cluster.ClusterV1beta1().Placements(namespace).Get(s.ctx, placement, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied) {
			return fmt.Sprintf("Placement conditions %v, want PlacementSatisfied=True", p.Status.Conditions)
		}
		var status []decisionGroup
		for _, g := range p.Status.DecisionGroups {
			status = append(status, decisionGroup{name: fmt.Sprintf("%d/%s/%d", g.DecisionGroupIndex, g.DecisionGroupName, g.ClustersCount)})
		}
		var want []decisionGroup
		for i, g := range groups {
			want = append(want, decisionGroup{name: fmt.Sprintf("%d/%s/%d", i, g.name, len(g.clusters))})
		}
		if !slices.EqualFunc(status, want, func(a, b decisionGroup) bool { return a.name == b.name }) {
			return fmt.Sprintf("Placement status.decisionGroups (index/name/clusters) %v, want %v", status, want)
		}
		return ""
	})
}

// appliedBy reports whether cluster's work agent applied obj: OCM's agent owns what it applies
// through its AppliedManifestWork, named "<sha256 of the agent's hub URL>-<work name>".
func (s *suite) appliedBy(obj metav1.Object, cluster string) string {
	agent := s.ocm.Agent(cluster)
	if agent == nil {
		return "no work agent runs for " + cluster
	}
	prefix := fmt.Sprintf("%x-", sha256.Sum256([]byte(agent.HubURL)))
	var owners []string
	for _, o := range obj.GetOwnerReferences() {
		if o.Kind == "AppliedManifestWork" && strings.HasPrefix(o.Name, prefix) {
			return ""
		}
		owners = append(owners, o.Kind+"/"+o.Name)
	}
	return fmt.Sprintf("%s is not owned by an AppliedManifestWork of %s's agent (%s...); owners %v", obj.GetName(), cluster, prefix, owners)
}

// objectsOf returns the objects of kind in objs.
func objectsOf(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// only returns the one object of kind in objs, failing the test when there is not exactly one.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := objectsOf(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want exactly one %s in the build output, found %d", kind, len(found))
	}
	return found[0]
}

// readYAML decodes a committed YAML file (path relative to the repository root).
func readYAML(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tools.Root, path))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ssapply.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

// sameObject reports how a and b differ as JSON, "" when they do not.
func sameObject(a, b *unstructured.Unstructured) string {
	ja, _ := json.Marshal(a.Object)
	jb, _ := json.Marshal(b.Object)
	if bytes.Equal(ja, jb) {
		return ""
	}
	return fmt.Sprintf("\n%s\nvs\n%s", ja, jb)
}

// checkOverlayTemplate checks that the e2e overlay changed nothing in the example's AddOnTemplate
// but the per-cluster names.
func checkOverlayTemplate(t *testing.T, overlay, example *unstructured.Unstructured) {
	t.Helper()
	want := example.DeepCopy()
	manifests, _, _ := unstructured.NestedSlice(want.Object, "spec", "agentSpec", "workload", "manifests")
	for _, m := range manifests {
		perCluster(m.(map[string]any), "-{{CLUSTER_NAME}}")
	}
	_ = unstructured.SetNestedSlice(want.Object, manifests, "spec", "agentSpec", "workload", "manifests")
	gotSpec, _, _ := unstructured.NestedMap(overlay.Object, "spec")
	wantSpec, _, _ := unstructured.NestedMap(want.Object, "spec")
	if d := sameObject(&unstructured.Unstructured{Object: gotSpec}, &unstructured.Unstructured{Object: wantSpec}); d != "" {
		t.Fatalf("the overlay's AddOnTemplate spec is not the example's (%s) with per-cluster names:%s", example.GetName(), d)
	}
}

// clusters are the simulated managed clusters; the first two are canaries.
var (
	clusters = []string{"cluster1", "cluster2", "cluster3", "cluster4"}
	canaries = []string{"cluster1", "cluster2"}
)
