//go:build integration

package templatedeploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/addonops/addonops/internal/testing/ocmhub"
)

const hookJob = `      - apiVersion: batch/v1
        kind: Job
        metadata:
          name: hook-cleanup
          namespace: default
          annotations: {addon.open-cluster-management.io/addon-pre-delete: ""}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: cleanup, image: example.com/cleanup:1}]
`

// TestPreDeleteHook: a template with a pre-delete Job puts a finalizer on the MCA; deleting the MCA
// applies the hook work (not before), OCM's work agent creates the Job, and only once its status
// feedback says it completed are the add-on's works deleted and the MCA let go.
func TestPreDeleteHook(t *testing.T) {
	const addon, cluster = "hook", "hook1"
	e := newEnv(t, addon, envOptions{})
	ocm := ocmhub.ForTest(t, e.hub, ocmhub.Options{StatusSyncInterval: time.Second})
	if _, err := ocm.AddClusters(e.ctx, ocmhub.Cluster{Name: cluster}); err != nil {
		t.Fatal(err)
	}
	e.cleanup(cluster)
	e.apply(agentTemplate("hook-v1", addon, "1", hookJob))
	e.mcaInNamespace(cluster)
	e.cma("hook-v1", "")

	e.waitFor(time.Minute, "the finalizer and the applied deploy work", func() string {
		m := e.getMCA(cluster)
		if m == nil || !slices.Contains(m.Finalizers, addonv1alpha1.AddonPreDeleteHookFinalizer) {
			return fmt.Sprintf("finalizers %v", m.Finalizers)
		}
		if w := e.work(cluster, "addon-hook-deploy-0"); w == nil || !workReady(w) {
			return "deploy work not ready"
		}
		return ""
	})
	if w := e.work(cluster, "addon-hook-pre-delete"); w != nil {
		t.Fatalf("hook work applied before deletion")
	}
	if _, err := e.c.Kube.BatchV1().Jobs(cluster).Get(e.ctx, "hook-cleanup", metav1.GetOptions{}); err == nil {
		t.Fatalf("hook Job exists before deletion")
	}

	if err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(cluster).Delete(e.ctx, addon, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var job *batchv1.Job
	e.waitFor(time.Minute, "the hook Job", func() string {
		var err error
		if job, err = e.c.Kube.BatchV1().Jobs(cluster).Get(e.ctx, "hook-cleanup", metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	e.waitCondition(time.Minute, cluster, addonv1alpha1.ManagedClusterAddOnHookManifestCompleted, "False/HookManifestIsNotCompleted")
	// While the hook runs the MCA and its deploy work stay.
	e.holds(3*time.Second, "the MCA and its deploy work stay while the hook runs", func() string {
		if m := e.getMCA(cluster); m == nil || m.DeletionTimestamp == nil {
			return fmt.Sprintf("MCA %v, want it held by the finalizer", m)
		}
		if e.work(cluster, "addon-hook-deploy-0") == nil {
			return "deploy work deleted before the hook completed"
		}
		return ""
	})

	// No job controller runs here: the test completes the Job as it would.
	now := metav1.Now()
	job.Status = batchv1.JobStatus{
		StartTime: &now, CompletionTime: &now, Succeeded: 1,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		},
	}
	if _, err := e.c.Kube.BatchV1().Jobs(cluster).UpdateStatus(e.ctx, job, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("completing the Job: %v", err)
	}
	took := e.waitFor(time.Minute, "the MCA and its works to go", func() string {
		if m := e.getMCA(cluster); m != nil {
			return fmt.Sprintf("MCA still there, HookManifestCompleted %s", condition(m, addonv1alpha1.ManagedClusterAddOnHookManifestCompleted))
		}
		if ws := e.works(cluster); len(ws) > 0 {
			var names []string
			for _, w := range ws {
				names = append(names, w.Name)
			}
			return fmt.Sprintf("works left: %v", names)
		}
		return ""
	})
	t.Logf("MCA and works gone %v after the Job completed", took.Round(time.Millisecond))
}

const daemonSet = `      - apiVersion: apps/v1
        kind: DaemonSet
        metadata: {name: node-agent, namespace: default}
        spec:
          selector: {matchLabels: {app: node}}
          template:
            metadata: {labels: {app: node}}
            spec:
              containers: [{name: node, image: example.com/node:1}]
`

// TestHealthFromFeedback: Available follows the status feedback OCM's work agent reports for the
// add-on's Deployment and DaemonSet, and the cluster's own availability. Then a new version: the
// work agent reports the new work generation with the old pods' readiness; Available says the
// Deployment has not rolled out the new spec, and the cluster is done only a health soak after the
// new pods are ready.
func TestHealthFromFeedback(t *testing.T) {
	const addon, cluster = "health", "health1"
	const soak = 3 * time.Second
	e := newEnv(t, addon, envOptions{healthGate: true, healthSoak: soak.String()})
	ocm := ocmhub.ForTest(t, e.hub, ocmhub.Options{StatusSyncInterval: time.Second})
	if _, err := ocm.AddClusters(e.ctx, ocmhub.Cluster{Name: cluster}); err != nil {
		t.Fatal(err)
	}
	e.cleanup(cluster)
	e.apply(agentTemplate("health-v1", addon, "1", daemonSet))
	e.mcaInNamespace(cluster)
	e.cma("health-v1", "")

	// Applied, but no kubelet and no workload controllers: the Deployment reports no status yet,
	// only its generation, and no controller observed the DaemonSet (its zero counts say nothing).
	e.waitCondition(time.Minute, cluster, "ManifestApplied", "True/AddonManifestApplied")
	e.waitFor(time.Minute, "Available Unknown for the Deployment and the DaemonSet", func() string {
		got := condition(e.getMCA(cluster), "Available")
		if got == "Unknown/NoProbeResult: Probe results are not returned for DaemonSet health1/node-agent, Deployment health1/health-agent" {
			return ""
		}
		return got
	})
	if m := e.getMCA(cluster); m.Status.HealthCheck.Mode != addonv1alpha1.HealthCheckModeCustomized {
		t.Errorf("healthCheck.mode %q, want Customized", m.Status.HealthCheck.Mode)
	}

	apps := e.c.Kube.AppsV1()
	setDeployment := func(replicas, ready int32) {
		t.Helper()
		d, err := apps.Deployments(cluster).Get(e.ctx, "health-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: ready, AvailableReplicas: ready}
		if _, err := apps.Deployments(cluster).UpdateStatus(e.ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setDaemonSet := func(desired, ready int32) {
		t.Helper()
		d, err := apps.DaemonSets(cluster).Get(e.ctx, "node-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DaemonSetStatus{ObservedGeneration: d.Generation, DesiredNumberScheduled: desired, CurrentNumberScheduled: desired, NumberReady: ready, NumberAvailable: ready, UpdatedNumberScheduled: desired}
		if _, err := apps.DaemonSets(cluster).UpdateStatus(e.ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	setDeployment(1, 0)
	setDaemonSet(2, 2)
	e.waitCondition(time.Minute, cluster, "Available", "False/ProbeUnavailable: Probe addon unavailable with err Deployment health1/health-agent has no ready replica (0 of 1 ready)")
	setDeployment(1, 1)
	took := e.waitFor(time.Minute, "Available=True", func() string {
		got := condition(e.getMCA(cluster), "Available")
		if got == "True/ProbeAvailable: health add-on is available." {
			return ""
		}
		return got
	})
	t.Logf("Available=True %v after the Deployment became ready (status sync 1s)", took.Round(time.Millisecond))
	setDaemonSet(2, 1)
	e.waitCondition(time.Minute, cluster, "Available", "False/ProbeUnavailable: Probe addon unavailable with err DaemonSet health1/node-agent has 1 of 2 scheduled pods ready")
	setDaemonSet(2, 2)
	e.waitCondition(time.Minute, cluster, "Available", "True/ProbeAvailable")

	// The cluster stops reporting: the add-on is Unknown with the cluster's reason.
	setClusterAvailable := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		mc, err := e.c.Cluster.ClusterV1().ManagedClusters().Get(e.ctx, cluster, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable, Status: status, Reason: reason, Message: "set by the test"})
		if _, err := e.c.Cluster.ClusterV1().ManagedClusters().UpdateStatus(e.ctx, mc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setClusterAvailable(metav1.ConditionUnknown, "ManagedClusterLeaseUpdateStopped")
	e.waitCondition(time.Minute, cluster, "Available", "Unknown/ManagedClusterLeaseUpdateStopped: set by the test")
	setClusterAvailable(metav1.ConditionTrue, "ManagedClusterAvailable")
	e.waitCondition(time.Minute, cluster, "Available", "True/ProbeAvailable")
	e.waitCondition(time.Minute, cluster, "Progressing", "False/InstallSucceed")

	// Version 2 changes the Deployment's pod template. OCM's work agent applies it and reports the
	// new work generation Applied and Available at once, with the feedback it reads: the
	// Deployment's generation 2, but status still observed at generation 1 with the old pod ready
	// (no Deployment controller runs here). That is not the new version running.
	e.apply(agentTemplate("health-v2", addon, "2", daemonSet))
	e.setDefaultTemplate("health-v2")
	e.waitCondition(time.Minute, cluster, "Available", "False/ProbeUnavailable: Probe addon unavailable with err Deployment health1/health-agent has not rolled out its current spec yet (observed generation 1 of 2)")
	e.waitCondition(10*time.Second, cluster, "Progressing", "True/Upgrading: upgrading... the add-on's ManifestWorks are applied with the desired configs; waiting for it to be healthy: Available=False")
	e.holds(soak+time.Second, "still upgrading while the Deployment has not rolled out", func() string {
		if got := condition(e.getMCA(cluster), "Progressing"); !strings.HasPrefix(got, "True/Upgrading") {
			return fmt.Sprintf("Progressing %s while the Deployment has not rolled out version 2", got)
		}
		return ""
	})
	// The Deployment rolls out: the new pod is ready. Health is True, and the cluster is done only
	// once it stayed so for the soak.
	setDeployment(1, 1)
	e.waitCondition(time.Minute, cluster, "Available", "True/ProbeAvailable")
	healthy := time.Now()
	e.waitCondition(time.Minute, cluster, "Progressing", "False/UpgradeSucceed")
	// The controller may see the health a moment before this test does.
	if took := time.Since(healthy); took < soak-500*time.Millisecond {
		t.Fatalf("UpgradeSucceed %v after the add-on became healthy; the health soak is %v", took, soak)
	}
	if got := condition(e.getMCA(cluster), "HealthSoak"); !strings.HasPrefix(got, "True/Soaked: the add-on stayed healthy for 3s") {
		t.Fatalf("HealthSoak %s", got)
	}
}
