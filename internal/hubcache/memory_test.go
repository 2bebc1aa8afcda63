package hubcache

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/dynamic"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/statuswrite"
	"github.com/addonops/addonops/internal/testing/harness"
	"github.com/addonops/addonops/internal/testing/localhub"
)

func newTestCache() *Cache {
	return &Cache{undecodable: undecodable{byKey: map[string]map[string]*DecodeError{}, told: map[string]string{}}}
}

func fromJSON(t *testing.T, k decodedKind, doc string) *unstructured.Unstructured {
	t.Helper()
	// As the dynamic client decodes the API server's JSON: integers as int64.
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetGroupVersionKind(k.gvk)
	return u
}

// mcaJSON is an MCA with every part of a status the writers share: its fields must survive the
// cache unchanged, since status writes send the cached status back whole.
func mcaJSON(ns string) string {
	return `{"metadata": {"name": "hello", "namespace": "` + ns + `", "uid": "u-` + ns + `", "resourceVersion": "12",
  "labels": {"addonops.io/created-by": "addonops-controller"}, "annotations": {"a": "b"}, "finalizers": ["f"],
  "ownerReferences": [{"apiVersion": "addon.open-cluster-management.io/v1alpha1", "kind": "ClusterManagementAddOn", "name": "hello", "uid": "cma-uid", "controller": true}]},
 "spec": {"installNamespace": "open-cluster-management-agent-addon", "configs": [{"group": "g", "resource": "r", "name": "n"}]},
 "status": {
  "conditions": [{"type": "Progressing", "status": "False", "reason": "UpgradeSucceed", "message": "upgrade completed with no errors.", "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": 3},
    {"type": "Configured", "status": "True", "reason": "ConfigurationsConfigured", "message": "Configurations configured", "lastTransitionTime": "2026-01-02T03:04:05Z"},
    {"type": "ManifestApplied", "status": "True", "reason": "AddonManifestApplied", "message": "manifests of addon are applied successfully", "lastTransitionTime": "2026-01-02T03:04:05Z"}],
  "configReferences": [{"group": "addon.open-cluster-management.io", "resource": "addondeploymentconfigs", "name": "cfg", "namespace": "ns",
    "desiredConfig": {"name": "cfg", "namespace": "ns", "specHash": "abc"}, "lastAppliedConfig": {"name": "cfg", "namespace": "ns", "specHash": "abc"}, "lastObservedGeneration": 2}],
  "relatedObjects": [{"group": "g", "resource": "r", "name": "o"}],
  "supportedConfigs": [{"group": "g", "resource": "r"}],
  "registrations": [{"signerName": "kubernetes.io/kube-apiserver-client", "subject": {"user": "u", "groups": ["a", "b"]}}],
  "namespace": "agent-ns", "healthCheck": {"mode": "Customized"}}}`
}

// Interning changes where a decoded object's strings live, never their values; and objects decoded
// one after the other share them.
func TestInternKeepsValues(t *testing.T) {
	c := newTestCache()
	transform := c.decode(kindMCA, nil, nil)
	var decoded []*addonv1alpha1.ManagedClusterAddOn
	for _, ns := range []string{"cluster-1", "cluster-2"} {
		u := fromJSON(t, kindMCA, mcaJSON(ns))
		want := &addonv1alpha1.ManagedClusterAddOn{}
		if err := Decode(u.DeepCopy(), want); err != nil {
			t.Fatal(err)
		}
		obj, err := transform(u)
		if err != nil {
			t.Fatal(err)
		}
		got := obj.(*addonv1alpha1.ManagedClusterAddOn)
		if c.DecodeError(got) != nil {
			t.Fatalf("%s does not decode: %v", ns, c.DecodeError(got))
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("interned MCA differs from the decoded one:\n got %+v\nwant %+v", got, want)
		}
		decoded = append(decoded, got)
	}
	a, b := decoded[0], decoded[1]
	for what, pair := range map[string][2]string{
		"condition message": {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
		"spec hash":         {a.Status.ConfigReferences[0].DesiredConfig.SpecHash, b.Status.ConfigReferences[0].DesiredConfig.SpecHash},
		"owner uid":         {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		"label value":       {a.Labels["addonops.io/created-by"], b.Labels["addonops.io/created-by"]},
		"registration user": {a.Status.Registrations[0].Subject.User, b.Status.Registrations[0].Subject.User},
	} {
		if unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%s: not shared between the two MCAs", what)
		}
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() ||
		reflect.ValueOf(a.Annotations).UnsafePointer() != reflect.ValueOf(b.Annotations).UnsafePointer() {
		t.Errorf("equal labels or annotations are not one shared map")
	}
	if unsafe.SliceData(a.Status.ConfigReferences) != unsafe.SliceData(b.Status.ConfigReferences) {
		t.Errorf("equal configReferences are not one shared slice")
	}
	if unsafe.SliceData(a.Status.Conditions) == unsafe.SliceData(b.Status.Conditions) {
		t.Errorf("conditions are shared")
	}
	if n := len(a.Status.Conditions); cap(a.Status.Conditions) != n || n != 3 {
		t.Errorf("%d conditions held in room for %d", n, cap(a.Status.Conditions))
	}
	if unsafe.StringData(string(a.UID)) == unsafe.StringData(string(b.UID)) || c.interned.strings[string(a.UID)] != "" {
		t.Errorf("the uid was interned")
	}
}

// Maps of strings are shared by content only: a map that differs in one key or value, or has one
// entry more, is its own; and a named map type (a label selector's matchLabels) is shared too.
func TestInternSlices(t *testing.T) {
	var in interner
	ref := func(desired, applied string) addonv1alpha1.ConfigReference {
		r := addonv1alpha1.ConfigReference{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addontemplates"},
			DesiredConfig: &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: desired}, SpecHash: desired + "-hash"}}
		if applied != "" {
			r.LastAppliedConfig = &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: applied}, SpecHash: applied + "-hash"}
		}
		return r
	}
	status := func(refs ...addonv1alpha1.ConfigReference) *addonv1alpha1.ManagedClusterAddOnStatus {
		st := &addonv1alpha1.ManagedClusterAddOnStatus{ConfigReferences: refs}
		in.object(st)
		return st
	}
	base := status(ref("v2", "v1"))
	if got := status(ref("v2", "v1")); unsafe.SliceData(got.ConfigReferences) != unsafe.SliceData(base.ConfigReferences) {
		t.Errorf("an equal slice is not the shared one")
	}
	for what, refs := range map[string][]addonv1alpha1.ConfigReference{
		"another applied config": {ref("v2", "v2")},
		"none applied":           {ref("v2", "")},
		"one more":               {ref("v2", "v1"), ref("v3", "")},
		"generation": {func() addonv1alpha1.ConfigReference {
			r := ref("v2", "v1")
			r.LastObservedGeneration = 2
			return r
		}()},
	} {
		want := slices.Clone(refs)
		got := status(refs...)
		if !reflect.DeepEqual(got.ConfigReferences, want) {
			t.Errorf("%s: %+v, want %+v", what, got.ConfigReferences, want)
		}
		if unsafe.SliceData(got.ConfigReferences) == unsafe.SliceData(base.ConfigReferences) {
			t.Errorf("%s: shares the slice of another value", what)
		}
	}
	if st := status(); st.ConfigReferences != nil {
		t.Errorf("an empty slice became %v", st.ConfigReferences)
	}
}

func TestInternMaps(t *testing.T) {
	var in interner
	base := in.stringMap(map[string]string{"a": "1", "b": "2"})
	if got := in.stringMap(map[string]string{"b": "2", "a": "1"}); reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(base).UnsafePointer() {
		t.Errorf("an equal map is not the shared one")
	}
	for _, m := range []map[string]string{{"a": "1", "b": "3"}, {"a": "1", "c": "2"}, {"a": "1", "b": "2", "c": "3"}, {"a": "1"}, {"a\x00b": "2", "": "1"}} {
		got := in.stringMap(m)
		if !maps.Equal(got, m) {
			t.Errorf("stringMap(%v) = %v", m, got)
		}
		if reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(base).UnsafePointer() {
			t.Errorf("%v shares %v", m, base)
		}
	}
	type selector struct{ MatchLabels map[string]string }
	s1, s2 := &selector{map[string]string{"a": "1", "b": "2"}}, &selector{map[string]string{"a": "1", "b": "2"}}
	in.object(s1)
	in.object(s2)
	if reflect.ValueOf(s1.MatchLabels).UnsafePointer() != reflect.ValueOf(base).UnsafePointer() || reflect.ValueOf(s2.MatchLabels).UnsafePointer() != reflect.ValueOf(base).UnsafePointer() {
		t.Errorf("maps inside objects are not shared")
	}
}

// The table starts again when full: strings no object uses any more do not stay forever.
func TestInternLimit(t *testing.T) {
	var in interner
	for i := range internLimit + 10 {
		in.str(fmt.Sprintf("s%d", i))
	}
	if n := len(in.strings); n != 10 {
		t.Errorf("table holds %d strings after starting again, want 10", n)
	}
}

// A ManagedCluster is cached with what the reconcilers read (metadata, and as the health prober
// its Available condition) and without its CA bundles, claims, resources and other conditions.
func TestStripCluster(t *testing.T) {
	const raw = `{"metadata": {"name": "c1", "annotations": {"open-cluster-management.io/image-registries": "{}"}},
 "spec": {"hubAcceptsClient": true, "leaseDurationSeconds": 60, "managedClusterClientConfigs": [{"url": "https://x", "caBundle": "Y2E="}], "taints": [{"key": "k", "effect": "NoSelect"}]},
 "status": {"conditions": [{"type": "HubAcceptedManagedCluster", "status": "True", "reason": "Accepted", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"},
   {"type": "ManagedClusterConditionAvailable", "status": "Unknown", "reason": "Lost", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"},
   {"type": "ManagedClusterJoined", "status": "True", "reason": "Joined", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"}],
  "capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}, "version": {"kubernetes": "v1.30.0"}, "clusterClaims": [{"name": "id.k8s.io", "value": "x"}]}}`
	for _, tc := range []struct {
		name  string
		strip func(*unstructured.Unstructured)
		// available: the Available condition is kept (the health prober reads it)
		available bool
	}{
		{"health prober", stripCluster, true},
		{"no health prober", stripClusterStatus, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCache()
			obj, err := c.decode(kindCluster, tc.strip, nil)(fromJSON(t, kindCluster, raw))
			if err != nil {
				t.Fatal(err)
			}
			mc := obj.(*clusterv1.ManagedCluster)
			if mc.Annotations["open-cluster-management.io/image-registries"] != "{}" || !mc.Spec.HubAcceptsClient || mc.Spec.LeaseDurationSeconds != 60 {
				t.Errorf("what the reconcilers read is lost: %+v", mc)
			}
			avail := meta.FindStatusCondition(mc.Status.Conditions, "ManagedClusterConditionAvailable")
			if (avail != nil) != tc.available || (avail != nil && (avail.Status != metav1.ConditionUnknown || avail.Reason != "Lost")) {
				t.Errorf("Available condition %+v, want kept: %v", avail, tc.available)
			}
			if want := map[bool]int{true: 1, false: 0}[tc.available]; len(mc.Status.Conditions) != want {
				t.Errorf("kept %d conditions, want %d: %+v", len(mc.Status.Conditions), want, mc.Status.Conditions)
			}
			if len(mc.Spec.ManagedClusterClientConfigs) != 0 || len(mc.Spec.Taints) != 0 || len(mc.Status.Capacity) != 0 || len(mc.Status.Allocatable) != 0 ||
				mc.Status.Version.Kubernetes != "" || len(mc.Status.ClusterClaims) != 0 {
				t.Errorf("kept what no reconciler reads: %+v", mc)
			}
		})
	}
}

// On a real API server: the cache lists page by page, each page decoded as it arrives (an object
// that does not decode among them), and a status write from the cached (interned) MCA leaves every
// other status field and the API server's managedFields as they were.
func TestListPagesAndWriteBack(t *testing.T) {
	hub := localhub.ForTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "memory-pages"
	if err := localhub.EnsureNamespace(ctx, hub.Clients.Kube, ns); err != nil {
		t.Fatal(err)
	}
	clusters := hub.Clients.Dynamic.Resource(kindCluster.gvr)
	for i := range 5 {
		spec := map[string]any{"hubAcceptsClient": true}
		if i == 3 {
			spec["leaseDurationSeconds"] = int64(1) << 40
		}
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", ns, i), "labels": map[string]any{"test": ns}}, "spec": spec}}
		u.SetGroupVersionKind(kindCluster.gvk)
		if _, err := clusters.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = clusters.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{}) })
	}

	// The reflector's first list: resourceVersion "0", which the watch cache would answer in one piece.
	c := newTestCache()
	transform := c.decode(kindCluster, stripCluster, nil)
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 2, LabelSelector: "test=" + ns}
	var names []string
	var lastRV string
	for pages := 1; ; pages++ {
		list, err := decodedList(ctx, clusters, opts, transform)
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) > 2 {
			t.Fatalf("page %d has %d objects, want at most 2: the list was not paged", pages, len(items))
		}
		for _, o := range items {
			mc, ok := o.(*clusterv1.ManagedCluster)
			if !ok {
				t.Fatalf("page %d holds a %T, want a decoded ManagedCluster", pages, o)
			}
			names = append(names, mc.Name)
			if undecodable := c.DecodeError(mc) != nil; undecodable != strings.HasSuffix(mc.Name, "-3") {
				t.Errorf("%s: decode error %v", mc.Name, c.DecodeError(mc))
			}
		}
		lm, _ := meta.ListAccessor(list)
		lastRV = lm.GetResourceVersion()
		if lm.GetContinue() == "" {
			if pages < 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			break
		}
		opts.Continue = lm.GetContinue()
		opts.ResourceVersion = ""
	}
	if len(names) != 5 {
		t.Errorf("listed %v, want 5 clusters", names)
	}

	// A relist after a failed watch: the resourceVersion last seen and no page size, which the API
	// server would answer in one piece. It is asked for page by page and the pages are joined.
	defer func(size int64) { listPageSize = size }(listPageSize)
	listPageSize = 2
	counted := &countingLists{NamespaceableResourceInterface: clusters}
	list, err := decodedList(ctx, counted, metav1.ListOptions{ResourceVersion: lastRV, LabelSelector: "test=" + ns}, transform)
	if err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 5 || len(counted.calls) != 3 {
		t.Errorf("relist: %d objects in %d requests, want 5 in 3", len(items), len(counted.calls))
	}
	for i, o := range counted.calls {
		if o.Limit != 2 || i == 0 && (o.ResourceVersion != "" || o.Continue != "") || i > 0 && o.Continue == "" {
			t.Errorf("relist request %d: %+v, want pages of 2 of the latest version", i, o)
		}
	}
	if lm, _ := meta.ListAccessor(list); lm.GetContinue() != "" || lm.GetResourceVersion() == "" {
		t.Errorf("joined list: continue %q, resourceVersion %q", lm.GetContinue(), lm.GetResourceVersion())
	}
	for _, o := range items {
		if mc := o.(*clusterv1.ManagedCluster); (c.DecodeError(mc) != nil) != strings.HasSuffix(mc.Name, "-3") {
			t.Errorf("relist: %s: decode error %v", mc.Name, c.DecodeError(mc))
		}
	}

	// The write-back: through the cache as the controller runs it.
	mcas := hub.Clients.Addon.AddonV1alpha1().ManagedClusterAddOns(ns)
	created, err := mcas.Create(ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full := &addonv1alpha1.ManagedClusterAddOn{}
	if err := Decode(fromJSON(t, kindMCA, mcaJSON(ns)), full); err != nil {
		t.Fatal(err)
	}
	created.Status = full.Status
	withStatus, err := mcas.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "another-writer"})
	if err != nil {
		t.Fatal(err)
	}
	cache, err := New(hub.Config, Options{Addons: AddonsAll})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cache.Run(ctx) }()
	var cached *addonv1alpha1.ManagedClusterAddOn
	harness.EventuallyTrue(t, 30*time.Second, "the cache to show the MCA", func() bool {
		cached, _ = cache.MCAs.ManagedClusterAddOns(ns).Get("hello")
		return cached != nil && cached.ResourceVersion == withStatus.ResourceVersion
	}, harness.Every(20*time.Millisecond))
	if len(cached.ManagedFields) != 0 {
		t.Errorf("the cache holds managedFields")
	}
	written, err := statuswrite.Status(ctx, hub.Clients.Addon, cached, func(m *addonv1alpha1.ManagedClusterAddOn) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "R", Message: "m"})
	})
	if err != nil || written == nil {
		t.Fatalf("writing the status: %v", err)
	}
	live, err := mcas.Get(ctx, "hello", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := full.Status.DeepCopy()
	meta.SetStatusCondition(&want.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "R", Message: "m"})
	if got := meta.FindStatusCondition(live.Status.Conditions, "Available"); got != nil { // the writer's clock
		meta.FindStatusCondition(want.Conditions, "Available").LastTransitionTime = got.LastTransitionTime
	}
	if !equality.Semantic.DeepEqual(live.Status, *want) {
		t.Errorf("the status write changed other fields:\n got %+v\nwant %+v", live.Status, *want)
	}
	managers := map[string]bool{}
	for _, f := range live.ManagedFields {
		managers[f.Manager] = true
	}
	if !managers["another-writer"] {
		t.Errorf("the API server's managedFields lost the other writer's entry: %v", managers)
	}

	// What the controller's writer keeps of a write (until the cache shows it) shares the cache's
	// strings and has no managedFields. The cache is behind (it shows the version before the write
	// above): the writer's first attempt conflicts and is applied again to the live object.
	kept, err := cache.MCAWriter.Status(ctx, cached, func(m *addonv1alpha1.ManagedClusterAddOn) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "R2", Message: "m2"})
	})
	if err != nil || kept == nil {
		t.Fatalf("writing through the cache's writer: %v", err)
	}
	if len(kept.ManagedFields) != 0 {
		t.Errorf("the writer keeps managedFields")
	}
	keptCond, cachedCond := meta.FindStatusCondition(kept.Status.Conditions, "Configured"), meta.FindStatusCondition(cached.Status.Conditions, "Configured")
	if keptCond == nil || cachedCond == nil || keptCond.Message != cachedCond.Message {
		t.Fatalf("Configured: kept %+v, cached %+v", keptCond, cachedCond)
	}
	if unsafe.StringData(keptCond.Message) != unsafe.StringData(cachedCond.Message) {
		t.Errorf("the kept write does not share the cache's strings")
	}
}

// The add-on RoleBindings (one per cluster and add-on under --deploy-templates) are cached without
// managedFields and share their strings and labels, as the decoded kinds do.
func TestRoleBindingsShare(t *testing.T) {
	c := newTestCache()
	var rbs []*rbacv1.RoleBinding
	for _, ns := range []string{"cluster-1", "cluster-2"} {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:hello:agent", Namespace: ns,
				Labels:        map[string]string{addonv1alpha1.AddonLabelKey: "hello"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: strings.Clone("hello-agent")},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:open-cluster-management:cluster:" + ns + ":addon:hello"}},
		}
		obj, err := c.stripAndIntern(rb)
		if err != nil {
			t.Fatal(err)
		}
		rbs = append(rbs, obj.(*rbacv1.RoleBinding))
	}
	a, b := rbs[0], rbs[1]
	if len(a.ManagedFields) != 0 {
		t.Errorf("managedFields kept")
	}
	if unsafe.StringData(a.RoleRef.Name) != unsafe.StringData(b.RoleRef.Name) ||
		reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Errorf("the role name or the labels are not shared")
	}
	if a.Subjects[0].Name == b.Subjects[0].Name || a.Namespace != "cluster-1" {
		t.Errorf("values changed: %+v %+v", a, b)
	}
}

// countingLists records the list requests made through a real client.
type countingLists struct {
	dynamic.NamespaceableResourceInterface
	calls []metav1.ListOptions
}

func (c *countingLists) List(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	c.calls = append(c.calls, o)
	return c.NamespaceableResourceInterface.List(ctx, o)
}

// Under --deploy-templates a ManifestWork keeps its manifests, its conditions and, of each
// manifest's status, its identity and status feedback (the deployer and the health prober read
// them), not the manifest's conditions.
func TestStripWorkResourceConditions(t *testing.T) {
	const raw = `{"metadata": {"name": "addon-hello-deploy-0", "namespace": "c1", "labels": {"open-cluster-management.io/addon-name": "hello"}},
 "spec": {"workload": {"manifests": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "ns"}}]}},
 "status": {"conditions": [{"type": "Available", "status": "True", "reason": "ResourcesAvailable", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z", "observedGeneration": 2}],
  "resourceStatus": {"manifests": [{"resourceMeta": {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment", "resource": "deployments", "name": "a", "namespace": "ns"},
   "statusFeedback": {"values": [{"name": "ReadyReplicas", "fieldValue": {"type": "Integer", "integer": 1}}]},
   "conditions": [{"type": "Applied", "status": "True", "reason": "AppliedManifestComplete", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"},
    {"type": "Available", "status": "True", "reason": "ResourceAvailable", "message": "m", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}]}}}`
	for name, strip := range map[string]stripper{"transform": {unstructured: workResourceConditionsStripper.unstructured}, "typed": workResourceConditionsStripper} {
		t.Run(name, func(t *testing.T) {
			c := newTestCache()
			var obj any
			var err error
			if strip.typed == nil {
				obj, err = c.decode(kindWork, strip.unstructured, nil)(fromJSON(t, kindWork, raw))
			} else {
				d := watchDecoder{c: c, k: kindWork, strip: strip.typed, transform: c.decode(kindWork, strip.unstructured, nil)}
				obj, _, err = d.Decode(withKind(t, kindWork, raw), nil, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			w := obj.(*workv1.ManifestWork)
			if len(w.Spec.Workload.Manifests) != 1 || len(w.Status.Conditions) != 1 {
				t.Errorf("manifests or work conditions lost: %+v", w)
			}
			ms := w.Status.ResourceStatus.Manifests
			if len(ms) != 1 || ms[0].ResourceMeta.Resource != "deployments" || ms[0].ResourceMeta.Name != "a" ||
				len(ms[0].StatusFeedbacks.Values) != 1 || ms[0].StatusFeedbacks.Values[0].Value.Integer == nil {
				t.Fatalf("resource identity or status feedback lost: %+v", ms)
			}
			if len(ms[0].Conditions) != 0 {
				t.Errorf("kept the manifest's conditions: %+v", ms[0].Conditions)
			}
		})
	}
}
