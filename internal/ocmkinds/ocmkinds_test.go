package ocmkinds

import (
	"os"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

func group(name string, versions ...string) *metav1.APIGroup {
	g := &metav1.APIGroup{Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	return g
}

func resources(gv string, names ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, n := range names {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
	}
	return l
}

func TestMissing(t *testing.T) {
	fullGroups := []*metav1.APIGroup{group(addonGroup, "v1alpha1"), group(clusterGroup, "v1", "v1beta1"), group(workGroup, "v1")}
	full := []*metav1.APIResourceList{
		resources(addonGroup+"/v1alpha1", "clustermanagementaddons", "managedclusteraddons", "managedclusteraddons/status", "addondeploymentconfigs", "addontemplates"),
		resources(clusterGroup+"/v1", "managedclusters"),
		resources(clusterGroup+"/v1beta1", "placements", "placementdecisions"),
		resources(workGroup+"/v1", "manifestworks"),
	}
	for _, tc := range []struct {
		name      string
		required  []Kind
		groups    []*metav1.APIGroup
		resources []*metav1.APIResourceList
		want      []Gap
	}{
		{name: "OCM hub", required: Controller(true), groups: fullGroups, resources: full},
		{name: "plain Kubernetes", required: Controller(false),
			groups:    []*metav1.APIGroup{group("apps", "v1")},
			resources: []*metav1.APIResourceList{resources("apps/v1", "deployments")},
			want: []Gap{{Kind: ClusterManagementAddOn}, {Kind: ManagedClusterAddOn}, {Kind: ManagedCluster},
				{Kind: Placement}, {Kind: PlacementDecision}, {Kind: ManifestWork}}},
		{name: "no work API", required: Controller(false), groups: fullGroups[:2], resources: full[:3],
			want: []Gap{{Kind: ManifestWork}}},
		{name: "templates only needed with --deploy-templates", required: Controller(false), groups: fullGroups,
			resources: append([]*metav1.APIResourceList{resources(addonGroup+"/v1alpha1", "clustermanagementaddons", "managedclusteraddons")}, full[1:]...)},
		{name: "--deploy-templates without AddOnTemplate", required: Controller(true), groups: fullGroups,
			resources: append([]*metav1.APIResourceList{resources(addonGroup+"/v1alpha1", "clustermanagementaddons", "managedclusteraddons", "addondeploymentconfigs")}, full[1:]...),
			want:      []Gap{{Kind: AddOnTemplate}}},
		{name: "only a newer version of the add-on API", required: Status,
			groups:    []*metav1.APIGroup{group(addonGroup, "v1beta1"), fullGroups[1]},
			resources: []*metav1.APIResourceList{resources(addonGroup+"/v1beta1", "clustermanagementaddons", "managedclusteraddons"), full[2]},
			want: []Gap{{Kind: ClusterManagementAddOn, GroupVersions: []string{"v1beta1"}},
				{Kind: ManagedClusterAddOn, GroupVersions: []string{"v1beta1"}}}},
		{name: "a subresource is not the resource", required: Day2,
			groups:    []*metav1.APIGroup{group(addonGroup, "v1alpha1")},
			resources: []*metav1.APIResourceList{resources(addonGroup+"/v1alpha1", "clustermanagementaddons/status")},
			want:      []Gap{{Kind: ClusterManagementAddOn}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Missing(tc.required, tc.groups, tc.resources)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Missing:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMissingErrorMessage(t *testing.T) {
	err := &MissingError{Host: "https://hub:6443", Gaps: []Gap{{Kind: ClusterManagementAddOn}, {Kind: ManifestWork},
		{Kind: Placement, GroupVersions: []string{"v1beta2"}}}}
	for _, want := range []string{
		"the hub https://hub:6443 is not an Open Cluster Management hub addonops can use",
		"it does not serve ClusterManagementAddOn (addon.open-cluster-management.io/v1alpha1), ManifestWork (work.open-cluster-management.io/v1)",
		"Placement (cluster.open-cluster-management.io/v1beta1) (served only as v1beta2)",
		"`clusteradm init`", "open-cluster-management.io/api v1.3.0", "kubectl apply -f",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
	if got := err.Kinds(); !reflect.DeepEqual(got, []string{"ClusterManagementAddOn", "ManifestWork", "Placement"}) {
		t.Errorf("Kinds() = %v", got)
	}
}
