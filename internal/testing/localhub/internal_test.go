package localhub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

func TestPlacementDecisionsLayout(t *testing.T) {
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid-1"}}
	many := make([]string, 0, 250)
	for i := 250; i >= 1; i-- { // reverse order: the layout sorts
		many = append(many, fmt.Sprintf("c%03d", i))
	}
	type decision struct {
		name, index, group string
		first, last        string
		count              int
	}
	cases := []struct {
		name       string
		groups     []DecisionGroup
		want       []decision
		wantGroups string
	}{{
		name:       "no group: one empty decision, as OCM writes when nothing is selected",
		want:       []decision{{name: "p-decision-1", index: "0"}},
		wantGroups: "[{0  [p-decision-1] 0}]",
	}, {
		name:       "250 clusters: objects of at most 100, sorted by name",
		groups:     []DecisionGroup{{Clusters: many}},
		want:       []decision{{"p-decision-1", "0", "", "c001", "c100", 100}, {"p-decision-2", "0", "", "c101", "c200", 100}, {"p-decision-3", "0", "", "c201", "c250", 50}},
		wantGroups: "[{0  [p-decision-1 p-decision-2 p-decision-3] 250}]",
	}, {
		name:       "named groups: index labels follow the order, names continue across groups",
		groups:     []DecisionGroup{{Name: "canary", Clusters: []string{"b", "a"}}, {Name: "rest", Clusters: []string{"c"}}, {Name: "empty"}},
		want:       []decision{{"p-decision-1", "0", "canary", "a", "b", 2}, {"p-decision-2", "1", "rest", "c", "c", 1}, {name: "p-decision-3", index: "2", group: "empty"}},
		wantGroups: "[{0 canary [p-decision-1] 2} {1 rest [p-decision-2] 1} {2 empty [p-decision-3] 0}]",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, groups, err := placementDecisions(p, tc.groups)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d decisions, want %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				d := got[i]
				ds := d.Status.Decisions
				if d.Name != w.name || d.Namespace != "ns" ||
					d.Labels[clusterv1beta1.PlacementLabel] != "p" ||
					d.Labels[clusterv1beta1.DecisionGroupIndexLabel] != w.index ||
					d.Labels[clusterv1beta1.DecisionGroupNameLabel] != w.group || len(ds) != w.count {
					t.Errorf("decision %d = %s labels %v with %d clusters, want %+v", i, d.Name, d.Labels, len(ds), w)
					continue
				}
				if w.count > 0 && (ds[0].ClusterName != w.first || ds[len(ds)-1].ClusterName != w.last) {
					t.Errorf("decision %s holds %s..%s, want %s..%s", d.Name, ds[0].ClusterName, ds[len(ds)-1].ClusterName, w.first, w.last)
				}
				if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != "uid-1" || d.OwnerReferences[0].Kind != "Placement" {
					t.Errorf("decision %s owners = %+v, want the Placement", d.Name, d.OwnerReferences)
				}
			}
			if fmt.Sprint(groups) != tc.wantGroups {
				t.Errorf("decision group status = %v, want %s", groups, tc.wantGroups)
			}
		})
	}
}

func TestPlacementDecisionsRejectsBadGroups(t *testing.T) {
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, tc := range []struct {
		groups []DecisionGroup
		want   string
	}{
		{[]DecisionGroup{{Name: "a", Clusters: []string{"c1"}}, {Name: "b", Clusters: []string{"c1"}}}, "cluster c1 is in decision groups 0 and 1"},
		{[]DecisionGroup{{Name: "a", Clusters: []string{""}}}, "decision group 0 (\"a\") has an empty cluster name"},
	} {
		_, _, err := placementDecisions(p, tc.groups)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("placementDecisions(%+v) error = %v, want %q", tc.groups, err, tc.want)
		}
	}
}

// TestCRDFilesFromTheAPIModule checks what the hub installs, found through `go list -m` as in
// normal use.
func TestCRDFilesFromTheAPIModule(t *testing.T) {
	t.Setenv("ADDONOPS_OCM_CRDS", "")
	files, err := findCRDFiles(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(requiredCRDs) {
		var names []string
		for _, f := range files {
			names = append(names, f.name)
		}
		t.Errorf("found CRDs %v, want exactly the %d required ones", names, len(requiredCRDs))
	}
	for _, f := range files {
		if !strings.Contains(f.path, "open-cluster-management.io/api@v1.3.0/") {
			t.Errorf("CRD %s read from %s, want the api module v1.3.0 go.mod pins", f.name, f.path)
		}
		if f.name == "clustermanagementaddons.addon.open-cluster-management.io" {
			for _, v := range f.crd.Spec.Versions {
				if v.Name != "v1alpha1" {
					t.Errorf("CMA CRD serves %s: only v1alpha1 works without OCM's conversion webhook", v.Name)
				}
			}
		}
	}
}

func TestCRDRootErrors(t *testing.T) {
	empty := t.TempDir()
	_, err := findCRDFiles(context.Background(), Options{CRDRoot: empty})
	if err == nil || !strings.Contains(err.Error(), "no *.crd.yaml in "+filepath.Join(empty, "addon/v1alpha1")) ||
		!strings.Contains(err.Error(), "ADDONOPS_OCM_CRDS") {
		t.Errorf("empty CRD root: err = %v, want one naming the folder and $ADDONOPS_OCM_CRDS", err)
	}

	// A module copy that lacks a kind: the missing CRD is named.
	root := t.TempDir()
	for _, dir := range crdDirs {
		src, _ := filepath.Glob(filepath.Join(apiModuleDir(t), dir, "*.crd.yaml"))
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, s := range src {
			if strings.Contains(s, "addontemplates") {
				continue
			}
			data, err := os.ReadFile(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, dir, filepath.Base(s)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err = findCRDFiles(context.Background(), Options{CRDRoot: root})
	if err == nil || !strings.Contains(err.Error(), "addontemplates.addon.open-cluster-management.io not found") {
		t.Errorf("CRD root without AddOnTemplate: err = %v, want it named", err)
	}
}

func apiModuleDir(t *testing.T) string {
	t.Helper()
	dir, err := crdRoot(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
