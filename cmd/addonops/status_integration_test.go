//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/spechash"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/simagent"
)

var allAtOnce = clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}

// scenario starts add-on addon on the package's hub with clusters and one placement "all", and
// returns it with the name of its first config version.
func scenario(t *testing.T, addon string, agentDelay time.Duration, clusters ...string) (*rolloutsim.Scenario, string) {
	t.Helper()
	s := rolloutsim.New(t, localhub.ForTest(t), addon, agentDelay)
	s.Clusters(clusters...)
	s.Placement("all", clusters...)
	return s, s.Config("hello-config", "v1")
}

// halfInstalled is scenario with two clusters whose install stands half done: the first
// cluster's agent runs v1, the second's never becomes ready.
func halfInstalled(t *testing.T, addon, done, stuck string) (*rolloutsim.Scenario, string) {
	t.Helper()
	s, v1 := scenario(t, addon, 0, done, stuck)
	s.Outcome(stuck, v1, simagent.Never)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	s.WaitCMA(time.Minute, "install half done", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonInstalling && strings.Contains(m, "1/2 clusters done, 1 in progress")
	})
	return s, v1
}

// TestWatchSucceeds starts watching before the add-on exists (a GitOps sync still pending), sees
// the install progress and exits 0 when every cluster runs it.
func TestWatchSucceeds(t *testing.T) {
	s, v1 := scenario(t, "watch-ok", time.Second, "ok1", "ok2")
	_, stderr, done := startStatus("watch-ok", "--watch", "--timeout", "2m", "--kubeconfig", s.Hub.Kubeconfig)
	// The command starts watching before the add-on appears, and says that it waits for it.
	harness.Eventually(t, 30*time.Second, "the command waits for the add-on", func() string {
		if !strings.Contains(stderr.String(), "waiting for it to appear") {
			return "stderr: " + stderr.String()
		}
		return ""
	})
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	r := <-done
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, `clustermanagementaddons.addon.open-cluster-management.io "watch-ok" not found; waiting for it to appear`) {
		t.Errorf("stderr does not say it waits for the add-on:\n%s", r.stderr)
	}
	frames := strings.Split(r.stdout, "\n--- ")
	last := frames[len(frames)-1]
	for _, want := range []string{"rollout: Succeeded", "PLACEMENT watch-ok/all   Healthy (InstallSucceed", "[########################] 2/2 done, 0 in progress, 0 failed, 0 timed out", "desired:         watch-ok/" + v1, "versions: desired "} {
		if !strings.Contains(last, want) {
			t.Errorf("last frame lacks %q:\n%s", want, last)
		}
	}
	if len(frames) < 2 || !strings.Contains(r.stdout, "rollout: Progressing") {
		t.Errorf("want at least one frame of the install in progress before the last, got:\n%s", r.stdout)
	}
}

// TestWatchFails: one cluster's agent cannot apply the add-on; the watch exits 1 and names it.
func TestWatchFails(t *testing.T) {
	s, v1 := scenario(t, "watch-fail", 0, "good1", "bad1")
	s.Outcome("bad1", v1, simagent.Fail)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	r := status("watch-fail", "--watch", "--timeout", "2m", "--kubeconfig", s.Hub.Kubeconfig)
	if r.code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitFailed, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "failed clusters:\n    bad1  InstallFailed: install failed: ManifestWork addon-watch-fail-deploy-0 is Applied=False") {
		t.Errorf("stdout does not name the failed cluster and its reason:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "the rollout of watch-fail failed: watch-fail/all: InstallFailed:") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

// TestWatchTimesOut: a cluster's agent never answers; the watch gives up at --timeout with exit 2.
func TestWatchTimesOut(t *testing.T) {
	s, v1 := scenario(t, "watch-slow", 0, "slow1")
	s.Outcome("slow1", v1, simagent.Never)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	s.WaitCMA(time.Minute, "install in progress", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonInstalling
	})
	begin := time.Now()
	r := status("watch-slow", "--watch", "--timeout", "2s", "--kubeconfig", s.Hub.Kubeconfig)
	if r.code != exitTimeout {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitTimeout, r.stdout, r.stderr)
	}
	if elapsed := time.Since(begin); elapsed > 30*time.Second {
		t.Errorf("--timeout 2s returned after %v", elapsed)
	}
	if !strings.Contains(r.stderr, "timed out after 2s waiting for the rollout of watch-slow to finish") || !strings.Contains(r.stdout, "0/1 done, 1 in progress") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// Without --watch the same state prints once and exits 0.
	if r := status("watch-slow", "--kubeconfig", s.Hub.Kubeconfig); r.code != exitOK || strings.Count(r.stdout, "ADD-ON watch-slow") != 1 {
		t.Errorf("without --watch: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMachineOutput reads -o json and -o yaml after an upgrade and checks them against the hub:
// versions by base name (from the config's addonops.io/base-name annotation) and short hash.
func TestMachineOutput(t *testing.T) {
	s, v1 := scenario(t, "machine", 0, "m1", "m2")
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	v2 := s.Config("hello-config", "v2")
	s.WaitCMA(time.Minute, "install complete", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonInstallSucceed
	})
	s.CMA(rolloutsim.Install{Placement: "all", Config: v2, Strategy: allAtOnce})
	cma := s.WaitCMA(time.Minute, "upgrade complete", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgradeSucceed
	})
	ref := cma.Status.InstallProgressions[0].ConfigReferences[0]
	if ref.DesiredConfig.Name != v2 {
		t.Fatalf("desired %s, want %s", ref.DesiredConfig.Name, v2)
	}
	for _, format := range []string{"json", "yaml"} {
		r := status("machine", "-o", format, "--kubeconfig", s.Hub.Kubeconfig)
		if r.code != exitOK {
			t.Fatalf("-o %s: exit %d: %s", format, r.code, r.stderr)
		}
		var v rolloutview.View
		var err error
		if format == "json" {
			err = json.Unmarshal([]byte(r.stdout), &v)
		} else {
			err = yaml.UnmarshalStrict([]byte(r.stdout), &v)
		}
		if err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, r.stdout)
		}
		if v.Phase != rolloutview.PhaseSucceeded || len(v.Placements) != 1 {
			t.Fatalf("-o %s: %+v", format, v)
		}
		p := v.Placements[0]
		if p.Progress != (rolloutview.Progress{Total: 2, Done: 2, Source: "controller"}) {
			t.Errorf("-o %s: progress %+v", format, p.Progress)
		}
		c := p.Configs[0]
		if c.Desired.Name != v2 || c.Desired.BaseName != "hello-config" || c.Desired.SpecHash != ref.DesiredConfig.SpecHash ||
			c.Desired.Short != spechash.Short(ref.DesiredConfig.SpecHash) || len(c.Desired.Short) != 8 {
			t.Errorf("-o %s: desired %+v, want %s (hello-config) at %s", format, c.Desired, v2, ref.DesiredConfig.SpecHash)
		}
		if c.LastApplied.Name != v2 || c.LastKnownGood.Name != v2 {
			t.Errorf("-o %s: last applied %+v, last known good %+v, want %s", format, c.LastApplied, c.LastKnownGood, v2)
		}
	}
}

// TestRollback: an upgrade fails on one cluster and Git reverts it. The status command names the
// failed cluster with its cause, shows the rollback per placement and per cluster (table and
// JSON), and --watch exits 0 when every cluster is back.
func TestRollback(t *testing.T) {
	s, v1 := scenario(t, "rollback", 0, "rb1", "rb2")
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	s.WaitCMA(time.Minute, "install complete", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonInstallSucceed
	})
	v2 := s.Config("hello-config", "v2")
	s.Outcome("rb1", v2, simagent.Fail)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v2, Strategy: allAtOnce})
	s.WaitCMA(time.Minute, "upgrade failed", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgradeFailed
	})
	r := status("rollback", "--kubeconfig", s.Hub.Kubeconfig)
	for _, want := range []string{"rollout: Failed", "failed: rb1 (upgrade failed: ManifestWork addon-rollback-deploy-0 is Applied=False",
		"    rb1  failed  UpgradeFailed\n", "failed clusters:\n    rb1  UpgradeFailed: upgrade failed: ManifestWork addon-rollback-deploy-0 is Applied=False"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("failed upgrade: stdout lacks %q:\n%s", want, r.stdout)
		}
	}

	// Revert to v1; rb1's agent does not answer for v1 yet, so the rollback is seen under way.
	s.Outcome("rb1", v1, simagent.Never)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	s.WaitCMA(time.Minute, "rolling back, rb2 back on v1", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonRollingBack && strings.Contains(m, "1/2 clusters done, 1 in progress")
	})
	r = status("rollback", "-o", "json", "--kubeconfig", s.Hub.Kubeconfig)
	var v rolloutview.View
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != exitOK {
		t.Fatalf("-o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	p := v.Placements[0]
	if v.Phase != rolloutview.PhaseProgressing || p.Change != "rollback" || p.Reason != addonstatus.ReasonRollingBack ||
		p.Progress != (rolloutview.Progress{Total: 2, Done: 1, InProgress: 1, Source: "controller"}) {
		t.Errorf("rolling back: phase %s, placement change %q reason %q progress %+v", v.Phase, p.Change, p.Reason, p.Progress)
	}
	var states []string
	for _, c := range p.Clusters {
		states = append(states, c.Cluster+"="+c.State+"/"+c.Reason)
	}
	if got, want := strings.Join(states, " "), "rb1=inProgress/RollingBack rb2=done/RollbackSucceeded"; got != want {
		t.Errorf("rolling back: clusters %s, want %s", got, want)
	}

	stdout, _, done := startStatus("rollback", "--watch", "--timeout", "2m", "--kubeconfig", s.Hub.Kubeconfig)
	// The watch shows the rollback under way before it ends (the frames are checked below).
	harness.Eventually(t, 30*time.Second, "the watch's first frame", func() string {
		if !strings.Contains(stdout.String(), "RollingBack") {
			return "stdout: " + stdout.String()
		}
		return ""
	})
	s.Outcome("rb1", v1, simagent.Succeed)
	s.Poke("rb1")
	r = <-done
	if r.code != exitOK {
		t.Fatalf("--watch: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	frames := strings.Split(r.stdout, "\n--- ")
	for _, want := range []string{"RollingBack", "rollback to version " + v.Placements[0].DesiredVersion + " (rollback/" + v1 + ")"} {
		if !strings.Contains(frames[0], want) {
			t.Errorf("first frame lacks %q:\n%s", want, frames[0])
		}
	}
	last := frames[len(frames)-1]
	for _, want := range []string{"rollout: Succeeded", "Healthy (RollbackSucceeded", "2/2 rollback completed with no errors.",
		"rollback to version " + versionOf(t, s, v1) + " (rollback/" + v1 + "): succeeded", "    rb1  done  RollbackSucceeded\n"} {
		if !strings.Contains(last, want) {
			t.Errorf("last frame lacks %q:\n%s", want, last)
		}
	}
}

// specHashOf reads the spec hash the controller reports for config name (its desired config once
// the CMA names it).
func specHashOf(t *testing.T, s *rolloutsim.Scenario, name string) string {
	t.Helper()
	cma, err := s.GetCMA()
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range cma.Status.InstallProgressions {
		for _, r := range ip.ConfigReferences {
			if r.DesiredConfig != nil && r.DesiredConfig.Name == name {
				return r.DesiredConfig.SpecHash
			}
		}
	}
	t.Fatalf("no install progression of %s desires %s", s.Addon, name)
	return ""
}

// versionOf is the version id (history.VersionID) of the add-on's one config, as the controller
// reports its spec hash.
func versionOf(t *testing.T, s *rolloutsim.Scenario, name string) string {
	t.Helper()
	return history.VersionID([]history.Config{{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs", Namespace: s.Addon, Name: name, SpecHash: specHashOf(t, s, name)}})
}

// TestUsageErrors: exit 3 with a message that says what is wrong.
func TestUsageErrors(t *testing.T) {
	hub := localhub.ForTest(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nope", "--kubeconfig", hub.Kubeconfig}, `clustermanagementaddons.addon.open-cluster-management.io "nope" not found`},
		{[]string{"a", "b", "--kubeconfig", hub.Kubeconfig}, "want at most one add-on name"},
		{[]string{"-o", "xml"}, `--output "xml": want json, yaml or wide`},
		{[]string{"--watch", "--kubeconfig", hub.Kubeconfig}, "--watch and --clusters need an add-on name"},
		{[]string{"--clusters"}, "--watch and --clusters need an add-on name"},
		{[]string{"a", "--timeout", "1s"}, "--timeout only makes sense with --watch"},
		{[]string{"a", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}, "loading the hub's kubeconfig"},
	} {
		r := status(tc.args...)
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("status %v: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, exitError, tc.want)
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"addonops", "frobnicate"}, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %s", code, errOut.String())
	}
}

// TestKubeconfigContext: the kubeconfig flags work like kubectl's: --context picks the hub when the
// current context points elsewhere.
func TestKubeconfigContext(t *testing.T) {
	hub := localhub.ForTest(t)
	cfg, err := clientcmd.LoadFromFile(hub.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	cfg.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.Contexts["hub"] = cur
	cfg.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: cur.AuthInfo}
	cfg.CurrentContext = "nowhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	cmas := hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	if _, err := cmas.Create(t.Context(), &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "manual"}, Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{Type: "Manual"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cmas.Delete(context.Background(), "manual", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ClusterManagementAddOn manual: %v", err)
		}
	})
	if r := status("manual", "--kubeconfig", path, "--context", "hub"); r.code != exitOK || !strings.Contains(r.stdout, "ADD-ON manual   install strategy: Manual   rollout: Succeeded   managed by: addon-manager") {
		t.Errorf("--context hub: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Setenv("KUBECONFIG", path)
	if r := status("manual", "--request-timeout", "5s"); r.code != exitError || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("current context nowhere: exit %d, stderr %s", r.code, r.stderr)
	}
}

// TestKubectlPlugin installs the command as kubectl-addonops on the PATH and runs it through the
// real kubectl: usage speaks of "kubectl addonops", and the watch exit codes reach the caller as
// process exit statuses.
func TestKubectlPlugin(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed to test the plugin (apt-get install kubectl): %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "kubectl-addonops")); err != nil {
		t.Fatal(err)
	}
	s, v1 := scenario(t, "plugin", 0, "p1", "p2")
	s.Outcome("p2", v1, simagent.Fail)
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})

	kube := func(args ...string) (int, string, string) {
		cmd := exec.Command(kubectl, args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1", "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exitErr *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String(), errOut.String()
		case errors.As(err, &exitErr):
			return exitErr.ExitCode(), out.String(), errOut.String()
		}
		t.Fatalf("kubectl %v: %v", args, err)
		return 0, "", ""
	}
	code, out, _ := kube("plugin", "list")
	if code != 0 || !strings.Contains(out, filepath.Join(dir, "kubectl-addonops")) {
		t.Errorf("kubectl plugin list: exit %d\n%s", code, out)
	}
	code, out, _ = kube("addonops", "help")
	if code != 0 || !strings.Contains(out, "kubectl addonops status ADDON [flags]") {
		t.Errorf("kubectl addonops help: exit %d\n%s", code, out)
	}
	code, out, errOut := kube("addonops", "status", "plugin", "--watch", "--timeout", "2m", "--kubeconfig", s.Hub.Kubeconfig)
	if code != exitFailed || !strings.Contains(out, "p2  InstallFailed") || !strings.Contains(errOut, "kubectl addonops status: the rollout of plugin failed") {
		t.Errorf("kubectl addonops status --watch: exit %d, want %d\n%s%s", code, exitFailed, out, errOut)
	}
}
