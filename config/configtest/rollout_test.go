//go:build integration

package configtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/controller"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
)

// syncBuffer is safe to read while goroutines write to it.
type syncBuffer = harness.SyncBuffer

// applyNotificationConfig creates or replaces the notification ConfigMap (one trigger and
// template, a webhook service whose URL is in the Secret) and Secret in configtest.Namespace.
func applyNotificationConfig(ctx context.Context, t *testing.T, kube kubernetes.Interface, url string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: configtest.Namespace, Name: notify.ConfigMapName}, Data: map[string]string{
		"service.webhook":                    "url: $url\n",
		"trigger." + notify.OnRolloutStarted: "- when: \"true\"\n  send: [started]\n",
		"template.started":                   "message: started {{.addon}} {{.versionID}}\n",
	}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: configtest.Namespace, Name: notify.SecretName}, StringData: map[string]string{"url": url}}
	_ = kube.CoreV1().ConfigMaps(configtest.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
	_ = kube.CoreV1().Secrets(configtest.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{})
	if _, err := kube.CoreV1().ConfigMaps(configtest.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(configtest.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRolloutControllerWithBaseRBAC runs the rollout controller alone (no --deploy-templates) with
// nothing but a token of config/default's ServiceAccount: it installs an add-on's MCAs from a
// placement, writes their desired configs and the CMA's progress, removes the MCA of a cluster
// the placement drops, sends a notification configured by the ConfigMap and Secret it may read, and
// is never refused.
func TestRolloutControllerWithBaseRBAC(t *testing.T) {
	hub, _ := hubWith(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := hub.Clients
	const ns, addon = "rbac-rollout", "rbac-rollout"
	clusters := []string{"rbac-c1", "rbac-c2"}
	placementAll(ctx, t, c, ns, clusters)
	if _, err := c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(ns).Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"},
		Spec:       addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "v", Value: "1"}}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Notifications: the ConfigMap and the Secret (which holds the receiver's URL) in the
	// controller's namespace, read with config/default's Role for them alone.
	var notified atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { notified.Add(1) }))
	defer receiver.Close()
	applyNotificationConfig(ctx, t, c.Kube, receiver.URL)
	adcs := addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}
	if _, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addon, Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue,
			"notifications.argoproj.io/subscribe." + notify.OnRolloutStarted + ".webhook": ""}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcs}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
				PlacementRef:    addonv1alpha1.PlacementRef{Namespace: ns, Name: "all"},
				Configs:         []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcs, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: ns, Name: "cfg"}}},
				RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All},
			}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg, err := configtest.ServiceAccountConfig(ctx, hub, configtest.Namespace, configtest.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(&log)))
	runCtx := klog.NewContext(ctx, logger)
	// client-go's event broadcaster reports a refused event through the global logger.
	klog.SetLogger(logger)
	defer klog.ClearLogger()
	ctrl, err := rolloutsim.StartController(runCtx, cfg, controller.Options{Addons: controller.AddonsSelf, HistoryNamespace: configtest.Namespace, Coalesce: 50 * time.Millisecond,
		Notifications: &notify.Options{Namespace: configtest.Namespace}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		// Only a controller that does not stop fails the test: the test's context is cancelled, so
		// an error it returns is about the stop.
		if err := ctrl.Stop(); errors.Is(err, rolloutsim.ErrNotStopped) {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	}()

	waitFor := func(what string, check func() string) {
		t.Helper()
		harness.Eventually(t, time.Minute, what, func() string {
			msg := check()
			if msg != "" && bytes.Contains([]byte(log.String()), []byte("forbidden")) {
				t.Fatalf("%s: the controller was refused by the RBAC of %s", what, base)
			}
			return msg
		})
	}
	waitFor("MCAs installed with their desired config", func() string {
		for _, cl := range clusters {
			m, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(cl).Get(ctx, addon, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if len(m.Status.ConfigReferences) == 0 || m.Status.ConfigReferences[0].DesiredConfig == nil || m.Status.ConfigReferences[0].DesiredConfig.SpecHash == "" {
				return fmt.Sprintf("MCA %s/%s has no desired config yet: %+v", cl, addon, m.Status.ConfigReferences)
			}
		}
		cma, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if len(cma.Status.InstallProgressions) == 0 {
			return "the CMA has no install progression yet"
		}
		return ""
	})
	if err := localhub.SetPlacementDecisions(ctx, c, ns, "all", []localhub.DecisionGroup{{Clusters: clusters[:1]}}); err != nil {
		t.Fatal(err)
	}
	waitFor("the MCA of the dropped cluster removed", func() string {
		if _, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(clusters[1]).Get(ctx, addon, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("MCA %s/%s: %v", clusters[1], addon, err)
		}
		return ""
	})
	waitFor("the CMA's event ManagedClusterAddOnsCreated", func() string {
		evs, err := c.Kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": addon, "reason": "ManagedClusterAddOnsCreated"}.String()})
		if err != nil {
			return err.Error()
		}
		if len(evs.Items) == 0 {
			return "no event yet"
		}
		return ""
	})
	waitFor("the on-rollout-started notification delivered to the URL in the Secret", func() string {
		if notified.Load() == 0 {
			return "nothing delivered yet"
		}
		return ""
	})
	// Everything done settles; a refusal in the last writes would show now.
	harness.Consistently(t, time.Second, "no refusal by the RBAC", func() string {
		if bytes.Contains([]byte(log.String()), []byte("forbidden")) {
			return fmt.Sprintf("the controller was refused by the RBAC of %s", base)
		}
		return ""
	})
}

// TestConfigGCWithBaseRBAC: the garbage collection of superseded config versions (on by default)
// deletes an unreferenced old version of an AddOnDeploymentConfig with config/default's RBAC.
func TestConfigGCWithBaseRBAC(t *testing.T) {
	hub, _ := hubWith(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := hub.Clients
	const ns, addon = "rbac-gc", "rbac-gc"
	if err := localhub.EnsureNamespace(ctx, c.Kube, ns); err != nil {
		t.Fatal(err)
	}
	adcs := c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(ns)
	for i, name := range []string{"gc-v1", "gc-v2"} {
		if i > 0 {
			harness.Pass(1100 * time.Millisecond) // creation timestamps have second resolution: v2 is newer
		}
		if _, err := adcs.Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
				configref.BaseNameAnnotation: "gc", configref.ContentHashAnnotation: name}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A manually installed add-on (no MCA: nothing rolls out) uses v2; v1 is superseded.
	if _, err := c.Addon.AddonV1alpha1().ClusterManagementAddOns().Create(ctx, &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addon, Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"},
				DefaultConfig:       &addonv1alpha1.ConfigReferent{Namespace: ns, Name: "gc-v2"},
			}},
			InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyManual},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Addon.AddonV1alpha1().ClusterManagementAddOns().Delete(context.Background(), addon, metav1.DeleteOptions{})
	})

	cfg, err := configtest.ServiceAccountConfig(ctx, hub, configtest.Namespace, configtest.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(&log)))
	klog.SetLogger(logger)
	defer klog.ClearLogger()
	ctrl, err := rolloutsim.StartController(klog.NewContext(ctx, logger), cfg, controller.Options{Addons: controller.AddonsSelf, HistoryNamespace: configtest.Namespace, Coalesce: 50 * time.Millisecond,
		ConfigGC: controller.ConfigGCOptions{Keep: 0, MinAge: -1, Interval: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		// Only a controller that does not stop fails the test: the test's context is cancelled, so
		// an error it returns is about the stop.
		if err := ctrl.Stop(); errors.Is(err, rolloutsim.ErrNotStopped) {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	}()
	harness.Eventually(t, time.Minute, "the superseded version gc-v1 deleted", func() string {
		_, err := adcs.Get(ctx, "gc-v1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if strings.Contains(log.String(), "forbidden") {
			t.Fatalf("the garbage collection was refused by the RBAC of %s", base)
		}
		return fmt.Sprintf("get: %v", err)
	})
	if _, err := adcs.Get(ctx, "gc-v2", metav1.GetOptions{}); err != nil {
		t.Fatalf("the version in use: %v", err)
	}
	harness.Consistently(t, 500*time.Millisecond, "no refusal by the RBAC", func() string {
		if strings.Contains(log.String(), "forbidden") {
			return fmt.Sprintf("the controller was refused by the RBAC of %s", base)
		}
		return ""
	})
}

// placementAll registers the clusters and a Placement ns/all that selects them all in one
// decision group, as OCM's placement controller would decide.
func placementAll(ctx context.Context, t *testing.T, c *localhub.Clients, ns string, clusters []string) {
	t.Helper()
	for _, cl := range clusters {
		if _, err := localhub.EnsureManagedCluster(ctx, c, cl, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := localhub.EnsurePlacement(ctx, c, &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}}); err != nil {
		t.Fatal(err)
	}
	if err := localhub.SetPlacementDecisions(ctx, c, ns, "all", []localhub.DecisionGroup{{Clusters: clusters}}); err != nil {
		t.Fatal(err)
	}
}
