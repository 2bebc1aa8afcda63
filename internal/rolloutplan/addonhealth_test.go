package rolloutplan

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

func manifest(t *testing.T, kind, name string, replicas *int) workv1.Manifest {
	t.Helper()
	obj := map[string]any{"apiVersion": "apps/v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "agent"}}
	if replicas != nil {
		obj["spec"] = map[string]any{"replicas": *replicas}
	}
	if kind == "ConfigMap" {
		obj["apiVersion"] = "v1"
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return workv1.Manifest{RawExtension: runtime.RawExtension{Raw: b}}
}

func ints(kv ...any) []workv1.FeedbackValue {
	var out []workv1.FeedbackValue
	for i := 0; i < len(kv); i += 2 {
		n := int64(kv[i+1].(int))
		out = append(out, workv1.FeedbackValue{Name: kv[i].(string), Value: workv1.FieldValue{Type: workv1.Integer, Integer: &n}})
	}
	return out
}

func status(resource, name string, values []workv1.FeedbackValue) workv1.ManifestCondition {
	return workv1.ManifestCondition{
		ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Resource: resource, Namespace: "agent", Name: name},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
	}
}

func healthWork(avail metav1.ConditionStatus, manifests []workv1.Manifest, st ...workv1.ManifestCondition) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "addon-a-deploy-0"}}
	w.Spec.Workload.Manifests = manifests
	if avail != "" {
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkAvailable, Status: avail, Message: "work says " + string(avail)}}
	}
	w.Status.ResourceStatus.Manifests = st
	return w
}

func TestAvailable(t *testing.T) {
	zero, one := 0, 1
	mcaWith := func(applied bool) *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "c1"}}
		if applied {
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnManifestApplied, Status: "True", Reason: "x"})
		}
		return m
	}
	cluster := func(s metav1.ConditionStatus) *clusterv1.ManagedCluster {
		c := &clusterv1.ManagedCluster{}
		c.Status.Conditions = []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: s, Reason: "ManagedClusterLeaseUpdateStopped", Message: "lease not updated"}}
		return c
	}
	t.Helper()
	dep := manifest(t, "Deployment", "agent", nil)
	ds := manifest(t, "DaemonSet", "node", nil)
	scaledDown := manifest(t, "Deployment", "idle", &zero)
	explicitOne := manifest(t, "Deployment", "agent", &one)
	cm := manifest(t, "ConfigMap", "cm", nil)
	ready := status("deployments", "agent", ints("Replicas", 1, "ReadyReplicas", 1, "AvailableReplicas", 1))
	notReady := status("deployments", "agent", ints("Replicas", 1, "AvailableReplicas", 0))
	dsReady := status("daemonsets", "node", ints("NumberReady", 3, "DesiredNumberScheduled", 3, "NumberAvailable", 3))
	dsPartial := status("daemonsets", "node", ints("NumberReady", 2, "DesiredNumberScheduled", 3))

	cases := []struct {
		name    string
		mca     *addonv1alpha1.ManagedClusterAddOn
		cluster *clusterv1.ManagedCluster
		works   []*workv1.ManifestWork
		status  metav1.ConditionStatus // "" = condition left alone
		reason  string
		message string
	}{
		{"works not written yet: left alone", mcaWith(false), nil, nil, "", "", ""},
		{"no work", mcaWith(true), nil, nil, "Unknown", ReasonWorkNotFound, MessageWorkNotFound},
		{"cluster unknown: the cluster's reason", mcaWith(true), cluster("Unknown"), []*workv1.ManifestWork{healthWork("True", nil)}, "Unknown", "ManagedClusterLeaseUpdateStopped", "lease not updated"},
		{"cluster available: probes decide", mcaWith(true), cluster("True"), []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, ready)}, "True", ReasonProbeAvailable, "a add-on is available."},
		{"work not applied yet", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("", []workv1.Manifest{dep})}, "Unknown", ReasonWorkNotApplied, MessageWorkNotApplied},
		{"work not available", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("False", []workv1.Manifest{dep})}, "False", ReasonWorkNotApplied, "work says False"},
		{"new version not reported yet: the old feedback says nothing", mcaWith(true), nil, []*workv1.ManifestWork{func() *workv1.ManifestWork {
			w := healthWork("True", []workv1.Manifest{dep}, ready)
			w.Generation = 2
			w.Status.Conditions[0].ObservedGeneration = 1
			return w
		}()}, "Unknown", ReasonWorkNotApplied, MessageWorkNotApplied},
		{"no feedback yet", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep, ds})}, "Unknown", ReasonNoProbeResult,
			"Probe results are not returned for Deployment agent/agent, DaemonSet agent/node"},
		{"one workload without feedback is not skipped", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep, ds}, ready)}, "Unknown", ReasonNoProbeResult,
			"Probe results are not returned for DaemonSet agent/node"},
		{"deployment without a ready replica", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, notReady)}, "False", ReasonProbeUnavailable,
			"Probe addon unavailable with err Deployment agent/agent has no ready replica (0 of 1 ready)"},
		{"daemonset partly ready", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{ds}, dsPartial)}, "False", ReasonProbeUnavailable,
			"Probe addon unavailable with err DaemonSet agent/node has 2 of 3 scheduled pods ready"},
		{"all ready", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{explicitOne, ds, cm}, ready, dsReady)}, "True", ReasonProbeAvailable, "a add-on is available."},
		{"a deployment scaled to zero is not probed", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{scaledDown, cm})}, "True", ReasonProbeAvailable, "a add-on is available."},
		{"workloads spread over works", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, ready), healthWork("True", []workv1.Manifest{ds}, dsPartial)}, "False", ReasonProbeUnavailable,
			"DaemonSet agent/node has 2 of 3"},
		{"no workloads at all", mcaWith(true), nil, []*workv1.ManifestWork{healthWork("True", []workv1.Manifest{cm})}, "True", ReasonProbeAvailable, "a add-on is available."},

		// Rollout feedback (difference 5): the ready replicas count only once the workload rolled
		// out its current spec.
		{"new spec not observed by the Deployment controller: the ready pods are the old ones", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, status("deployments", "agent", ints("Generation", 2, "ObservedGeneration", 1, "Replicas", 1, "UpdatedReplicas", 1, "ReadyReplicas", 1)))},
			"False", ReasonProbeUnavailable, "Deployment agent/agent has not rolled out its current spec yet (observed generation 1 of 2)"},
		{"Deployment rolling out: old pods left", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, status("deployments", "agent", ints("Generation", 2, "ObservedGeneration", 2, "Replicas", 2, "UpdatedReplicas", 1, "ReadyReplicas", 1)))},
			"False", ReasonProbeUnavailable, "Deployment agent/agent is rolling out its current spec (1 of 2 replicas updated)"},
		{"Deployment rolling out: no updated pod (the agent omits zero)", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, status("deployments", "agent", ints("Generation", 2, "ObservedGeneration", 2, "Replicas", 1, "ReadyReplicas", 1)))},
			"False", ReasonProbeUnavailable, "(0 of 1 replicas updated)"},
		{"Deployment rolled out and ready", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, status("deployments", "agent", ints("Generation", 2, "ObservedGeneration", 2, "Replicas", 1, "UpdatedReplicas", 1, "ReadyReplicas", 1)))},
			"True", ReasonProbeAvailable, "a add-on is available."},
		{"Deployment rolled out, new pod not ready", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, status("deployments", "agent", ints("Generation", 2, "ObservedGeneration", 2, "Replicas", 1, "UpdatedReplicas", 1)))},
			"False", ReasonProbeUnavailable, "has no ready replica (0 of 1 ready)"},
		{"Deployment never observed (a fresh install, no controller yet): no result", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{dep}, status("deployments", "agent", ints("Generation", 1)))},
			"Unknown", ReasonNoProbeResult, "Probe results are not returned for Deployment agent/agent"},
		{"DaemonSet rolling out", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{ds}, status("daemonsets", "node", ints("Generation", 3, "ObservedGeneration", 3, "DesiredNumberScheduled", 3, "UpdatedNumberScheduled", 2, "NumberReady", 3)))},
			"False", ReasonProbeUnavailable, "DaemonSet agent/node is rolling out its current spec (2 of 3 scheduled pods updated)"},
		{"DaemonSet new spec not observed", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{ds}, status("daemonsets", "node", ints("Generation", 3, "ObservedGeneration", 2, "DesiredNumberScheduled", 3, "UpdatedNumberScheduled", 3, "NumberReady", 3)))},
			"False", ReasonProbeUnavailable, "DaemonSet agent/node has not rolled out its current spec yet (observed generation 2 of 3)"},
		{"DaemonSet rolled out and ready", mcaWith(true), nil,
			[]*workv1.ManifestWork{healthWork("True", []workv1.Manifest{ds}, status("daemonsets", "node", ints("Generation", 3, "ObservedGeneration", 3, "DesiredNumberScheduled", 3, "UpdatedNumberScheduled", 3, "NumberReady", 3)))},
			"True", ReasonProbeAvailable, "a add-on is available."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Available(tc.mca, tc.cluster, tc.works)
			if tc.status == "" {
				if got != nil {
					t.Errorf("got %+v, want nil", got)
				}
				return
			}
			if got == nil || got.Type != "Available" || got.Status != tc.status || got.Reason != tc.reason || !strings.Contains(got.Message, tc.message) {
				t.Errorf("got %+v, want %s/%s/%q", got, tc.status, tc.reason, tc.message)
			}
		})
	}
}

func TestDeployWorks(t *testing.T) {
	ws := []*workv1.ManifestWork{
		{ObjectMeta: metav1.ObjectMeta{Name: "addon-a-deploy-0"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "addon-a-deploy-12"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "addon-a-pre-delete"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "addon-a-deploy-hosting-x-0"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "addon-a-deploy-1", Labels: map[string]string{addonv1alpha1.AddonNamespaceLabelKey: "other"}}},
	}
	got := DeployWorks("a", ws)
	if len(got) != 2 || got[0].Name != "addon-a-deploy-0" || got[1].Name != "addon-a-deploy-12" {
		t.Errorf("deploy works %v", got)
	}
}
