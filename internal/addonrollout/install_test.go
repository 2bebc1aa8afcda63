package addonrollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// What one install placement contributes to the decision: its clusters; unknown clusters (their
// MCAs are kept) when it is missing or a decision does not decode; a stop for anything else.
func TestPlacementClusters(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "cluster.open-cluster-management.io", Resource: "placements"}, "p")
	undecodable := &hubcache.DecodeError{GVK: clusterv1beta1.SchemeGroupVersion.WithKind("PlacementDecision"), Namespace: "ns", Name: "p-decision-1", Err: errors.New("bad field")}
	decision := func(clusters ...string) *clusterv1beta1.PlacementDecision {
		d := &clusterv1beta1.PlacementDecision{}
		for _, c := range clusters {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
		}
		return d
	}
	tests := []struct {
		name        string
		getErr      error
		decisions   []*clusterv1beta1.PlacementDecision
		listErr     error
		want        []string
		wantUnknown string
		wantErr     string
	}{
		{name: "the clusters of every decision", decisions: []*clusterv1beta1.PlacementDecision{decision("c1", "c2"), decision("c3")}, want: []string{"c1", "c2", "c3"}},
		{name: "no decision yet: no cluster, not unknown", decisions: nil},
		{name: "decisions selecting nobody", decisions: []*clusterv1beta1.PlacementDecision{decision()}},
		{name: "placement not found: unknown", getErr: notFound, decisions: []*clusterv1beta1.PlacementDecision{decision("c1")}, wantUnknown: "not found"},
		{name: "placement unreadable: stops the decision", getErr: errors.New("cache gone"), wantErr: "reading Placement ns/p: cache gone"},
		{name: "a decision that does not decode: unknown, saying which", listErr: undecodable, wantUnknown: undecodable.Error()},
		{name: "a wrapped decode error too", listErr: fmt.Errorf("listing: %w", undecodable), wantUnknown: undecodable.Error()},
		{name: "decisions unreadable: stops the decision", listErr: errors.New("boom"), wantErr: "listing the PlacementDecisions of ns/p: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, unknown, err := placementClusters("ns/p", tc.getErr, tc.decisions, tc.listErr)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if unknown != tc.wantUnknown || !slices.Equal(got, tc.want) {
				t.Fatalf("placementClusters = %v, %q; want %v, %q", got, unknown, tc.want, tc.wantUnknown)
			}
		})
	}
}

func TestInstallExisting(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	mca := func(ns string, labels map[string]string, deleting bool) *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", Labels: labels}}
		if deleting {
			m.DeletionTimestamp = &now
		}
		return m
	}
	ours := map[string]string{rolloutplan.CreatedByLabel: rolloutplan.CreatedByValue}
	tests := []struct {
		name      string
		cached    []*addonv1alpha1.ManagedClusterAddOn
		notCached []string
		want      []rolloutplan.MCA
	}{
		{name: "none"},
		{name: "ours by the label", cached: []*addonv1alpha1.ManagedClusterAddOn{mca("c1", ours, false)}, want: []rolloutplan.MCA{{Namespace: "c1", Ours: true}}},
		{name: "a user's or GitOps' (no label)", cached: []*addonv1alpha1.ManagedClusterAddOn{mca("c1", nil, false)}, want: []rolloutplan.MCA{{Namespace: "c1"}}},
		{name: "the label with another value is not ours", cached: []*addonv1alpha1.ManagedClusterAddOn{mca("c1", map[string]string{rolloutplan.CreatedByLabel: "someone"}, false)},
			want: []rolloutplan.MCA{{Namespace: "c1"}}},
		{name: "being deleted", cached: []*addonv1alpha1.ManagedClusterAddOn{mca("c1", ours, true)}, want: []rolloutplan.MCA{{Namespace: "c1", Ours: true, Deleting: true}}},
		{name: "created here, not cached yet: ours", cached: []*addonv1alpha1.ManagedClusterAddOn{mca("c1", nil, false)}, notCached: []string{"c2"},
			want: []rolloutplan.MCA{{Namespace: "c1"}, {Namespace: "c2", Ours: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := installExisting(tc.cached, tc.notCached); !slices.Equal(got, tc.want) {
				t.Fatalf("installExisting = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The MCA the install reconciler creates: labelled as its own, owned (as controller) by the CMA so
// deleting the add-on removes it, with the cluster's add-on annotations only.
func TestNewInstalledMCA(t *testing.T) {
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u1"}}
	tests := []struct {
		name        string
		annotations map[string]string
		want        map[string]string
	}{
		{name: "cluster without annotations"},
		{name: "only the add-on annotations are copied", annotations: map[string]string{
			"addon.open-cluster-management.io/hosting-cluster-name": "hub", "open-cluster-management.io/other": "x", "team": "y"},
			want: map[string]string{"addon.open-cluster-management.io/hosting-cluster-name": "hub"}},
		{name: "no add-on annotation among others", annotations: map[string]string{"team": "y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newInstalledMCA(cma, "c1", tc.annotations)
			if m.Name != "a" || m.Namespace != "c1" {
				t.Errorf("MCA %s/%s, want c1/a", m.Namespace, m.Name)
			}
			if m.Labels[rolloutplan.CreatedByLabel] != rolloutplan.CreatedByValue || len(m.Labels) != 1 {
				t.Errorf("labels %v, want only the created-by label", m.Labels)
			}
			if len(m.OwnerReferences) != 1 {
				t.Fatalf("owner references %+v, want one", m.OwnerReferences)
			}
			o := m.OwnerReferences[0]
			if o.Kind != "ClusterManagementAddOn" || o.APIVersion != addonv1alpha1.GroupVersion.String() || o.Name != "a" || o.UID != "u1" ||
				o.Controller == nil || !*o.Controller || o.BlockOwnerDeletion == nil || !*o.BlockOwnerDeletion {
				t.Errorf("owner %+v, want the CMA as controller", o)
			}
			if !equality.Semantic.DeepEqual(m.Annotations, tc.want) {
				t.Errorf("annotations %v, want %v", m.Annotations, tc.want)
			}
		})
	}
}

func TestMCAInstallChanged(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	base := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "a", Labels: map[string]string{"x": "1"}}}
	with := func(f func(m *addonv1alpha1.ManagedClusterAddOn)) *addonv1alpha1.ManagedClusterAddOn {
		m := base.DeepCopy()
		f(m)
		return m
	}
	tests := []struct {
		name string
		cur  *addonv1alpha1.ManagedClusterAddOn
		want bool
	}{
		{name: "status only", cur: with(func(m *addonv1alpha1.ManagedClusterAddOn) { m.Status.Namespace = "agents"; m.ResourceVersion = "9" })},
		{name: "spec only", cur: with(func(m *addonv1alpha1.ManagedClusterAddOn) { m.Spec.InstallNamespace = "other" })},
		{name: "deletion started", cur: with(func(m *addonv1alpha1.ManagedClusterAddOn) { m.DeletionTimestamp = &now }), want: true},
		{name: "a label changed", cur: with(func(m *addonv1alpha1.ManagedClusterAddOn) { m.Labels["x"] = "2" }), want: true},
		{name: "labels removed", cur: with(func(m *addonv1alpha1.ManagedClusterAddOn) { m.Labels = nil }), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcaInstallChanged(base, tc.cur); got != tc.want {
				t.Fatalf("mcaInstallChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClusterInstallChanged(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	base := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Annotations: map[string]string{"addon.open-cluster-management.io/x": "1"}}}
	with := func(f func(c *clusterv1.ManagedCluster)) *clusterv1.ManagedCluster {
		c := base.DeepCopy()
		f(c)
		return c
	}
	tests := []struct {
		name string
		cur  *clusterv1.ManagedCluster
		want bool
	}{
		{name: "a lease renewal (status only)", cur: with(func(c *clusterv1.ManagedCluster) { c.Status.Version.Kubernetes = "v1.35"; c.ResourceVersion = "9" })},
		{name: "labels only", cur: with(func(c *clusterv1.ManagedCluster) { c.Labels = map[string]string{"env": "prod"} })},
		{name: "deletion started", cur: with(func(c *clusterv1.ManagedCluster) { c.DeletionTimestamp = &now }), want: true},
		{name: "an annotation changed", cur: with(func(c *clusterv1.ManagedCluster) { c.Annotations["addon.open-cluster-management.io/x"] = "2" }), want: true},
		{name: "an annotation added", cur: with(func(c *clusterv1.ManagedCluster) { c.Annotations["y"] = "1" }), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := clusterInstallChanged(base, tc.cur); got != tc.want {
				t.Fatalf("clusterInstallChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

// countErrs counts the failed writes in what View.Parallel returns (one joined error per item).
func TestCountErrs(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "none", want: 0},
		{name: "one plain error", err: errors.New("x"), want: 1},
		{name: "one joined", err: errors.Join(errors.New("c1: x")), want: 1},
		{name: "three joined", err: errors.Join(errors.New("c1: x"), errors.New("c2: y"), errors.New("c3: z")), want: 3},
		{name: "a wrapped single error", err: fmt.Errorf("w: %w", errors.New("x")), want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := countErrs(tc.err); got != tc.want {
				t.Fatalf("countErrs(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestClusterAddonAnnotations(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{name: "none"},
		{name: "add-on ones kept", in: map[string]string{"addon.open-cluster-management.io/hosting-cluster-name": "h", "addon.open-cluster-management.io/x": "1"},
			want: map[string]string{"addon.open-cluster-management.io/hosting-cluster-name": "h", "addon.open-cluster-management.io/x": "1"}},
		{name: "others dropped, none left: nil", in: map[string]string{"cluster.open-cluster-management.io/x": "1", "a": "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := clusterAddonAnnotations(tc.in)
			if !equality.Semantic.DeepEqual(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Fatalf("clusterAddonAnnotations = %v, want %v", got, tc.want)
			}
			for k := range got {
				if !strings.HasPrefix(k, "addon.open-cluster-management.io") {
					t.Errorf("copied %s", k)
				}
			}
		})
	}
}
