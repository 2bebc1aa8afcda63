//go:build integration

package cachebench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonwork"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// The hub the benchmark fills: one self-managed add-on (addonName) installed on every cluster by
// one Placement, with its ManagedClusterAddOn, its deploy ManifestWork (an agent's usual manifests)
// and their status as OCM's agents report it; every ManagedCluster with the spec and status a
// registration agent gives it; and an application ManifestWork per cluster that is no add-on's
// (both caches leave it out by label).
const (
	addonName        = "bench"
	configNamespace  = "bench"
	historyNamespace = "addonops"
	placementName    = "all"
	agentNamespace   = "open-cluster-management-agent-addon"
)

var (
	adcGR = addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}
	// caBundle stands in for the hub CA a ManagedCluster's spec carries (a PEM certificate).
	caBundle = []byte("-----BEGIN CERTIFICATE-----\n" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("hub certificate authority ", 45))) + "\n-----END CERTIFICATE-----\n")
	// specHash is what the ManagedClusterAddOns were told to run (an ADC's spec hash).
	specHash = strings.Repeat("9f86d081884c7d65", 4)
)

func clusterNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cluster-%05d", i)
	}
	return names
}

// populate creates the hub's objects for the clusters: per cluster a namespace, a ManagedCluster,
// an MCA and two ManifestWorks, each with its status; once the add-on's CMA, ADCs, Placement and
// decisions, and the version history ConfigMaps.
func populate(ctx context.Context, c *localhub.Clients, names []string) error {
	for _, ns := range []string{configNamespace, historyNamespace} {
		if err := localhub.EnsureNamespace(ctx, c.Kube, ns); err != nil {
			return err
		}
	}
	for _, name := range []string{"cfg-a", "cfg-b"} {
		_, err := c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(configNamespace).Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: configNamespace, Name: name},
			Spec: addonv1alpha1.AddOnDeploymentConfigSpec{
				CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "version", Value: name}},
				NodePlacement:       &addonv1alpha1.NodePlacement{NodeSelector: map[string]string{"kubernetes.io/os": "linux"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating AddOnDeploymentConfig %s: %w", name, err)
		}
	}
	cma, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addonName, Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			AddOnMeta:        addonv1alpha1.AddOnMeta{DisplayName: "Benchmark add-on", Description: "An add-on on every cluster of the benchmark's hub"},
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcGR}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef: addonv1alpha1.PlacementRef{Namespace: configNamespace, Name: placementName},
				Configs:      []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcGR, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: configNamespace, Name: "cfg-a"}}},
			}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the ClusterManagementAddOn: %w", err)
	}
	for i := range 3 {
		_, err := c.Kube.CoreV1().ConfigMaps(historyNamespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("addonops-history-%s-%d", addonName, i), Namespace: historyNamespace,
				Labels: map[string]string{history.AddonLabel: addonName}},
			Data: map[string]string{"version": fmt.Sprintf("v0.%d.0", i), "configs": `[{"group":"addon.open-cluster-management.io","resource":"addondeploymentconfigs","namespace":"bench","name":"cfg-a"}]`},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating a history ConfigMap: %w", err)
		}
	}
	if err := parallel(names, func(name string) error { return createCluster(ctx, c, name, cma.UID) }); err != nil {
		return err
	}
	if _, err := localhub.EnsurePlacement(ctx, c, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: configNamespace, Name: placementName}}); err != nil {
		return err
	}
	return localhub.SetPlacementDecisions(ctx, c, configNamespace, placementName, []localhub.DecisionGroup{{Clusters: names}})
}

// parallel runs f for every name, 64 at a time, and joins the errors (the first ten).
func parallel(names []string, f func(string) error) error {
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(name); err != nil {
				mu.Lock()
				if len(errs) < 10 {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func createCluster(ctx context.Context, c *localhub.Clients, name string, cmaUID types.UID) error {
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	mc, err := c.Cluster.ClusterV1().ManagedClusters().Create(ctx, managedCluster(name), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ManagedCluster %s: %w", name, err)
	}
	mc.Status = clusterStatus()
	if _, err := c.Cluster.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("ManagedCluster %s status: %w", name, err)
	}
	mca, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(name).Create(ctx, &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addonName, Namespace: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: addonv1alpha1.SchemeGroupVersion.String(), Kind: "ClusterManagementAddOn", Name: addonName, UID: cmaUID, Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}},
		Spec: addonv1alpha1.ManagedClusterAddOnSpec{InstallNamespace: agentNamespace},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("ManagedClusterAddOn %s/%s: %w", name, addonName, err)
	}
	mca.Status = mcaStatus("")
	if _, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(name).UpdateStatus(ctx, mca, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("ManagedClusterAddOn %s/%s status: %w", name, addonName, err)
	}
	for _, w := range []*workv1.ManifestWork{deployWork(name, mca), appWork(name)} {
		created, err := c.Work.WorkV1().ManifestWorks(name).Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("ManifestWork %s/%s: %w", name, w.Name, err)
		}
		created.Status = workStatus(created)
		if _, err := c.Work.WorkV1().ManifestWorks(name).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("ManifestWork %s/%s status: %w", name, w.Name, err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// managedCluster is a cluster as registration leaves it: labels, the hub's client config with its
// CA bundle, a lease duration.
func managedCluster(name string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"cluster.open-cluster-management.io/clusterset": "default", "name": name, "vendor": "OpenShift", "cloud": "Amazon",
			"region": "eu-west-1", "feature.open-cluster-management.io/addon-" + addonName: "available"}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true, LeaseDurationSeconds: 60,
			ManagedClusterClientConfigs: []clusterv1.ClientConfig{{URL: "https://api." + name + ".example.com:6443", CABundle: caBundle}}},
	}
}

// clusterStatus is what a registration agent reports: four conditions, capacity, version, claims.
func clusterStatus() clusterv1.ManagedClusterStatus {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cond := func(t, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now}
	}
	res := clusterv1.ResourceList{
		clusterv1.ResourceCPU: resource.MustParse("48"), clusterv1.ResourceMemory: resource.MustParse("196608Mi"),
		"pods": resource.MustParse("750"), "socket_worker": resource.MustParse("6"), "core_worker": resource.MustParse("48"),
	}
	st := clusterv1.ManagedClusterStatus{
		Conditions: []metav1.Condition{
			cond(clusterv1.ManagedClusterConditionHubAccepted, "HubClusterAdminAccepted", "Accepted by hub cluster admin"),
			cond(clusterv1.ManagedClusterConditionJoined, "ManagedClusterJoined", "Managed cluster joined"),
			cond(clusterv1.ManagedClusterConditionAvailable, "ManagedClusterAvailable", "Managed cluster is available"),
			cond("ManagedClusterConditionClockSynced", "ManagedClusterClockSynced", "The clock of the managed cluster is synced with the hub."),
		},
		Capacity: res, Allocatable: res,
		Version: clusterv1.ManagedClusterVersion{Kubernetes: "v1.31.6+ocp"},
	}
	for k, v := range map[string]string{
		"id.k8s.io": "8f0f6ce5-7b5d-4b8d-9d7e-5c9c1d2b3a4f", "kubeversion.open-cluster-management.io": "v1.31.6",
		"platform.open-cluster-management.io": "AWS", "product.open-cluster-management.io": "OpenShift",
		"region.open-cluster-management.io": "eu-west-1", "version.openshift.io": "4.18.3",
		"consoleurl.cluster.open-cluster-management.io": "https://console-openshift-console.apps.example.com",
		"controlplanetopology.openshift.io":             "HighlyAvailable", "infrastructure.openshift.io": `{"infraName":"bench-x7k2p"}`,
		"oauthredirecturis.openshift.io": "https://oauth-openshift.apps.example.com/oauth/token/implicit",
	} {
		st.ClusterClaims = append(st.ClusterClaims, clusterv1.ManagedClusterClaim{Name: k, Value: v})
	}
	return st
}

// mcaStatus is an MCA's status as OCM's hub and agents and the controller leave it once installed;
// mark, when set, is the message of its Progressing condition (the benchmark's update).
func mcaStatus(mark string) addonv1alpha1.ManagedClusterAddOnStatus {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	progressing := "install completed with no errors."
	if mark != "" {
		progressing = mark
	}
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
	}
	cfg := addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: configNamespace, Name: "cfg-a"}, SpecHash: specHash}
	return addonv1alpha1.ManagedClusterAddOnStatus{
		Conditions: []metav1.Condition{
			cond(addonv1alpha1.ManagedClusterAddOnConditionProgressing, metav1.ConditionFalse, "InstallSucceed", progressing),
			cond(addonv1alpha1.ManagedClusterAddOnConditionConfigured, metav1.ConditionTrue, "ConfigurationsConfigured", "Configurations configured"),
			cond(addonv1alpha1.ManagedClusterAddOnManifestApplied, metav1.ConditionTrue, "AddonManifestApplied", "manifests of addon are applied successfully"),
			cond(addonv1alpha1.ManagedClusterAddOnRegistrationApplied, metav1.ConditionTrue, "SetPermissionApplied", "Registration of the addon agent is configured"),
			cond(addonv1alpha1.ManagedClusterAddOnConditionAvailable, metav1.ConditionTrue, "ManagedClusterAddOnLeaseUpdated", addonName+" add-on is available."),
		},
		ConfigReferences: []addonv1alpha1.ConfigReference{{ConfigGroupResource: adcGR, ConfigReferent: cfg.ConfigReferent,
			DesiredConfig: &cfg, LastAppliedConfig: &cfg, LastObservedGeneration: 1}},
		RelatedObjects:   []addonv1alpha1.ObjectReference{{Group: addonv1alpha1.GroupName, Resource: "clustermanagementaddons", Name: addonName}},
		SupportedConfigs: []addonv1alpha1.ConfigGroupResource{adcGR},
		Registrations: []addonv1alpha1.RegistrationConfig{{SignerName: "kubernetes.io/kube-apiserver-client",
			Subject: addonv1alpha1.Subject{User: "system:open-cluster-management:cluster:addon:" + addonName + ":agent:" + addonName + "-agent",
				Groups: []string{"system:open-cluster-management:cluster:addon:" + addonName, "system:open-cluster-management:addon:" + addonName, "system:authenticated"}}}},
		Namespace:   agentNamespace,
		HealthCheck: addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthCheckModeLease},
	}
}

// statusPatch is the merge patch that gives an MCA mcaStatus(mark)'s conditions.
func statusPatch(mark string) []byte {
	b, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": mcaStatus(mark).Conditions}})
	if err != nil {
		panic(err) // conditions always encode
	}
	return b
}

// deployWork is an add-on's deploy work as an add-on manager renders it: a ServiceAccount, RBAC, a
// ConfigMap and the agent Deployment.
func deployWork(cluster string, mca *addonv1alpha1.ManagedClusterAddOn) *workv1.ManifestWork {
	agent := addonName + "-agent"
	manifests := []map[string]any{
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": agent, "namespace": agentNamespace}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "open-cluster-management:" + agent},
			"rules": []any{
				map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps", "events", "secrets"}, "verbs": []any{"get", "list", "watch", "create", "update", "patch"}},
				map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"get", "create", "update"}},
				map[string]any{"apiGroups": []any{"apps"}, "resources": []any{"deployments", "daemonsets"}, "verbs": []any{"get", "list", "watch"}},
			}},
		{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "open-cluster-management:" + agent},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "open-cluster-management:" + agent},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": agent, "namespace": agentNamespace}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": agent + "-config", "namespace": agentNamespace},
			"data": map[string]any{"cluster": cluster, "hub": "https://hub.example.com:6443", "log-level": "2", "config.yaml": strings.Repeat("key: value\n", 30)}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": agent, "namespace": agentNamespace, "labels": map[string]any{"app": agent}},
			"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": agent}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": agent}},
					"spec": map[string]any{"serviceAccountName": agent, "nodeSelector": map[string]any{"kubernetes.io/os": "linux"},
						"containers": []any{map[string]any{"name": "agent", "image": "quay.io/example/" + agent + "@sha256:" + specHash,
							"args":           []any{"agent", "--cluster-name=" + cluster, "--hub-kubeconfig=/var/run/hub/kubeconfig", "--v=2"},
							"env":            []any{map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}},
							"resources":      map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "64Mi"}, "limits": map[string]any{"memory": "256Mi"}},
							"volumeMounts":   []any{map[string]any{"name": "hub-kubeconfig", "mountPath": "/var/run/hub", "readOnly": true}},
							"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/readyz", "port": int64(8000)}},
							"securityContext": map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true,
								"capabilities": map[string]any{"drop": []any{"ALL"}}}}},
						"volumes": []any{map[string]any{"name": "hub-kubeconfig", "secret": map[string]any{"secretName": agent + "-hub-kubeconfig"}}}}}}},
	}
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: addonwork.DeployWorkName(addonName, 0), Namespace: cluster,
			Labels:      map[string]string{addonv1alpha1.AddonLabelKey: addonName},
			Annotations: map[string]string{"open-cluster-management.io/config-spec-hash": `{"addondeploymentconfigs.addon.open-cluster-management.io/bench/cfg-a":"` + specHash + `"}`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: addonv1alpha1.SchemeGroupVersion.String(), Kind: "ManagedClusterAddOn",
				Name: addonName, UID: mca.UID, Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}},
		Spec: workv1.ManifestWorkSpec{
			DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground},
			ManifestConfigs: []workv1.ManifestConfigOption{{
				ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Name: agent, Namespace: agentNamespace},
				FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
			}},
		},
	}
	for _, m := range manifests {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: rawJSON(m)})
	}
	return w
}

// appWork is a ManifestWork of some application, no add-on's.
func appWork(cluster string) *workv1.ManifestWork {
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Name: "app-guestbook", Namespace: cluster, Labels: map[string]string{"app": "guestbook"}},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: rawJSON(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "guestbook", "namespace": "default"},
			"data": map[string]any{"greeting": strings.Repeat("hello ", 100)}})}}}},
	}
}

func rawJSON(v any) runtime.RawExtension {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the manifests above always encode
	}
	return runtime.RawExtension{Raw: b}
}

// workStatus is what a work agent reports of w: Applied and Available, and per manifest its
// identity, three conditions and, for the Deployment, its status feedback.
func workStatus(w *workv1.ManifestWork) workv1.ManifestWorkStatus {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cond := func(t, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: now, ObservedGeneration: w.Generation}
	}
	st := workv1.ManifestWorkStatus{Conditions: []metav1.Condition{
		cond(workv1.WorkApplied, "AppliedManifestWorkComplete", "Apply manifest work complete"),
		cond(workv1.WorkAvailable, "ResourcesAvailable", "All resources are available"),
	}}
	for i, m := range w.Spec.Workload.Manifests {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(m.Raw, &head); err != nil {
			panic(err) // the benchmark's own manifests
		}
		group, version, _ := strings.Cut(head.APIVersion, "/")
		if version == "" {
			group, version = "", group
		}
		mc := workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: group, Version: version, Kind: head.Kind,
				Resource: strings.ToLower(head.Kind) + "s", Name: head.Metadata.Name, Namespace: head.Metadata.Namespace},
			Conditions: []metav1.Condition{
				cond("Applied", "AppliedManifestComplete", "Apply manifest complete"),
				cond("Available", "ResourceAvailable", "Resource is available"),
				cond("StatusFeedbackSynced", "StatusFeedbackSynced", ""),
			},
		}
		if head.Kind == "Deployment" {
			for _, name := range []string{"Replicas", "ReadyReplicas", "AvailableReplicas"} {
				mc.StatusFeedbacks.Values = append(mc.StatusFeedbacks.Values, workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr(int64(1))}})
			}
		}
		st.ResourceStatus.Manifests = append(st.ResourceStatus.Manifests, mc)
	}
	return st
}
