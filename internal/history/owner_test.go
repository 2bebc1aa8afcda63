package history

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestCheckOwner(t *testing.T) {
	owner := func(apiVersion, kind, name, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("u-" + uid)}
	}
	const v1alpha1 = "addon.open-cluster-management.io/v1alpha1"
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		want string // "" : accepted; else a substring of the error
	}{
		{name: "the controller's record", refs: []metav1.OwnerReference{owner(v1alpha1, "ClusterManagementAddOn", "hello", "1")}},
		{name: "another API version of the group", refs: []metav1.OwnerReference{owner("addon.open-cluster-management.io/v1beta1", "ClusterManagementAddOn", "hello", "1")}},
		{name: "among other owners", refs: []metav1.OwnerReference{owner("v1", "Namespace", "x", "9"), owner(v1alpha1, "ClusterManagementAddOn", "hello", "1")}},
		{name: "no owner", want: "it has no ownerReference to ClusterManagementAddOn hello (UID u-1)"},
		{name: "a deleted add-on's record", refs: []metav1.OwnerReference{owner(v1alpha1, "ClusterManagementAddOn", "hello", "0")},
			want: "its ownerReference names ClusterManagementAddOn hello with UID [u-0], not the add-on's u-1"},
		{name: "another add-on", refs: []metav1.OwnerReference{owner(v1alpha1, "ClusterManagementAddOn", "other", "1")}, want: "no ownerReference"},
		{name: "another kind", refs: []metav1.OwnerReference{owner(v1alpha1, "ManagedClusterAddOn", "hello", "1")}, want: "no ownerReference"},
		{name: "another group", refs: []metav1.OwnerReference{owner("example.com/v1", "ClusterManagementAddOn", "hello", "1")}, want: "no ownerReference"},
		{name: "an unparsable API version", refs: []metav1.OwnerReference{owner("a/b/c", "ClusterManagementAddOn", "hello", "1")}, want: "no ownerReference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOwner(tc.refs, "hello", "u-1")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
