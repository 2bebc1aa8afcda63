//go:build integration

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/testing/rolloutsim"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// fieldsOf returns the whitespace-separated fields of the first line of out whose first field is
// name (a row of a table), or nil.
func fieldsOf(out, name string) []string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	return nil
}

// TestListAddons: `addonops status` without ADDON lists every add-on on the hub, one managed by
// addonops mid-install and one OCM's addon-manager manages (its status written as OCM writes it),
// as a table, wide, JSON and YAML; `addonops status` of the unmanaged one says who manages it and
// how to change that.
func TestListAddons(t *testing.T) {
	s, _ := halfInstalled(t, "listed", "l1", "l2")

	// An add-on OCM's addon-manager rolls out (addonops' controller leaves it alone).
	const unmanaged = "ocm-managed"
	cmas := s.Hub.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns()
	s.Track(unmanaged)
	cma, err := cmas.Create(t.Context(), &addonv1alpha1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: unmanaged, Annotations: map[string]string{
			addonv1alpha1.AddonLifecycleAnnotationKey: addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue}},
		Spec: addonv1alpha1.ClusterManagementAddOnSpec{InstallStrategy: addonv1alpha1.InstallStrategy{
			Type:       addonv1alpha1.AddonInstallStrategyPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{PlacementRef: addonv1alpha1.PlacementRef{Namespace: s.Addon, Name: "all"}, RolloutStrategy: allAtOnce}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cma.Status.InstallProgressions = []addonv1alpha1.InstallProgression{{
		PlacementRef: addonv1alpha1.PlacementRef{Namespace: s.Addon, Name: "all"},
		Conditions: []metav1.Condition{{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonv1alpha1.ProgressingReasonCompleted,
			Message: "selected clusters 2. configured addons 2/2 completed with no errors, 0 failed 0 timeout.", LastTransitionTime: metav1.Now()}},
	}}
	if _, err := cmas.UpdateStatus(t.Context(), cma, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmas.Delete(context.Background(), unmanaged, metav1.DeleteOptions{}) })

	r := status("--kubeconfig", s.Hub.Kubeconfig)
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for name, want := range map[string]string{
		"NAME":    "NAME MANAGED-BY PLACEMENTS CLUSTERS STATE",
		"listed":  "listed addonops 1 1/2 Progressing",
		unmanaged: unmanaged + " addon-manager 1 2/2 Healthy",
	} {
		if got := strings.Join(fieldsOf(r.stdout, name), " "); got != want {
			t.Errorf("row %s: %q, want %q\n%s", name, got, want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "kubectl annotate clustermanagementaddon NAME addon.open-cluster-management.io/lifecycle=self --overwrite, or run addonops-controller with --addons=all") {
		t.Errorf("the list does not say how to hand an add-on to addonops:\n%s", r.stdout)
	}
	if r := status("-o", "wide", "--kubeconfig", s.Hub.Kubeconfig); !strings.HasPrefix(strings.Join(fieldsOf(r.stdout, "listed"), " "), "listed addonops 1 1/2 Progressing Placements listed/all: Installing: installing... 1/2 clusters done") {
		t.Errorf("-o wide:\n%s%s", r.stdout, r.stderr)
	}

	for _, format := range []string{"json", "yaml"} {
		r := status("-o", format, "--kubeconfig", s.Hub.Kubeconfig)
		var l rolloutview.List
		if format == "json" {
			err = json.Unmarshal([]byte(r.stdout), &l)
		} else {
			err = yaml.UnmarshalStrict([]byte(r.stdout), &l)
		}
		if err != nil || r.code != exitOK {
			t.Fatalf("-o %s: exit %d, %v\n%s%s", format, r.code, err, r.stdout, r.stderr)
		}
		got := map[string]rolloutview.AddonSummary{}
		for _, a := range l.Addons {
			got[a.Addon] = a
		}
		if a := got["listed"]; a.ManagedBy != addonstatus.ManagedByAddonops || a.Clusters == nil || *a.Clusters != (rolloutview.ClusterCount{Done: 1, Total: 2}) || a.Health.Health != rolloutview.Progressing || a.Note != "" {
			t.Errorf("-o %s: listed %+v", format, a)
		}
		if a := got[unmanaged]; a.ManagedBy != addonstatus.ManagedByAddonManager || a.Health.Health != rolloutview.Healthy || !strings.Contains(a.Note, "--addons=all") {
			t.Errorf("-o %s: %s %+v", format, unmanaged, a)
		}
	}

	r = status(unmanaged, "--kubeconfig", s.Hub.Kubeconfig)
	for _, want := range []string{"rollout: Succeeded   managed by: addon-manager",
		"note: not managed by addonops", "unless addonops-controller runs with --addons=all (this command cannot see the controller's flags)",
		"kubectl annotate clustermanagementaddon " + unmanaged + " addon.open-cluster-management.io/lifecycle=self --overwrite"} {
		if r.code != exitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("status %s: exit %d, stdout lacks %q:\n%s%s", unmanaged, r.code, want, r.stdout, r.stderr)
		}
	}
}

// TestClustersView: --clusters (and -o wide) on an add-on mid-upgrade lists every cluster with its
// placement, the configs it is told to run and runs (object names), its state and reason, since
// when and when it last completed; -o json carries the same with version ids.
func TestClustersView(t *testing.T) {
	s, v1 := scenario(t, "wide", 0, "w1", "w2", "w3")
	s.CMA(rolloutsim.Install{Placement: "all", Config: v1, Strategy: allAtOnce})
	s.WaitCMA(time.Minute, "install complete", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, _ := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonInstallSucceed
	})
	v2 := s.Config("hello-config", "v2")
	for _, c := range []string{"w1", "w2", "w3"} {
		s.Outcome(c, v2, simagent.Never)
	}
	oneAtATime := clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{MaxConcurrency: intstr.FromInt32(1)}}
	s.CMA(rolloutsim.Install{Placement: "all", Config: v2, Strategy: oneAtATime})
	s.WaitCMA(time.Minute, "upgrade under way", func(cma *addonv1alpha1.ClusterManagementAddOn) bool {
		r, m := rolloutsim.Progressing(cma, "all")
		return r == addonstatus.ReasonUpgrading && strings.Contains(m, "0/3 clusters done, 1 in progress")
	})

	for _, flag := range []string{"--clusters", "-o=wide"} {
		r := status("wide", flag, "--kubeconfig", s.Hub.Kubeconfig)
		if r.code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", flag, r.code, r.stdout, r.stderr)
		}
		if got := strings.Join(fieldsOf(r.stdout, "CLUSTER"), " "); got != "CLUSTER PLACEMENT DESIRED RUNNING STATE REASON SINCE COMPLETED MESSAGE" {
			t.Fatalf("%s: header %q\n%s", flag, got, r.stdout)
		}
		if got := strings.Join(fieldsOf(r.stdout, "wide/all")[:5], " "); !strings.HasPrefix(got, "wide/all Progressing Upgrading ") || !strings.HasSuffix(got, " 0/3") {
			t.Errorf("%s: placement row %q\n%s", flag, got, r.stdout)
		}
		states := map[string]int{}
		for _, c := range []string{"w1", "w2", "w3"} {
			f := fieldsOf(r.stdout, c)
			if len(f) < 8 || f[1] != "wide/all" || f[3] != v1 {
				t.Fatalf("%s: row %s %q, want placement wide/all running %s\n%s", flag, c, f, v1, r.stdout)
			}
			switch state := f[4]; state {
			case rolloutview.StateInProgress:
				// Told to run v2, upgrading since a moment ago, its last completion unknown.
				if f[2] != v2 || f[5] != addonstatus.ReasonUpgrading || f[7] != "-" || !strings.HasSuffix(f[6], "s") {
					t.Errorf("%s: in-progress row %q", flag, f)
				}
				states[state]++
			case rolloutview.StateWaiting:
				// Still told to run v1, waiting for its turn; it completed the install.
				if f[2] != v1 || f[5] != addonstatus.ReasonNotConfigured || f[7] == "-" {
					t.Errorf("%s: waiting row %q", flag, f)
				}
				states[state]++
			default:
				t.Errorf("%s: row %q: state %s", flag, f, state)
			}
		}
		if states[rolloutview.StateInProgress] != 1 || states[rolloutview.StateWaiting] != 2 {
			t.Errorf("%s: states %v, want 1 in progress and 2 waiting\n%s", flag, states, r.stdout)
		}
	}

	r := status("wide", "--clusters", "-o", "json", "--kubeconfig", s.Hub.Kubeconfig)
	var v rolloutview.View
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != exitOK {
		t.Fatalf("-o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	p := v.Placements[0]
	if want := versionOf(t, s, v2); p.DesiredVersion != want || len(p.Clusters) != 3 {
		t.Fatalf("-o json: desired version %s, want %s; %d clusters", p.DesiredVersion, want, len(p.Clusters))
	}
	v1ID := history.VersionID([]history.Config{{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs", Namespace: s.Addon, Name: v1, SpecHash: p.Configs[0].LastApplied.SpecHash}})
	if p.LastAppliedVersion != v1ID {
		t.Errorf("-o json: last applied version %s, want %s", p.LastAppliedVersion, v1ID)
	}
	for _, c := range p.Clusters {
		if c.RunningVersion != v1ID || len(c.Running) != 1 || c.Running[0].String() != "addondeploymentconfigs.addon.open-cluster-management.io wide/"+v1 || c.Since == nil {
			t.Errorf("-o json: cluster %+v, want running %s (%s)", c, v1, v1ID)
		}
	}
}
