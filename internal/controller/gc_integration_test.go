//go:build integration

package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// versionedADC creates an AddOnDeploymentConfig as config-hash names it: <base>-<hash> with the
// base-name and content-hash annotations (or, with base "", a plain one).
func (e *env) versionedADC(name, base, value string) {
	e.t.Helper()
	ann := map[string]string{}
	if base != "" {
		ann[configref.BaseNameAnnotation] = base
		ann[configref.ContentHashAnnotation] = strings.TrimPrefix(name, base+"-")
	}
	_, err := e.c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(e.name).Create(e.ctx, &addonv1alpha1.AddOnDeploymentConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.name, Annotations: ann},
		Spec:       addonv1alpha1.AddOnDeploymentConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "version", Value: value}}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	harness.Pass(1100 * time.Millisecond) // creation timestamps have whole seconds: versions must not tie
}

func (e *env) adcExists(name string) bool {
	_, err := e.c.Addon.AddonV1alpha1().AddOnDeploymentConfigs(e.name).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	return err == nil
}

func (e *env) waitDeleted(timeout time.Duration, name string) {
	e.t.Helper()
	e.waitFor(timeout, name+" deleted", func() bool { return !e.adcExists(name) })
	e.waitFor(10*time.Second, name+" ConfigVersionDeleted event", func() bool {
		list, err := e.c.Kube.CoreV1().Events(e.name).List(e.ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
		if err != nil {
			return false
		}
		for _, ev := range list.Items {
			if ev.Reason == "ConfigVersionDeleted" && strings.Contains(ev.Message, "superseded by") {
				return true
			}
		}
		return false
	})
}

// Garbage collection of superseded config versions, through a sequence of versions like the rollout
// examples (install, upgrade, a rollout held by a waiting cluster, a revert that re-creates a
// deleted version).
func TestConfigGarbageCollection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	shorts := []string{"c1", "c2", "c3"}
	e.ensureClusters(shorts...)
	e.versionedADC("cfg-v1", "cfg", "1")
	e.versionedADC("cfg-v2", "cfg", "2")
	e.versionedADC("plain-old", "", "0") // no config-hash annotations: never touched
	e.placement("p", [][]string{shorts})
	e.cma(nil, install{placement: "p", config: "plain-old", strategy: progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{})})
	// A history of one version per placement: older versions are no rollback targets, so the
	// collector may take them (TestConfigGCKeepsRollbackTargets covers the history).
	e.startController(Options{ConfigGC: ConfigGCOptions{Keep: 0, MinAge: -1, Interval: 300 * time.Millisecond}, HistoryLimit: 1})
	e.waitInstalled(60*time.Second, "plain-old", shorts...)

	// 01: install v1; 02: upgrade to v2. v1 is superseded once nothing references it.
	e.setConfig("p", "cfg-v1")
	e.waitUpgraded(60*time.Second, "cfg-v1", shorts...)
	e.setConfig("p", "cfg-v2")
	e.waitUpgraded(60*time.Second, "cfg-v2", shorts...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "3/3 upgrade completed")
	e.waitDeleted(20*time.Second, "cfg-v1")
	if !e.adcExists("plain-old") {
		t.Fatal("a config without config-hash's annotations was deleted")
	}

	// 03: v3 rolls out, held at c1: c2 and c3 still run v2, which must survive.
	e.versionedADC("cfg-v3", "cfg", "3")
	e.outcome("c1", "cfg-v3", simagent.Never)
	e.setConfig("p", "cfg-v3")
	e.waitCluster(30*time.Second, "c1", "cfg-v3/cfg-v2/True/Upgrading")
	e.holds(2*time.Second, "cfg-v2 and cfg-v3 kept over several collections", func() string {
		for _, n := range []string{"cfg-v2", "cfg-v3"} {
			if !e.adcExists(n) {
				return fmt.Sprintf("%s deleted while the rollout needs it", n)
			}
		}
		return ""
	})
	e.outcome("c1", "cfg-v3", simagent.Succeed)
	e.agent.Recheck()
	e.waitUpgraded(60*time.Second, "cfg-v3", shorts...)
	e.waitDeleted(20*time.Second, "cfg-v2")

	// 04: git revert to v1, which the collector deleted: GitOps applies it again, the rollout
	// works, and v3 goes once superseded. v1 is no longer in the one-version history, so this is
	// an upgrade.
	e.versionedADC("cfg-v1", "cfg", "1")
	e.setConfig("p", "cfg-v1")
	e.waitUpgraded(60*time.Second, "cfg-v1", shorts...)
	e.waitDeleted(20*time.Second, "cfg-v3")
	if !e.adcExists("cfg-v1") {
		t.Fatal("the version in use was deleted")
	}
}

// A version the history lists as completed is a rollback target: the collector keeps it, and a
// revert to it is a rollback that finds it.
func TestConfigGCKeepsRollbackTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	shorts := []string{"c1", "c2"}
	e.ensureClusters(shorts...)
	e.versionedADC("cfg-v1", "cfg", "1")
	e.versionedADC("cfg-v2", "cfg", "2")
	e.placement("p", [][]string{shorts})
	e.cma(nil, install{placement: "p", config: "cfg-v1", strategy: allStrategy})
	e.startController(Options{ConfigGC: ConfigGCOptions{Keep: 0, MinAge: -1, Interval: 300 * time.Millisecond}})
	e.waitInstalled(60*time.Second, "cfg-v1", shorts...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonInstallSucceed, "2/2 install completed")
	e.setConfig("p", "cfg-v2")
	e.waitUpgraded(60*time.Second, "cfg-v2", shorts...)
	e.waitProgression(10*time.Second, "p", addonstatus.ReasonUpgradeSucceed, "2/2 upgrade completed")
	e.holds(2*time.Second, "cfg-v1 kept over several collections", func() string {
		if !e.adcExists("cfg-v1") {
			return "cfg-v1, a completed version in the history, was deleted"
		}
		return ""
	})
	e.setConfig("p", "cfg-v1")
	e.waitProgression(30*time.Second, "p", addonstatus.ReasonRollbackSucceeded, "2/2 rollback completed")
}
