//go:build integration

package ocmhub_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/ocmhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// waitFor polls check every 200 ms until it returns "" (done) or timeout passes; the last
// non-empty answer is the failure message, so a timeout says what was last seen.
func waitFor(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) (string, error)) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d, err := harness.UntilErr(ctx, timeout, 200*time.Millisecond, func() (string, error) { return check(ctx) })
	if err != nil {
		t.Fatalf("waiting %s for %s: %v", timeout, what, err)
	}
	return d
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestPlacementDecisionGroups: OCM's placement controller turns a Placement with a canary decision
// group into PlacementDecisions labelled with the group's index and name, and follows label changes.
func TestPlacementDecisionGroups(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	t.Logf("hub (etcd, kube-apiserver, CRDs) started in %s", hub.StartDuration.Round(time.Millisecond))
	ocm := ocmhub.ForTest(t, hub, ocmhub.Options{})
	t.Logf("placement controller running %s after launch (log %s)", ocm.PlacementStartup.Round(time.Millisecond), ocm.PlacementLog)

	agents, err := ocm.AddClusters(ctx,
		ocmhub.Cluster{Name: "cluster1", Labels: map[string]string{"canary": "true"}},
		ocmhub.Cluster{Name: "cluster2"},
		ocmhub.Cluster{Name: "cluster3"},
		ocmhub.Cluster{Name: "cluster4"},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		t.Logf("work agent of %s running %s after launch", a.Cluster, a.Startup.Round(time.Millisecond))
	}

	const ns = "ocmhub-placement"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	if err := ocm.BindClusterSet(ctx, ns); err != nil {
		t.Fatal(err)
	}
	p := &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rollout"},
		Spec: clusterv1beta1.PlacementSpec{
			DecisionStrategy: clusterv1beta1.DecisionStrategy{GroupStrategy: clusterv1beta1.GroupStrategy{
				DecisionGroups: []clusterv1beta1.DecisionGroup{{
					GroupName: "canary",
					ClusterSelector: clusterv1beta1.GroupClusterSelector{
						LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}},
					},
				}},
				ClustersPerDecisionGroup: intstr.FromInt32(2),
			}},
		},
	}
	if _, err := hub.Clients.Cluster.ClusterV1beta1().Placements(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Placement: %v", err)
	}

	want := []group{
		{index: 0, name: "canary", clusters: []string{"cluster1"}},
		{index: 1, name: "", clusters: []string{"cluster2", "cluster3"}},
		{index: 2, name: "", clusters: []string{"cluster4"}},
	}
	took := waitFor(t, 2*time.Minute, "OCM's decisions", func(ctx context.Context) (string, error) {
		return checkDecisions(ctx, hub, ns, p.Name, want)
	})
	t.Logf("PlacementDecisions written %s after the Placement was created", took.Round(time.Millisecond))

	// A second canary: the controller moves cluster3 into group 0 and regroups the rest.
	if _, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster3", Labels: map[string]string{"canary": "true"}}); err != nil {
		t.Fatal(err)
	}
	want = []group{
		{index: 0, name: "canary", clusters: []string{"cluster1", "cluster3"}},
		{index: 1, name: "", clusters: []string{"cluster2", "cluster4"}},
	}
	took = waitFor(t, 2*time.Minute, "decisions after relabelling cluster3", func(ctx context.Context) (string, error) {
		return checkDecisions(ctx, hub, ns, p.Name, want)
	})
	t.Logf("decisions followed a label change in %s", took.Round(time.Millisecond))

	// No registration controller runs: a test takes a cluster away with the taint it would add.
	clusters := hub.Clients.Cluster.ClusterV1().ManagedClusters()
	mc, err := clusters.Get(ctx, "cluster4", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc.Spec.Taints = append(mc.Spec.Taints, clusterv1.Taint{
		Key: clusterv1.ManagedClusterTaintUnavailable, Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.Now(),
	})
	if _, err := clusters.Update(ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("tainting cluster4: %v", err)
	}
	want = []group{
		{index: 0, name: "canary", clusters: []string{"cluster1", "cluster3"}},
		{index: 1, name: "", clusters: []string{"cluster2"}},
	}
	took = waitFor(t, 2*time.Minute, "decisions without the tainted cluster4", func(ctx context.Context) (string, error) {
		return checkDecisions(ctx, hub, ns, p.Name, want)
	})
	t.Logf("decisions dropped a tainted cluster in %s", took.Round(time.Millisecond))
}

type group struct {
	index    int
	name     string
	clusters []string
}

// checkDecisions compares the placement's PlacementDecisions (by their group labels) and its status
// with want; it returns what differs, or "".
func checkDecisions(ctx context.Context, hub *localhub.Hub, ns, placement string, want []group) (string, error) {
	list, err := hub.Clients.Cluster.ClusterV1beta1().PlacementDecisions(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: placement}).String(),
	})
	if err != nil {
		return "", err
	}
	byIndex := map[int]*group{}
	for _, d := range list.Items {
		idx, err := strconv.Atoi(d.Labels[clusterv1beta1.DecisionGroupIndexLabel])
		if err != nil {
			return fmt.Sprintf("PlacementDecision %s has group index label %q", d.Name, d.Labels[clusterv1beta1.DecisionGroupIndexLabel]), nil
		}
		name, ok := d.Labels[clusterv1beta1.DecisionGroupNameLabel]
		if !ok {
			return fmt.Sprintf("PlacementDecision %s has no group name label", d.Name), nil
		}
		g := byIndex[idx]
		if g == nil {
			g = &group{index: idx, name: name}
			byIndex[idx] = g
		}
		if g.name != name {
			return fmt.Sprintf("group %d named both %q and %q", idx, g.name, name), nil
		}
		for _, c := range d.Status.Decisions {
			g.clusters = append(g.clusters, c.ClusterName)
		}
	}
	var got []group
	for i := range len(byIndex) {
		g := byIndex[i]
		if g == nil {
			return fmt.Sprintf("group indexes are not 0..%d: %v", len(byIndex)-1, byIndex), nil
		}
		slices.Sort(g.clusters)
		got = append(got, *g)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Sprintf("decision groups %v, want %v", got, want), nil
	}

	p, err := hub.Clients.Cluster.ClusterV1beta1().Placements(ns).Get(ctx, placement, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	total := 0
	for _, g := range want {
		total += len(g.clusters)
	}
	if int(p.Status.NumberOfSelectedClusters) != total || len(p.Status.DecisionGroups) != len(want) {
		return fmt.Sprintf("Placement status: %d clusters in %d groups, want %d in %d",
			p.Status.NumberOfSelectedClusters, len(p.Status.DecisionGroups), total, len(want)), nil
	}
	for i, g := range p.Status.DecisionGroups {
		if int(g.DecisionGroupIndex) != want[i].index || g.DecisionGroupName != want[i].name || int(g.ClustersCount) != len(want[i].clusters) {
			return fmt.Sprintf("Placement status group %d: %+v, want %+v", i, g, want[i]), nil
		}
	}
	if !meta.IsStatusConditionTrue(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied) {
		return "Placement is not PlacementSatisfied", nil
	}
	return "", nil
}

// manifest turns an object into a ManifestWork manifest.
func manifest(t *testing.T, obj runtime.Object) workv1.Manifest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       data,
	}
}

func deployment(ns, name, image string) *appsv1.Deployment {
	replicas := int32(1)
	podLabels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: podLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: image}}},
			},
		},
	}
}

// workCondition returns "" when the work's condition typ has status at the work's current
// generation, else what it is instead.
func workCondition(w *workv1.ManifestWork, typ string, status metav1.ConditionStatus) string {
	c := meta.FindStatusCondition(w.Status.Conditions, typ)
	switch {
	case c == nil:
		return fmt.Sprintf("ManifestWork %s/%s has no %s condition (conditions %v)", w.Namespace, w.Name, typ, w.Status.Conditions)
	case c.Status != status || c.ObservedGeneration != w.Generation:
		return fmt.Sprintf("ManifestWork %s/%s: %s=%s at observedGeneration %d (generation %d): %s", w.Namespace, w.Name,
			typ, c.Status, c.ObservedGeneration, w.Generation, c.Message)
	}
	return ""
}

// TestManifestWorkApplied: OCM's work agent applies a ManifestWork's ConfigMap and Deployment into
// the server, reports Applied and Available at observedGeneration 1, returns the Deployment status
// the test sets (no kubelet runs here) as status feedback, applies an update, and removes the
// objects when the work is deleted.
func TestManifestWorkApplied(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	ocm := ocmhub.ForTest(t, hub, ocmhub.Options{})
	agents, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster1"})
	if err != nil {
		t.Fatal(err)
	}
	agent := agents[0]
	t.Logf("work agent of cluster1 running %s after launch (log %s)", agent.Startup.Round(time.Millisecond), agent.LogPath)

	const target = "ocmhub-applied" // where the agent puts the objects
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, target); err != nil {
		t.Fatal(err)
	}
	work := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "hello"},
		Spec: workv1.ManifestWorkSpec{
			Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				manifest(t, configMap(target, "hello-config", map[string]string{"LOG_LEVEL": "info"})),
				manifest(t, deployment(target, "hello-agent", "quay.io/example/hello:v1")),
			}},
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: target, Name: "hello-agent"},
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
			}},
		},
	}
	works := hub.Clients.Work.WorkV1().ManifestWorks("cluster1")
	if _, err := works.Create(ctx, work, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ManifestWork: %v", err)
	}

	kube := hub.Clients.Kube
	took := waitFor(t, time.Minute, "the ConfigMap and Deployment", func(ctx context.Context) (string, error) {
		cm, err := kube.CoreV1().ConfigMaps(target).Get(ctx, "hello-config", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "no ConfigMap yet", nil
		}
		if err != nil {
			return "", err
		}
		if cm.Data["LOG_LEVEL"] != "info" {
			return fmt.Sprintf("ConfigMap data %v", cm.Data), nil
		}
		d, err := kube.AppsV1().Deployments(target).Get(ctx, "hello-agent", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "no Deployment yet", nil
		}
		if err != nil {
			return "", err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "quay.io/example/hello:v1" {
			return "Deployment image " + img, nil
		}
		return "", nil
	})
	t.Logf("objects applied %s after the ManifestWork was created", took.Round(time.Millisecond))

	took = waitFor(t, time.Minute, "Applied and Available at generation 1", func(ctx context.Context) (string, error) {
		w, err := works.Get(ctx, work.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if w.Generation != 1 {
			return fmt.Sprintf("generation %d", w.Generation), nil
		}
		for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
			if msg := workCondition(w, typ, metav1.ConditionTrue); msg != "" {
				return msg, nil
			}
		}
		if n := len(w.Status.ResourceStatus.Manifests); n != 2 {
			return fmt.Sprintf("%d resource statuses, want 2", n), nil
		}
		for _, m := range w.Status.ResourceStatus.Manifests {
			for _, typ := range []string{workv1.ManifestApplied, workv1.ManifestAvailable} {
				if !meta.IsStatusConditionTrue(m.Conditions, typ) {
					return fmt.Sprintf("%s %s: %s not True: %v", m.ResourceMeta.Kind, m.ResourceMeta.Name, typ, m.Conditions), nil
				}
			}
		}
		return "", nil
	})
	t.Logf("Applied=True, Available=True reported %s after the objects appeared", took.Round(time.Millisecond))

	// The objects belong to this agent's AppliedManifestWork, named after its own hub hash.
	amwName := fmt.Sprintf("%x-%s", sha256.Sum256([]byte(agent.HubURL)), work.Name)
	amw, err := hub.Clients.Work.WorkV1().AppliedManifestWorks().Get(ctx, amwName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("AppliedManifestWork of agent %s: %v", agent.AgentID, err)
	}
	if amw.Spec.AgentID != agent.AgentID || amw.Spec.ManifestWorkName != work.Name {
		t.Errorf("AppliedManifestWork spec %+v, want agent %s and work %s", amw.Spec, agent.AgentID, work.Name)
	}
	cm, err := kube.CoreV1().ConfigMaps(target).Get(ctx, "hello-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != amw.UID {
		t.Errorf("ConfigMap owners %v, want the AppliedManifestWork %s", cm.OwnerReferences, amw.Name)
	}

	// No kubelet runs here, so nothing makes the Deployment ready: the test sets its status as a
	// kubelet and the deployment controller would, and the agent reports it back.
	d, err := kube.AppsV1().Deployments(target).Get(ctx, "hello-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if _, err := kube.AppsV1().Deployments(target).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting the Deployment's status: %v", err)
	}
	took = waitFor(t, time.Minute, "status feedback ReadyReplicas=1", func(ctx context.Context) (string, error) {
		w, err := works.Get(ctx, work.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, m := range w.Status.ResourceStatus.Manifests {
			if m.ResourceMeta.Kind != "Deployment" {
				continue
			}
			for _, v := range m.StatusFeedbacks.Values {
				if v.Name == "ReadyReplicas" && v.Value.Integer != nil && *v.Value.Integer == 1 {
					return "", nil
				}
			}
			return fmt.Sprintf("Deployment feedback %+v", m.StatusFeedbacks.Values), nil
		}
		return "no Deployment in the resource status", nil
	})
	t.Logf("status feedback followed the Deployment status in %s (agent's --status-sync-interval: OCM default 10s)", took.Round(time.Millisecond))

	// An update: generation 2 is applied and reported.
	w, err := works.Get(ctx, work.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Spec.Workload.Manifests[0] = manifest(t, configMap(target, "hello-config", map[string]string{"LOG_LEVEL": "debug"}))
	if _, err := works.Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating ManifestWork: %v", err)
	}
	took = waitFor(t, time.Minute, "the update applied at generation 2", func(ctx context.Context) (string, error) {
		w, err := works.Get(ctx, work.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if w.Generation != 2 {
			return fmt.Sprintf("generation %d", w.Generation), nil
		}
		if msg := workCondition(w, workv1.WorkApplied, metav1.ConditionTrue); msg != "" {
			return msg, nil
		}
		cm, err := kube.CoreV1().ConfigMaps(target).Get(ctx, "hello-config", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if cm.Data["LOG_LEVEL"] != "debug" {
			return fmt.Sprintf("ConfigMap data %v", cm.Data), nil
		}
		return "", nil
	})
	t.Logf("update applied and reported in %s", took.Round(time.Millisecond))

	// Deleting the work removes what it applied (the agent's finalizer), then the work itself.
	if err := works.Delete(ctx, work.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took = waitFor(t, time.Minute, "the work and its objects deleted", func(ctx context.Context) (string, error) {
		if _, err := works.Get(ctx, work.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("ManifestWork still there (%v)", err), nil
		}
		if _, err := kube.CoreV1().ConfigMaps(target).Get(ctx, "hello-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("ConfigMap still there (%v)", err), nil
		}
		// Without a garbage collector (no kube-controller-manager), the Deployment goes only because the
		// agent deletes it itself.
		if d, err := kube.AppsV1().Deployments(target).Get(ctx, "hello-agent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			if err == nil && d.DeletionTimestamp != nil {
				return fmt.Sprintf("Deployment being deleted, finalizers %v", d.Finalizers), nil
			}
			return fmt.Sprintf("Deployment still there (%v)", err), nil
		}
		return "", nil
	})
	t.Logf("work and objects deleted in %s", took.Round(time.Millisecond))
}

// TestInvalidManifestIsNotApplied: manifests the agent cannot apply make the work Applied=False.
func TestInvalidManifestIsNotApplied(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	ocm := ocmhub.ForTest(t, hub, ocmhub.Options{})
	if _, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster2"}); err != nil {
		t.Fatal(err)
	}
	const target = "ocmhub-invalid"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, target); err != nil {
		t.Fatal(err)
	}
	unknownKind := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "NoSuchKind"},
		ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "x"},
	}
	for _, tc := range []struct {
		name     string
		manifest runtime.Object
	}{
		{"unknown-kind", unknownKind},
		{"rejected-by-the-server", configMap(target, "Not_A_Valid_Name", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			works := hub.Clients.Work.WorkV1().ManifestWorks("cluster2")
			work := &workv1.ManifestWork{
				ObjectMeta: metav1.ObjectMeta{Namespace: "cluster2", Name: tc.name},
				Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
					manifest(t, tc.manifest),
					manifest(t, configMap(target, tc.name+"-valid", map[string]string{"k": "v"})),
				}}},
			}
			if _, err := works.Create(ctx, work, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating ManifestWork: %v", err)
			}
			var last *workv1.ManifestWork
			waitFor(t, time.Minute, "Applied=False", func(ctx context.Context) (string, error) {
				w, err := works.Get(ctx, work.Name, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				last = w
				return workCondition(w, workv1.WorkApplied, metav1.ConditionFalse), nil
			})
			// The bad manifest says why; the valid one next to it is still applied.
			var bad, good *workv1.ManifestCondition
			for i := range last.Status.ResourceStatus.Manifests {
				m := &last.Status.ResourceStatus.Manifests[i]
				switch m.ResourceMeta.Ordinal {
				case 0:
					bad = m
				case 1:
					good = m
				}
			}
			if bad == nil || good == nil {
				t.Fatalf("resource status %+v lacks a manifest", last.Status.ResourceStatus.Manifests)
			}
			if c := meta.FindStatusCondition(bad.Conditions, workv1.ManifestApplied); c == nil || c.Status != metav1.ConditionFalse || c.Message == "" {
				t.Errorf("invalid manifest's Applied condition %+v, want False with a message", c)
			} else {
				t.Logf("invalid manifest: %s: %s", c.Reason, c.Message)
			}
			if !meta.IsStatusConditionTrue(good.Conditions, workv1.ManifestApplied) {
				t.Errorf("valid manifest next to it: conditions %v, want Applied=True", good.Conditions)
			}
			if err := works.Delete(ctx, work.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSameWorkNameInTwoClusters: hub and spoke are one API server, yet two agents with same-named
// works keep their AppliedManifestWorks and objects apart (see alias.go); with a shared hub URL
// the second agent's work took over the first one's and its ConfigMap disappeared.
func TestSameWorkNameInTwoClusters(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	ocm := ocmhub.ForTest(t, hub, ocmhub.Options{})
	agents, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster3"}, ocmhub.Cluster{Name: "cluster4"})
	if err != nil {
		t.Fatal(err)
	}
	const target = "ocmhub-same-name"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, target); err != nil {
		t.Fatal(err)
	}
	for _, a := range agents {
		w := &workv1.ManifestWork{
			ObjectMeta: metav1.ObjectMeta{Namespace: a.Cluster, Name: "addon-hello-deploy-0"},
			Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{
				manifest(t, configMap(target, "from-"+a.Cluster, map[string]string{"cluster": a.Cluster})),
			}}},
		}
		if _, err := hub.Clients.Work.WorkV1().ManifestWorks(a.Cluster).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	exists := func(ctx context.Context, cluster string) (bool, error) {
		_, err := hub.Clients.Kube.CoreV1().ConfigMaps(target).Get(ctx, "from-"+cluster, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	waitFor(t, time.Minute, "both ConfigMaps and both works Applied", func(ctx context.Context) (string, error) {
		for _, a := range agents {
			ok, err := exists(ctx, a.Cluster)
			if err != nil || !ok {
				return "no ConfigMap from " + a.Cluster, err
			}
			w, err := hub.Clients.Work.WorkV1().ManifestWorks(a.Cluster).Get(ctx, "addon-hello-deploy-0", metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			if msg := workCondition(w, workv1.WorkApplied, metav1.ConditionTrue); msg != "" {
				return msg, nil
			}
		}
		return "", nil
	})
	amws, err := hub.Clients.Work.WorkV1().AppliedManifestWorks().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	for _, amw := range amws.Items {
		if amw.Spec.ManifestWorkName == "addon-hello-deploy-0" {
			owners[amw.Spec.AgentID] = amw.Name
		}
	}
	for _, a := range agents {
		if owners[a.AgentID] == "" {
			t.Errorf("no AppliedManifestWork of agent %s; AppliedManifestWorks by agent: %v", a.AgentID, owners)
		}
	}

	// Deleting cluster3's work removes cluster3's ConfigMap only.
	if err := hub.Clients.Work.WorkV1().ManifestWorks("cluster3").Delete(ctx, "addon-hello-deploy-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "cluster3's work and ConfigMap gone", func(ctx context.Context) (string, error) {
		_, err := hub.Clients.Work.WorkV1().ManifestWorks("cluster3").Get(ctx, "addon-hello-deploy-0", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("work still there (%v)", err), nil
		}
		ok, err := exists(ctx, "cluster3")
		if ok {
			return "ConfigMap from cluster3 still there", err
		}
		return "", err
	})
	if ok, err := exists(ctx, "cluster4"); err != nil || !ok {
		t.Errorf("cluster4's ConfigMap went with cluster3's work (exists=%v, err=%v)", ok, err)
	}
}

// TestStopLeavesNothingRunning: Stop ends every process, removes the log directory, and a second
// Stop is harmless; a stopped agent's cluster can get a new agent that takes over at once.
func TestStopLeavesNothingRunning(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	ocm, err := ocmhub.Start(ctx, hub, ocmhub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster5"}); err != nil {
		_ = ocm.Stop()
		t.Fatal(err)
	}
	// Restart the agent: it releases its lease on SIGTERM, so the new one runs at once.
	if err := ocm.StopAgent("cluster5"); err != nil {
		t.Fatal(err)
	}
	agents, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster5"})
	if err != nil {
		_ = ocm.Stop()
		t.Fatal(err)
	}
	t.Logf("restarted work agent running %s after launch", agents[0].Startup.Round(time.Millisecond))

	pids := ocm.PIDs()
	if len(pids) != 2 {
		t.Errorf("PIDs() = %v, want the placement controller and one agent", pids)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("process %d not running before Stop: %v", pid, err)
		}
	}
	if err := ocm.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(ocm.LogDir); !os.IsNotExist(err) {
		t.Errorf("log directory %s still there after Stop (%v)", ocm.LogDir, err)
	}
	if err := ocm.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "cluster5"}); err == nil || !strings.Contains(err.Error(), "after Stop") {
		t.Errorf("AddClusters after Stop: err = %v, want a refusal", err)
	}
}

// TestSimulatedAgentsAndScheduled: with SimulatedAgents, AddClusters registers the clusters and
// starts no work agent (the placement controller is the only process); Scheduled says what a
// Placement waits for until OCM's decisions hold its selected clusters.
func TestSimulatedAgentsAndScheduled(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx := ctxFor(t)
	ocm := ocmhub.ForTest(t, hub, ocmhub.Options{SimulatedAgents: true})
	// The package's tests share one hub: the Placement below selects these clusters by label.
	sim := map[string]string{"ocmhub-simulated": "true"}
	agents, err := ocm.AddClusters(ctx, ocmhub.Cluster{Name: "sim1", Labels: sim}, ocmhub.Cluster{Name: "sim2", Labels: sim},
		ocmhub.Cluster{Name: "sim3", Labels: sim})
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 0 || len(ocm.PIDs()) != 1 {
		t.Errorf("AddClusters with SimulatedAgents: agents %v, processes %v; want no agent, the placement controller alone", agents, ocm.PIDs())
	}
	for _, name := range []string{"sim1", "sim2", "sim3"} {
		mc, err := hub.Clients.Cluster.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster %s not registered: %v", name, err)
		}
		if mc.Labels[clusterv1beta2.ClusterSetLabel] != ocm.ClusterSet {
			t.Errorf("cluster %s labels %v, want it in set %s", name, mc.Labels, ocm.ClusterSet)
		}
	}

	const ns = "ocmhub-scheduled"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	if _, pending, err := ocmhub.Scheduled(ctx, hub.Clients, ns, "all"); err != nil || !strings.Contains(pending, "not on the hub") {
		t.Errorf("Scheduled of a missing Placement: pending %q, err %v; want it pending, not on the hub", pending, err)
	}
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}, Spec: clusterv1beta1.PlacementSpec{
		Predicates: []clusterv1beta1.ClusterPredicate{{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: sim}}}}}}
	if _, err := hub.Clients.Cluster.ClusterV1beta1().Placements(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No ManagedClusterSetBinding in ns yet: OCM says so, and Scheduled passes it on.
	waitFor(t, 2*time.Minute, "Scheduled to quote OCM's NoManagedClusterSetBindings", func(ctx context.Context) (string, error) {
		_, pending, err := ocmhub.Scheduled(ctx, hub.Clients, ns, "all")
		if err != nil || strings.Contains(pending, "NoManagedClusterSetBindings") {
			return "", err
		}
		return "pending " + pending, nil
	})
	if err := ocm.BindClusterSet(ctx, ns); err != nil {
		t.Fatal(err)
	}
	var n int
	waitFor(t, 2*time.Minute, "the Placement scheduled", func(ctx context.Context) (string, error) {
		var pending string
		var err error
		n, pending, err = ocmhub.Scheduled(ctx, hub.Clients, ns, "all")
		return pending, err
	})
	if n != 3 {
		t.Errorf("Scheduled: %d clusters, want 3", n)
	}
}
