//go:build integration

package controller

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// One object must not stop the whole controller: ClusterManagementAddOns the API server accepts
// but the Go types cannot hold (minSuccessTime: forever; a maxConcurrency beyond int32) used to fail
// every list of CMAs, so nothing synced. Now each reports its field and value in its progression,
// with one Warning event, nothing moves for it, and the other add-on rolls out, before and after a
// restart of the controller.
func TestUndecodableAddOns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.ensureClusters("c1", "c2", "b1")
	e.adc("cfg-a", "1")
	e.adc("cfg-b", "2")
	e.placement("good", [][]string{{"c1", "c2"}})
	e.placement("bad", [][]string{{"b1"}})
	e.cma(nil, install{placement: "good", config: "cfg-a", strategy: allStrategy})

	const path = "spec.installStrategy.placements[0].rolloutStrategy.progressive."
	bad := []struct {
		name     string
		strategy map[string]any
		want     string // in the progression message
	}{
		{e.name + "-forever", map[string]any{"type": "Progressive", "progressive": map[string]any{"maxConcurrency": int64(1), "minSuccessTime": "forever"}},
			path + `minSuccessTime: "forever" is not a Go duration`},
		{e.name + "-overflow", map[string]any{"type": "Progressive", "progressive": map[string]any{"maxConcurrency": int64(math.MaxInt64)}},
			path + `maxConcurrency: "9223372036854775807" is too large`},
	}
	var names []string
	for _, b := range bad {
		e.rawCMA(b.name, "bad", "cfg-a", b.strategy)
		names = append(names, b.name)
	}
	// The API server accepts them, and the typed client cannot list CMAs any more.
	if _, err := e.c.Addon.AddonV1alpha1().ClusterManagementAddOns().List(e.ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("the typed client lists CMAs: the test objects no longer reproduce the problem")
	} else {
		t.Logf("typed list of CMAs: %v", err)
	}

	check := func(c *Controller, restarted bool) {
		t.Helper()
		e.waitFor(30*time.Second, "the controller's caches to sync", c.Synced)
		for _, b := range bad {
			e.waitFor(30*time.Second, fmt.Sprintf("%s to report %q", b.name, b.want), func() bool {
				reason, msg := e.rawProgression(b.name, "bad")
				return reason == addonstatus.ReasonInvalidRolloutStrategy && strings.Contains(msg, b.want)
			})
			_, msg := e.rawProgression(b.name, "bad")
			if !strings.Contains(msg, "placement "+e.name+"/bad") || !strings.Contains(msg, "fix") {
				t.Errorf("%s: progression message %q does not name the placement and how to fix it", b.name, msg)
			}
			// One Warning event for the problem, and none more after a restart (the progression
			// already says it).
			e.waitFor(10*time.Second, "a Warning event on "+b.name, func() bool { return len(e.warnings(b.name)) > 0 })
			if w := e.warnings(b.name); len(w) != 1 || !strings.Contains(w[0], addonstatus.ReasonInvalidRolloutStrategy+": ") || !strings.Contains(w[0], b.want) {
				t.Errorf("%s: Warning events %q, want one %s naming the field (restarted: %t)", b.name, w, addonstatus.ReasonInvalidRolloutStrategy, restarted)
			}
			// Nothing moves for it: no MCA is created.
			list, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns("").List(e.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", b.name).String()})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) > 0 {
				t.Errorf("%s: %d MCAs created for an add-on that does not decode", b.name, len(list.Items))
			}
		}
	}

	c, _ := e.runController(Options{Only: names})
	e.waitInstalled(60*time.Second, "cfg-a", "c1", "c2")
	e.waitProgression(10*time.Second, "good", addonstatus.ReasonInstallSucceed, "2/2 install completed")
	check(c, false)

	// A new controller on the same hub syncs too, and the good add-on keeps rolling out.
	e.stopController()
	c, _ = e.runController(Options{Only: names})
	e.waitFor(30*time.Second, "the restarted controller's caches to sync", c.Synced)
	e.setConfig("good", "cfg-b")
	e.waitStates(60*time.Second, map[string]string{"c1": "cfg-b/cfg-b/True/UpgradeSucceed", "c2": "cfg-b/cfg-b/True/UpgradeSucceed"})
	check(c, true)

	// Fixed, the add-on rolls out: its progression leaves InvalidRolloutStrategy and its cluster gets
	// an MCA.
	fixed := bad[0].name
	e.updateRawCMA(fixed, func(u *unstructured.Unstructured) {
		ps, _, _ := unstructured.NestedSlice(u.Object, "spec", "installStrategy", "placements")
		_ = unstructured.SetNestedField(ps[0].(map[string]any), "1s", "rolloutStrategy", "progressive", "minSuccessTime")
		_ = unstructured.SetNestedSlice(u.Object, ps, "spec", "installStrategy", "placements")
	})
	e.waitFor(30*time.Second, fixed+" to roll out once fixed", func() bool {
		reason, _ := e.rawProgression(fixed, "bad")
		return reason == addonstatus.ReasonInstalling || reason == addonstatus.ReasonInstallSucceed
	})
	e.waitFor(30*time.Second, fixed+" to get its MCA", func() bool {
		_, err := e.c.Addon.AddonV1alpha1().ManagedClusterAddOns(e.cluster("b1")).Get(e.ctx, fixed, metav1.GetOptions{})
		return err == nil
	})
}

// rawCMA creates a self-managed CMA through the dynamic client (the typed one cannot send what the
// Go types cannot hold) with one install placement of this test's namespace.
func (e *env) rawCMA(name, placement, cfg string, rolloutStrategy map[string]any) {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": addonv1alpha1.SchemeGroupVersion.String(), "kind": "ClusterManagementAddOn",
		"metadata": map[string]any{"name": name, "annotations": map[string]any{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleSelfManageAnnotationValue}},
		"spec": map[string]any{
			"supportedConfigs": []any{map[string]any{"group": addonv1alpha1.GroupName, "resource": "addondeploymentconfigs"}},
			"installStrategy": map[string]any{"type": "Placements", "placements": []any{map[string]any{
				"name": placement, "namespace": e.name, "rolloutStrategy": rolloutStrategy,
				"configs": []any{map[string]any{"group": addonv1alpha1.GroupName, "resource": "addondeploymentconfigs", "namespace": e.name, "name": cfg}},
			}}},
		},
	}}
	if _, err := e.c.Dynamic.Resource(cmaGVR).Create(e.ctx, u, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("the API server refused CMA %s: %v", name, err)
	}
	e.t.Cleanup(func() { _ = e.c.Dynamic.Resource(cmaGVR).Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func (e *env) updateRawCMA(name string, change func(*unstructured.Unstructured)) {
	e.t.Helper()
	for range 10 {
		u, err := e.c.Dynamic.Resource(cmaGVR).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		change(u)
		if _, err = e.c.Dynamic.Resource(cmaGVR).Update(e.ctx, u, metav1.UpdateOptions{}); err == nil {
			return
		}
	}
	e.t.Fatalf("updating CMA %s kept conflicting", name)
}

// rawProgression reads the Progressing condition of a CMA's install progression through the dynamic
// client.
func (e *env) rawProgression(name, placement string) (reason, message string) {
	u, err := e.c.Dynamic.Resource(cmaGVR).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", ""
	}
	ips, _, _ := unstructured.NestedSlice(u.Object, "status", "installProgressions")
	for _, ip := range ips {
		m, _ := ip.(map[string]any)
		if m["name"] != placement {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(m, "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == addonstatus.ConditionProgressing {
				r, _ := cm["reason"].(string)
				msg, _ := cm["message"].(string)
				return r, msg
			}
		}
	}
	return "", ""
}

// warnings lists "reason: message" of the Warning events on a CMA.
func (e *env) warnings(cma string) []string {
	list, err := e.c.Kube.CoreV1().Events("").List(e.ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.kind", "ClusterManagementAddOn"),
		fields.OneTermEqualSelector("involvedObject.name", cma),
		fields.OneTermEqualSelector("type", corev1.EventTypeWarning)).String()})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		for range max(ev.Count, 1) {
			out = append(out, ev.Reason+": "+ev.Message)
		}
	}
	return out
}

// Unsafe strategy values are never obeyed: maxConcurrency -1 (an integer: the CRD's pattern
// checks only strings), 0 and "0%" would move every cluster at once. An upgrade under one of them
// moves nothing: the placement waits with InvalidRolloutStrategy and the rollout-strategy function's
// own message (as it prints it at build time, testdata/error-unsafe-values), until the value is
// fixed; then the upgrade goes on, one cluster at a time.
func TestUnsafeMaxConcurrencyMovesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		value intstr.IntOrString
		want  string // what the function prints for the same value
	}{
		{"negative", intstr.FromInt32(-1), `"-1" is negative: write a number of clusters from 1 or a percentage like 25%`},
		{"zero", intstr.FromInt32(0), `"0" would move every cluster at once (OCM treats a maxConcurrency of 0 as no limit); write at least 1 or a percentage like 25%, or use type All to move every cluster at once`},
		{"zero-percent", intstr.FromString("0%"), `"0%" would move every cluster at once (OCM treats a maxConcurrency of 0 as no limit); write at least 1 or a percentage like 25%, or use type All to move every cluster at once`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{})
			e.ensureClusters("c1", "c2", "c3")
			e.adc("cfg-a", "1")
			e.adc("cfg-b", "2")
			e.placement("aws", [][]string{{"c1", "c2", "c3"}})
			e.cma(nil, install{placement: "aws", config: "cfg-a", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})})
			e.startController(Options{})
			e.waitInstalled(60*time.Second, "cfg-a", "c1", "c2", "c3")

			change := e.rec.count()
			e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
				ps := &cma.Spec.InstallStrategy.Placements[0]
				ps.RolloutStrategy.Progressive.MaxConcurrency = tc.value
				ps.Configs[0].Name = "cfg-b"
			})
			e.waitProgression(30*time.Second, "aws", addonstatus.ReasonInvalidRolloutStrategy,
				"the rollout strategy of placement "+e.name+"/aws is invalid: spec.installStrategy.placements[0].rolloutStrategy.progressive.maxConcurrency: "+tc.want)
			e.waitCMAEvent(10*time.Second, "Warning "+addonstatus.ReasonInvalidRolloutStrategy, tc.want)
			e.holds(3*time.Second, "no cluster told cfg-b under an invalid strategy", func() string {
				for _, c := range e.clusters("c1", "c2", "c3") {
					if e.rec.desiredSince(c, "cfg-b", change) {
						return fmt.Sprintf("%s was told to run cfg-b under maxConcurrency %s:%s", c, tc.value.String(), e.rec.eventsOf(c))
					}
				}
				return ""
			})

			// Fixed, the upgrade goes on, never more than one cluster at a time.
			e.updateCMA(func(cma *addonv1alpha1.ClusterManagementAddOn) {
				cma.Spec.InstallStrategy.Placements[0].RolloutStrategy.Progressive.MaxConcurrency = intstr.FromInt32(1)
			})
			e.waitStates(60*time.Second, map[string]string{
				"c1": "cfg-b/cfg-b/True/UpgradeSucceed", "c2": "cfg-b/cfg-b/True/UpgradeSucceed", "c3": "cfg-b/cfg-b/True/UpgradeSucceed",
			})
			if n := e.rec.maxInFlight("cfg-b"); n > 1 {
				t.Fatalf("%d clusters in flight at once, maxConcurrency is 1", n)
			}
		})
	}
}

var cmaGVR = addonv1alpha1.SchemeGroupVersion.WithResource("clustermanagementaddons")
