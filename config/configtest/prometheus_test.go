//go:build integration

package configtest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/krmfntest"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/simagent"
)

const (
	// prometheusComponent is built on its own, exactly as docs/guides/monitoring.md's command does.
	prometheusComponent = "config/components/prometheus"
	// withPrometheus is config/default plus the component, as a user's overlay combines them.
	withPrometheus = "config/configtest/testdata/prometheus"
	dashboardFile  = "config/components/prometheus/addonops-dashboard.json"
	alertTests     = "config/configtest/testdata/prometheus/alerts_test.yaml"
)

// prometheusTool is bin/<name> (tools/prometheus/prometheus.mk builds it), or $env.
func prometheusTool(t *testing.T, env, name string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = filepath.Join(root, "bin", name)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing (%v): build it with `make prometheus-tools` or point $%s at it", p, err, env)
	}
	return p
}

func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func one(t *testing.T, dir string, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("%s: %d objects of kind %s, want 1", dir, len(found), kind)
	}
	return found[0]
}

// TestPrometheusComponent: `kustomize build config/components/prometheus` on its own gives the
// Service, ServiceMonitor, PrometheusRule and dashboard ConfigMap in addonops-system; config/default
// with the component adds exactly those to config/default, and they fit together: the Service
// selects the Deployment's pods and names its metrics port, the ServiceMonitor selects the Service
// and scrapes that port, the ConfigMap carries the dashboard file for Grafana's sidecar.
func TestPrometheusComponent(t *testing.T) {
	alone := build(t, prometheusComponent)
	var kinds []string
	for _, o := range alone {
		kinds = append(kinds, o.GetKind())
		if o.GetNamespace() != configtest.Namespace {
			t.Errorf("%s: %s %s in namespace %q, want %s", prometheusComponent, o.GetKind(), o.GetName(), o.GetNamespace(), configtest.Namespace)
		}
		if o.GetLabels()["app.kubernetes.io/part-of"] != "addonops" {
			t.Errorf("%s: %s %s lacks label app.kubernetes.io/part-of=addonops", prometheusComponent, o.GetKind(), o.GetName())
		}
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap", "PrometheusRule", "Service", "ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Fatalf("%s builds %v, want %v", prometheusComponent, kinds, want)
	}

	// The overlay is config/default plus the component's objects, unchanged.
	baseObjs, overlay := build(t, base), build(t, withPrometheus)
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	got := map[string]*unstructured.Unstructured{}
	for _, o := range overlay {
		got[key(o)] = o
	}
	for _, o := range append(slices.Clone(baseObjs), alone...) {
		g, ok := got[key(o)]
		if !ok {
			t.Errorf("%s lacks %s", withPrometheus, key(o))
			continue
		}
		if !equalJSON(t, g.Object, o.Object) {
			t.Errorf("%s: %s differs from its own build", withPrometheus, key(o))
		}
		delete(got, key(o))
	}
	if len(got) > 0 {
		t.Errorf("%s has objects neither config/default nor the component has: %v", withPrometheus, slices.Collect(maps.Keys(got)))
	}

	dep := convert[appsv1.Deployment](t, one(t, withPrometheus, overlay, "Deployment"))
	svc := convert[corev1.Service](t, one(t, withPrometheus, overlay, "Service"))
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service %s selects %v, which does not select the controller's pods %v", svc.Name, svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("Service %s has %d ports, want 1", svc.Name, len(svc.Spec.Ports))
	}
	sp := svc.Spec.Ports[0]
	if !slices.ContainsFunc(dep.Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool {
		return sp.TargetPort == intstr.FromString(p.Name) && p.Name == "metrics" && p.ContainerPort == 8443
	}) {
		t.Errorf("Service %s port %+v does not target the container port metrics (8443)", svc.Name, sp)
	}

	sm := one(t, withPrometheus, overlay, "ServiceMonitor")
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetNamespace() != svc.Namespace {
		t.Errorf("ServiceMonitor %s/%s %s, want monitoring.coreos.com/v1 in the Service's namespace %s", sm.GetNamespace(), sm.GetName(), sm.GetAPIVersion(), svc.Namespace)
	}
	matchLabels, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(matchLabels) == 0 || !labels.SelectorFromSet(matchLabels).Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor selects %v, which does not select Service %s %v", matchLabels, svc.Name, svc.Labels)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor has %d endpoints, want 1", len(endpoints))
	}
	ep, _ := endpoints[0].(map[string]any)
	if ep["port"] != sp.Name || ep["path"] != "/metrics" {
		t.Errorf("ServiceMonitor endpoint %v, want port %q path /metrics", ep, sp.Name)
	}
	// The endpoint is HTTPS and asks for a token allowed to get /metrics: Prometheus sends its own
	// ServiceAccount's (TestQueriedMetricsAreExported scrapes with one as the docs bind it).
	if ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("ServiceMonitor endpoint %v, want scheme https with Prometheus' ServiceAccount token (bearerTokenFile)", ep)
	}
	if tc, _ := ep["tlsConfig"].(map[string]any); tc == nil {
		t.Errorf("ServiceMonitor endpoint %v has no tlsConfig: Prometheus would refuse the controller's self-signed certificate", ep)
	}

	if pr := one(t, withPrometheus, overlay, "PrometheusRule"); pr.GetAPIVersion() != "monitoring.coreos.com/v1" {
		t.Errorf("PrometheusRule %s, want monitoring.coreos.com/v1", pr.GetAPIVersion())
	}

	cm := convert[corev1.ConfigMap](t, one(t, withPrometheus, overlay, "ConfigMap"))
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("ConfigMap %s labels %v, want grafana_dashboard: \"1\" (Grafana's dashboard sidecar)", cm.Name, cm.Labels)
	}
	file, err := os.ReadFile(filepath.Join(root, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data[filepath.Base(dashboardFile)] != string(file) || len(cm.Data) != 1 {
		t.Errorf("ConfigMap %s does not carry %s as it is (keys %v)", cm.Name, dashboardFile, slices.Collect(maps.Keys(cm.Data)))
	}
	var dash struct {
		UID, Title string
		Panels     []json.RawMessage
	}
	if err := json.Unmarshal(file, &dash); err != nil || dash.UID == "" || dash.Title == "" || len(dash.Panels) == 0 {
		t.Errorf("%s is not a Grafana dashboard with a uid, a title and panels: %v", dashboardFile, err)
	}

	// An overlay that moves the controller to another namespace moves the monitoring with it.
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), fmt.Appendf(nil,
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: monitoring-moved\nresources: [%s]\ncomponents: [%s]\n",
		filepath.Join(rel, base), filepath.Join(rel, prometheusComponent)), 0o644); err != nil {
		t.Fatal(err)
	}
	moved, err := configtest.Build(context.Background(), kustomize, dir, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Deployment", "Service", "ServiceMonitor", "PrometheusRule", "ConfigMap"} {
		if o := one(t, dir, moved, kind); o.GetNamespace() != "monitoring-moved" {
			t.Errorf("an overlay with namespace: monitoring-moved leaves %s %s in %q", kind, o.GetName(), o.GetNamespace())
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// alertRules is the PrometheusRule's spec: a Prometheus rules file.
func alertRules(t *testing.T) (rulesYAML []byte, alerts map[string]string) {
	t.Helper()
	pr := one(t, prometheusComponent, build(t, prometheusComponent), "PrometheusRule")
	spec, ok := pr.Object["spec"].(map[string]any)
	if !ok {
		t.Fatalf("PrometheusRule %s has no spec", pr.GetName())
	}
	rulesYAML, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct{ Alert, Record, Expr string }
		}
	}
	if err := yaml.Unmarshal(rulesYAML, &file); err != nil {
		t.Fatal(err)
	}
	alerts = map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Fatalf("rule %q is no alert; this test expects alerts only", r.Record)
			}
			alerts[r.Alert] = r.Expr
		}
	}
	return rulesYAML, alerts
}

// TestAlertRules runs Prometheus' own checks on the alerts: `promtool check rules` on the rules of
// the PrometheusRule, and `promtool test rules` with synthetic series (alerts_test.yaml) in which
// every alert both fires and stays quiet.
func TestAlertRules(t *testing.T) {
	promtool := prometheusTool(t, "ADDONOPS_PROMTOOL", "promtool")
	rulesYAML, alerts := alertRules(t)
	for _, want := range []string{"AddonopsRolloutFailed", "AddonopsRolloutStuckPastDeadline", "AddonopsNoLeader", "AddonopsConfigKindForbidden"} {
		if _, ok := alerts[want]; !ok {
			t.Errorf("the PrometheusRule has no alert %s", want)
		}
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join(root, alertTests))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}

	// Every alert is tested firing and not firing.
	var unit struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string
				ExpAlerts []any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		}
	}
	if err := yaml.Unmarshal(tests, &unit); err != nil {
		t.Fatalf("%s: %v", alertTests, err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range unit.Tests {
		for _, a := range tc.AlertRuleTest {
			if _, ok := alerts[a.Alertname]; !ok {
				t.Errorf("%s tests alert %s, which the PrometheusRule does not have", alertTests, a.Alertname)
			}
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for a := range alerts {
		if !fires[a] || !quiet[a] {
			t.Errorf("%s: alert %s tested firing %v, not firing %v; want both", alertTests, a, fires[a], quiet[a])
		}
	}

	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		}
	}
}

// grafanaVar is a dashboard variable reference: $name or ${name}.
var grafanaVar = regexp.MustCompile(`\$\{?(\w+)\}?`)

// grafanaValues are what Grafana puts in for the dashboard's variables: the rate interval, and
// "All" (.*) for the selectors, which stand in regular expression matchers.
var grafanaValues = map[string]string{"__rate_interval": "2m", "job": ".*", "addon": ".*", "placement": ".*"}

// labelValues is a variable query label_values(<selector>, <label>).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)

// dashboardQueries lists every PromQL expression of the dashboard, variables put in as Grafana
// does, keyed by where it is.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	}
	var dash struct {
		Panels []struct {
			Title   string
			Type    string
			Targets []target
			Panels  []struct {
				Title   string
				Targets []target
			}
		}
		Templating struct {
			List []struct {
				Name, Type string
				Query      json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	substitute := func(where, expr string) string {
		return grafanaVar.ReplaceAllStringFunc(expr, func(ref string) string {
			name := grafanaVar.FindStringSubmatch(ref)[1]
			v, ok := grafanaValues[name]
			if !ok {
				t.Errorf("%s: %s uses the variable $%s, which the test does not know how to fill in", dashboardFile, where, name)
			}
			return v
		})
	}
	out := map[string]string{}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
		}
		for _, tg := range p.Targets {
			where := fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)
			out[where] = substitute(where, tg.Expr)
		}
		if len(p.Panels) > 0 {
			t.Errorf("%s: collapsed row %q: the test reads only top-level panels", dashboardFile, p.Title)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("%s: variable %s: %v", dashboardFile, v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("%s: variable %s query %q is not label_values(<selector>, <label>)", dashboardFile, v.Name, q.Query)
			continue
		}
		where := fmt.Sprintf("variable %s", v.Name)
		out[where] = substitute(where, m[1])
	}
	return out
}

// promqlNames parses exprs with Prometheus' PromQL parser (bin/promqlnames) and returns the metric
// names each selects; a parse error fails the test.
func promqlNames(t *testing.T, exprs map[string]string) map[string][]string {
	t.Helper()
	tool := prometheusTool(t, "ADDONOPS_PROMQLNAMES", "promqlnames")
	keys := slices.Sorted(maps.Keys(exprs))
	in := make([]string, len(keys))
	for i, k := range keys {
		in[i] = exprs[k]
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool)
	cmd.Stdin = bytes.NewReader(data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("promqlnames: %v\n%s", err, stderr.String())
	}
	var results []struct {
		Expr    string
		Metrics []string
		Error   string
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(keys) {
		t.Fatalf("promqlnames printed %d results for %d expressions (%v):\n%s", len(results), len(keys), err, out)
	}
	names := map[string][]string{}
	for i, r := range results {
		switch {
		case r.Error != "":
			t.Errorf("%s does not parse as PromQL: %s\n%s", keys[i], r.Error, r.Expr)
		case len(r.Metrics) == 0:
			t.Errorf("%s selects no metric: %s", keys[i], r.Expr)
		default:
			names[keys[i]] = r.Metrics
		}
	}
	return names
}

// queriedMetrics is every metric name a dashboard query or alert expression selects, with where.
func queriedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	exprs := dashboardQueries(t)
	_, alerts := alertRules(t)
	for a, e := range alerts {
		exprs["alert "+a] = e
	}
	byMetric := map[string][]string{}
	for where, ms := range promqlNames(t, exprs) {
		for _, m := range ms {
			byMetric[m] = append(byMetric[m], where)
		}
	}
	return byMetric
}

// TestQueriesParse: every dashboard query and alert expression parses with Prometheus' own PromQL
// parser and selects metrics by name (no hub needed; TestQueriedMetricsAreExported checks the
// names against a running controller).
func TestQueriesParse(t *testing.T) {
	metrics := queriedMetrics(t)
	// The parser itself must be able to say no, or this test proves nothing.
	bad := promqlNamesRaw(t, `sum by (addon) (rate(addonops_rollbacks_total[5m])`)
	if !strings.Contains(bad, "error") {
		t.Errorf("promqlnames accepted an unbalanced expression: %s", bad)
	}
	t.Logf("%d metrics queried: %v", len(metrics), slices.Sorted(maps.Keys(metrics)))
}

func promqlNamesRaw(t *testing.T, expr string) string {
	t.Helper()
	data, _ := json.Marshal([]string{expr})
	cmd := exec.Command(prometheusTool(t, "ADDONOPS_PROMQLNAMES", "promqlnames"))
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("promqlnames: %v", err)
	}
	return string(out)
}

// TestQueriedMetricsAreExported runs the controller binary as config/default deploys it (its args,
// a token of its ServiceAccount) against a test hub, drives one add-on through an install, a failed
// upgrade and a rollback (a simulated add-on manager and work agent, internal/testing/simagent), scrapes its
// /metrics and requires every metric that a dashboard query or alert expression names to be there.
func TestQueriedMetricsAreExported(t *testing.T) {
	queried := queriedMetrics(t)
	if t.Failed() {
		t.FailNow()
	}
	hub, _ := hubWith(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := hub.Clients

	const ns, addon = "obs-metrics", "obs-metrics"
	clusters := []string{"obs-c1", "obs-c2"}
	placementAll(ctx, t, c, ns, clusters)
	for _, cfg := range []string{"cfg-a", "cfg-b"} {
		if _, err := c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(ns).Create(ctx, &addonv1alpha1.AddOnDeploymentConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cfg},
			Spec:       addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "v", Value: cfg}}},
		}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	// cfg-b fails on obs-c1: the upgrade stops (maxFailures 0) and the revert to cfg-a, which
	// completed before, is a rollback.
	agent, err := simagent.New(hub.Config, simagent.Options{Addons: []string{addon}, Outcome: func(cluster, _ string, configs map[string]string) simagent.Outcome {
		for k := range configs {
			if cluster == clusters[0] && strings.HasSuffix(k, "/cfg-b") {
				return simagent.Fail
			}
		}
		return simagent.Succeed
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	adcs := addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}
	placementWith := func(cfg string) addonv1alpha1.PlacementStrategy {
		return addonv1alpha1.PlacementStrategy{
			PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: "all"},
			Configs:      []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adcs, ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: ns, Name: cfg}}},
			RolloutStrategy: clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{
				MaxConcurrency: intstr.FromInt32(1), RolloutConfig: clusterv1alpha1.RolloutConfig{ProgressDeadline: "10m"}}},
		}
	}
	cmas := c.Addon.AddonV1alpha1().ClusterManagementAddOns()
	if _, err := cmas.Create(ctx, &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: addon, Annotations: map[string]string{addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adcs}},
			InstallStrategy:  addonv1alpha1.InstallStrategy{Type: addonv1alpha1.AddonInstallStrategyPlacements, Placements: []addonv1alpha1.PlacementStrategy{placementWith("cfg-a")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmas.Delete(context.Background(), addon, metav1.DeleteOptions{}) })

	metricsURL, log := startControllerAsDeployed(t, hub)
	defer func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	}()

	waitReason := func(want string) {
		t.Helper()
		last := ""
		harness.Eventually(t, 90*time.Second, "the install progression to reach "+want, func() string {
			cma, err := cmas.Get(ctx, addon, metav1.GetOptions{})
			if err == nil && len(cma.Status.InstallProgressions) == 1 {
				if cond := meta.FindStatusCondition(cma.Status.InstallProgressions[0].Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing); cond != nil {
					if last = cond.Reason + ": " + cond.Message; cond.Reason == want {
						return ""
					}
				}
			}
			return "last: " + last
		}, harness.Every(200*time.Millisecond))
	}
	setConfig := func(cfg string) {
		t.Helper()
		cma, err := cmas.Get(ctx, addon, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cma.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{placementWith(cfg)}
		if _, err := cmas.Update(ctx, cma, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitReason(addonstatus.ReasonInstallSucceed)
	setConfig("cfg-b")
	waitReason(addonstatus.ReasonUpgradeFailed)
	setConfig("cfg-a")
	waitReason(addonstatus.ReasonRollbackSucceeded)

	// Prometheus scrapes with its own ServiceAccount's token, bound to addonops-metrics-reader as
	// config/rbac/metrics_reader_role.yaml says; the controller checks it with the RBAC config/rbac
	// grants it (a TokenReview and a SubjectAccessReview).
	reader := scraperToken(t, hub, "prometheus", true)
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount not bound to addonops-metrics-reader", scraperToken(t, hub, "not-a-reader", false), http.StatusForbidden},
	} {
		if code, body := get(t, metricsURL, tc.token); code != tc.want {
			t.Errorf("%s: GET /metrics answered %d, want %d: %.300s", tc.name, code, tc.want, body)
		}
	}
	families := scrape(t, metricsURL, reader)
	exported := map[string]bool{}
	for name, mf := range families {
		if len(mf.GetMetric()) == 0 {
			continue // described, no series
		}
		exported[name] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[name+suffix] = true
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(queried)) {
		if !exported[m] {
			t.Errorf("metric %s, queried by %v, has no series on the running controller's /metrics", m, queried[m])
		}
	}

	// The values say what happened, so the names are not there by accident.
	sel := map[string]string{"addon": addon, "placement": ns + "/all"}
	for _, want := range []struct {
		metric string
		labels map[string]string
		min    float64
	}{
		{"addonops_rollout_failures_total", sel, 1},
		{"addonops_rollbacks_total", sel, 1},
		{"addonops_rollout_max_concurrency", sel, 1},
		{"addonops_rollout_clusters", map[string]string{"addon": addon, "placement": ns + "/all", "state": addonstatus.ReasonRollbackSucceeded}, 1},
		{"leader_election_master_status", map[string]string{"name": "addonops-controller-leader"}, 1},
	} {
		if v, ok := sample(families, want.metric, want.labels); !ok || v < want.min {
			t.Errorf("%s%v = %v (found %v), want at least %v", want.metric, want.labels, v, ok, want.min)
		}
	}
	if v, ok := sample(families, "addonops_rollout_max_concurrency", sel); ok && v != 1 {
		t.Errorf("addonops_rollout_max_concurrency = %v, want the placement's maxConcurrency 1", v)
	}
	if v, ok := sample(families, "addonops_config_kind_forbidden", map[string]string{"group": addonv1alpha1.GroupName, "resource": "addondeploymentconfigs"}); !ok || v != 0 {
		t.Errorf("addonops_config_kind_forbidden for addondeploymentconfigs = %v (found %v), want 0: the controller may read them", v, ok)
	}
}

// sample is the value of the series of metric whose labels include want.
func sample(families map[string]*dto.MetricFamily, metric string, want map[string]string) (float64, bool) {
	mf, ok := families[metric]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		if !labels.SelectorFromSet(want).Matches(labels.Set(have)) {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// scraperToken returns a token of the ServiceAccount monitoring/name, bound to the ClusterRole
// addonops-metrics-reader if reader, as a user binds their Prometheus'.
func scraperToken(t *testing.T, hub *localhub.Hub, name string, reader bool) string {
	t.Helper()
	ctx := context.Background()
	const ns = "monitoring"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Clients.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if reader {
		if _, err := hub.Clients.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "addonops-metrics-reader-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "addonops-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
		}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cfg, err := configtest.ServiceAccountConfig(ctx, hub, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.BearerToken
}

// get returns the status code and body of GET url (HTTPS, the controller's self-signed
// certificate not verified, as the ServiceMonitor's tlsConfig says) with token ("" sends none).
func get(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the ServiceMonitor
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// scrape reads a Prometheus text exposition as Prometheus would, with token.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, url, token)
	if code != http.StatusOK {
		t.Fatalf("scraping %s: %d\n%s", url, code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the exposition of %s: %v", url, err)
	}
	return families
}

// startControllerAsDeployed starts the addonops-controller binary with config/default's
// Deployment's args and POD_NAMESPACE, a kubeconfig holding only a token of its ServiceAccount and
// free loopback ports, waits until it holds the Lease and its caches synced (/readyz), and returns
// its metrics URL (HTTPS) and log. It is stopped when the test ends.
func startControllerAsDeployed(t *testing.T, hub *localhub.Hub) (string, *syncBuffer) {
	t.Helper()
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "addonops-controller")
	if err := krmfntest.Build(root, bin, "./cmd/addonops-controller"); err != nil {
		t.Fatal(err)
	}
	dep := convert[appsv1.Deployment](t, one(t, base, build(t, base), "Deployment"))
	container := dep.Spec.Template.Spec.Containers[0]
	kubeconfig, err := configtest.ServiceAccountKubeconfig(ctx, hub, configtest.Namespace, configtest.ServiceAccount, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	probes, metrics := freePort(t), freePort(t)
	args := append(expand(container.Args, map[string]string{"POD_NAMESPACE": dep.Namespace}), "--kubeconfig="+kubeconfig,
		"--health-probe-bind-address=127.0.0.1:"+probes, "--metrics-bind-address=127.0.0.1:"+metrics)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+dep.Namespace)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		// The next controller of this package's hub must win the Lease at once.
		_ = hub.Clients.Kube.CoordinationV1().Leases(dep.Namespace).Delete(context.Background(), "addonops-controller-leader", metav1.DeleteOptions{})
	})
	harness.Eventually(t, 90*time.Second, "the controller to hold the Lease and report /readyz ok (within 90s)", func() string {
		select {
		case err := <-exited:
			t.Fatalf("the controller exited before it was ready: %v\n%s", err, log.String())
		default:
		}
		// /readyz waits for the caches only once this replica is the leader: wait for the Lease.
		lease, err := hub.Clients.Kube.CoordinationV1().Leases(dep.Namespace).Get(ctx, "addonops-controller-leader", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Sprintf("no Lease holder (%v)", err)
		}
		resp, err := http.Get("http://127.0.0.1:" + probes + "/readyz")
		if err != nil {
			return "/readyz: " + err.Error()
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "/readyz: " + resp.Status
		}
		return ""
	}, harness.Every(200*time.Millisecond), harness.Dump(log.String))
	return "https://127.0.0.1:" + metrics + "/metrics", log
}
