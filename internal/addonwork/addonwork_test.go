package addonwork

import (
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	sdkbuilder "open-cluster-management.io/sdk-go/pkg/apis/work/v1/builder"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/render"
)

func obj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func configMap(t testing.TB, name string, size int) *unstructured.Unstructured {
	return obj(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: ns1}\ndata: {d: %q}", name, strings.Repeat("x", size)))
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: agent, namespace: ns1}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i}]}`

var owner = &metav1.OwnerReference{APIVersion: "addon.open-cluster-management.io/v1beta1", Kind: "ManagedClusterAddOn",
	Name: "hello-template", UID: "uid-1", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}

func ptr[T any](v T) *T { return &v }

func helloObjects(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	tpl, err := render.DecodeAddOnTemplate(read("../render/testdata/hello/addon-template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	adc, err := render.DecodeAddOnDeploymentConfig(read("../render/testdata/hello/addon-deployment-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.Render(tpl, render.Cluster{Name: "cluster1", DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Objects
}

func TestHelloTemplateWork(t *testing.T) {
	objects := helloObjects(t)
	refs := []ConfigReference{
		{GroupResource: configref.GroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"},
			Desired: &DesiredConfig{Namespace: "cluster1", Name: "hello-config", SpecHash: "h-adc"}},
		{GroupResource: configref.GroupResource{Group: configref.AddonGroup, Resource: "addontemplates"},
			Desired: &DesiredConfig{Name: "hello-template", SpecHash: "h-tpl"}},
	}
	works, err := Build(objects, Options{AddonName: "hello-template", ClusterName: "cluster1", Owner: owner, ConfigReferences: refs})
	if err != nil {
		t.Fatal(err)
	}
	if len(works.Deploy) != 1 || works.Delete != nil || works.PreDelete != nil {
		t.Fatalf("works: %d deploy, %d delete, pre-delete %v", len(works.Deploy), len(works.Delete), works.PreDelete)
	}
	w := works.Deploy[0]
	wantMeta := metav1.ObjectMeta{
		Name: "addon-hello-template-deploy-0", Namespace: "cluster1",
		Labels: map[string]string{"open-cluster-management.io/addon-name": "hello-template"},
		Annotations: map[string]string{"open-cluster-management.io/config-spec-hash": `{"addondeploymentconfigs.addon.open-cluster-management.io/cluster1/hello-config":"h-adc",` +
			`"addontemplates.addon.open-cluster-management.io//hello-template":"h-tpl"}`},
		OwnerReferences: []metav1.OwnerReference{*owner},
	}
	if diff := cmp.Diff(wantMeta, w.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	wantConfigs := []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "open-cluster-management-agent-addon", Name: "hello-template-agent"},
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}, RolloutFeedback("deployments")},
	}}
	if diff := cmp.Diff(wantConfigs, w.Spec.ManifestConfigs); diff != "" {
		t.Errorf("manifestConfigs (-want +got):\n%s", diff)
	}
	if w.Spec.DeleteOption != nil || w.Spec.Executor != nil {
		t.Errorf("deleteOption %v executor %v, want none", w.Spec.DeleteOption, w.Spec.Executor)
	}
	// All three manifests, encoded as OCM encodes them, biggest first.
	var kinds []string
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, u.GetKind())
		for _, o := range objects {
			if o.GetKind() == u.GetKind() {
				raw, _ := runtime.Encode(unstructured.UnstructuredJSONScheme, o)
				if string(raw) != string(m.Raw) {
					t.Errorf("%s manifest bytes differ from OCM's encoding", u.GetKind())
				}
			}
		}
	}
	if want := []string{"Deployment", "ClusterRoleBinding", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Errorf("manifest order %v, want %v (by size)", kinds, want)
	}
}

func TestConfigSpecHash(t *testing.T) {
	adcGR := configref.GroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	cases := []struct {
		name   string
		refs   []ConfigReference
		want   string
		wantOK bool
	}{
		{"no references: no annotation", nil, "", false},
		{"references without desiredConfig: empty map", []ConfigReference{{GroupResource: adcGR}}, "{}", true},
		{"core group has no dot", []ConfigReference{{GroupResource: configref.GroupResource{Resource: "configmaps"}, Desired: &DesiredConfig{Namespace: "n", Name: "c", SpecHash: "h"}}},
			`{"configmaps/n/c":"h"}`, true},
		{"keys sorted, HTML-safe JSON", []ConfigReference{
			{GroupResource: adcGR, Desired: &DesiredConfig{Namespace: "b", Name: "x", SpecHash: "2"}},
			{GroupResource: adcGR, Desired: &DesiredConfig{Namespace: "a", Name: "x", SpecHash: "<1>"}},
		}, `{"addondeploymentconfigs.addon.open-cluster-management.io/a/x":"\u003c1\u003e","addondeploymentconfigs.addon.open-cluster-management.io/b/x":"2"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := ConfigSpecHash(tc.refs)
			if err != nil || got != tc.want || ok != tc.wantOK {
				t.Errorf("got %q %v %v, want %q %v", got, ok, err, tc.want, tc.wantOK)
			}
		})
	}
	// Conversion from the typed MCA status.
	refs := ConfigReferencesFromV1alpha1([]addonv1alpha1.ConfigReference{{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addontemplates"},
		DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Name: "t"}, SpecHash: "h"},
	}, {ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "x"}}})
	if got, _, _ := ConfigSpecHash(refs); got != `{"addontemplates.addon.open-cluster-management.io//t":"h"}` {
		t.Errorf("from v1alpha1: %s", got)
	}
}

func TestManifestConfigs(t *testing.T) {
	daemonSet := strings.NewReplacer("Deployment", "DaemonSet", "name: agent", "name: node").Replace(deploymentYAML)
	broken := strings.Replace(deploymentYAML, "spec:\n  selector", "spec:\n  replicas: two\n  selector", 1)
	dep := workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Namespace: "ns1", Name: "agent"}
	ds := workv1.ResourceIdentifier{Group: "apps", Resource: "daemonsets", Namespace: "ns1", Name: "node"}
	wellKnown := workv1.FeedbackRule{Type: workv1.WellKnownStatusType}
	rolloutDep, rolloutDS := RolloutFeedback("deployments"), RolloutFeedback("daemonsets")
	paths := func(names ...string) workv1.FeedbackRule {
		r := workv1.FeedbackRule{Type: workv1.JSONPathsType}
		for _, n := range names {
			r.JsonPaths = append(r.JsonPaths, workv1.JsonPath{Name: n, Path: "." + n})
		}
		return r
	}
	createOnly := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}
	other := workv1.ResourceIdentifier{Resource: "configmaps", Namespace: "ns1", Name: "cm"}
	cases := []struct {
		name     string
		objects  []string
		template []workv1.ManifestConfigOption
		want     []workv1.ManifestConfigOption
	}{
		{"one rule per workload", []string{deploymentYAML, daemonSet, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}"}, nil,
			[]workv1.ManifestConfigOption{{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{wellKnown, rolloutDep}}, {ResourceIdentifier: ds, FeedbackRules: []workv1.FeedbackRule{wellKnown, rolloutDS}}}},
		{"a workload that does not decode gets none", []string{broken}, nil, nil},
		{"WellKnownStatus is not repeated, JSONPaths merge by name, updateStrategy replaced", []string{deploymentYAML},
			[]workv1.ManifestConfigOption{
				{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{wellKnown, paths("a", "b")}, UpdateStrategy: createOnly},
				{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{paths("b", "c")}},
			},
			[]workv1.ManifestConfigOption{{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{wellKnown, rolloutDep, paths("a", "b"), paths("c")}, UpdateStrategy: createOnly}}},
		{"a template path named like a rollout feedback value gives way", []string{deploymentYAML},
			[]workv1.ManifestConfigOption{{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{paths(FeedbackGeneration, "d")}}},
			[]workv1.ManifestConfigOption{{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{wellKnown, rolloutDep, paths("d")}}}},
		{"other resources are appended", []string{deploymentYAML},
			[]workv1.ManifestConfigOption{{ResourceIdentifier: other, UpdateStrategy: createOnly}},
			[]workv1.ManifestConfigOption{{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{wellKnown, rolloutDep}}, {ResourceIdentifier: other, UpdateStrategy: createOnly}}},
		{"conditionRules and scrape type survive a merge", []string{deploymentYAML},
			[]workv1.ManifestConfigOption{{ResourceIdentifier: dep, FeedbackScrapeType: workv1.FeedbackWatchType,
				ConditionRules: []workv1.ConditionRule{{Condition: "Ready", Type: workv1.WellKnownConditionsType}}}},
			[]workv1.ManifestConfigOption{{ResourceIdentifier: dep, FeedbackRules: []workv1.FeedbackRule{wellKnown, rolloutDep}, FeedbackScrapeType: workv1.FeedbackWatchType,
				ConditionRules: []workv1.ConditionRule{{Condition: "Ready", Type: workv1.WellKnownConditionsType}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []*unstructured.Unstructured
			for _, y := range tc.objects {
				objs = append(objs, obj(t, y))
			}
			before := deepCopyConfigs(tc.template)
			got := ManifestConfigs(objs, tc.template)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.template); diff != "" {
				t.Errorf("the template's manifestConfigs were modified:\n%s", diff)
			}
		})
	}
}

func names(ws []*workv1.ManifestWork) map[string][]string {
	out := map[string][]string{}
	for _, w := range ws {
		out[w.Name] = []string{}
		for _, m := range w.Spec.Workload.Manifests {
			u := &unstructured.Unstructured{}
			_ = u.UnmarshalJSON(m.Raw)
			out[w.Name] = append(out[w.Name], u.GetName())
		}
	}
	return out
}

func TestSplit(t *testing.T) {
	// A 1000-byte limit fills works to 800 bytes; a ConfigMap with n bytes of data is ~n+90 bytes.
	opts := func(existing ...workv1.ManifestWork) Options {
		return Options{AddonName: "a", ClusterName: "c1", ManifestLimit: 1000, Existing: existing}
	}
	existing := func(name string, cms ...*unstructured.Unstructured) workv1.ManifestWork {
		w := workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c1"}}
		for _, cm := range cms {
			raw, _ := runtime.Encode(unstructured.UnstructuredJSONScheme, cm)
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
		}
		return w
	}
	cases := []struct {
		name       string
		objects    []*unstructured.Unstructured
		opts       Options
		want       map[string][]string
		wantDelete []string
	}{
		{"all fit in one work", []*unstructured.Unstructured{configMap(t, "s1", 10), configMap(t, "s2", 20)}, opts(),
			map[string][]string{"addon-a-deploy-0": {"s2", "s1"}}, nil},
		{"biggest first, new work when full", []*unstructured.Unstructured{configMap(t, "m1", 250), configMap(t, "l1", 500), configMap(t, "m2", 250)}, opts(),
			map[string][]string{"addon-a-deploy-0": {"l1"}, "addon-a-deploy-1": {"m1", "m2"}}, nil},
		{"equal sizes keep rendering order", []*unstructured.Unstructured{configMap(t, "e3", 250), configMap(t, "e1", 250), configMap(t, "e2", 250)}, opts(),
			map[string][]string{"addon-a-deploy-0": {"e3", "e1"}, "addon-a-deploy-1": {"e2"}}, nil},
		{"a manifest over the limit gets its own work, no empty work first", []*unstructured.Unstructured{configMap(t, "huge", 2000), configMap(t, "s", 10)}, opts(),
			map[string][]string{"addon-a-deploy-0": {"huge"}, "addon-a-deploy-1": {"s"}}, nil},
		{"manifests stay in their existing work; new ones go where there is most room",
			[]*unstructured.Unstructured{configMap(t, "new", 100), configMap(t, "x", 500), configMap(t, "z", 100)},
			opts(existing("addon-a-deploy-0", configMap(t, "z", 1)), existing("addon-a-deploy-1", configMap(t, "x", 1))),
			map[string][]string{"addon-a-deploy-0": {"z", "new"}, "addon-a-deploy-1": {"x"}}, nil},
		{"works left empty are deleted", []*unstructured.Unstructured{configMap(t, "x", 10)},
			opts(existing("addon-a-deploy-0", configMap(t, "gone", 1)), existing("addon-a-deploy-1", configMap(t, "x", 1))),
			map[string][]string{"addon-a-deploy-1": {"x"}}, []string{"addon-a-deploy-0"}},
		{"new works skip names in use", []*unstructured.Unstructured{configMap(t, "bg1", 700), configMap(t, "bg2", 700), configMap(t, "x", 10)},
			opts(existing("addon-a-deploy-1", configMap(t, "x", 1))),
			map[string][]string{"addon-a-deploy-1": {"x"}, "addon-a-deploy-2": {"bg1"}, "addon-a-deploy-3": {"bg2"}}, nil},
		{"other works of the add-on are ignored", []*unstructured.Unstructured{configMap(t, "x", 10)},
			opts(existing("addon-a-pre-delete", configMap(t, "x", 1)), existing("addon-a-deploy-hosting-ns-0", configMap(t, "x", 1)), existing("addon-a-deploy-01", configMap(t, "x", 1))),
			map[string][]string{"addon-a-deploy-0": {"x"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for run := 0; run < 20; run++ { // deterministic, whatever map order does
				works, err := Build(tc.objects, tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, names(works.Deploy)); diff != "" {
					t.Fatalf("run %d (-want +got):\n%s", run, diff)
				}
				var deleted []string
				for _, w := range works.Delete {
					deleted = append(deleted, w.Name)
				}
				if !slices.Equal(deleted, tc.wantDelete) {
					t.Fatalf("deleted %v, want %v", deleted, tc.wantDelete)
				}
				for i := 1; i < len(works.Deploy); i++ {
					if works.Deploy[i-1].Name > works.Deploy[i].Name {
						t.Fatalf("deploy works not in index order")
					}
				}
			}
		})
	}
}

// TestSplitMatchesOCM compares the split with OCM's own work builder (sdk-go, the version the
// module pins) on manifests of distinct sizes, where OCM's order is deterministic too.
func TestSplitMatchesOCM(t *testing.T) {
	var objects []*unstructured.Unstructured
	var objs []runtime.Object
	for i, size := range []int{100, 5000, 60000, 120000, 90000, 30000, 250000, 7000, 200000, 15000, 400000, 1000} {
		cm := configMap(t, fmt.Sprintf("cm%d", i), size)
		objects = append(objects, cm)
		objs = append(objs, cm)
	}
	ours, err := Build(objects, Options{AddonName: "a", ClusterName: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, _, err := sdkbuilder.NewWorkBuilder().WithManifestsLimit(DefaultManifestLimit).Build(objs, func(i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: DeployWorkName("a", i), Namespace: "c1"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names(theirs), names(ours.Deploy)); diff != "" {
		t.Errorf("split differs from OCM's work builder (-ocm +ours):\n%s", diff)
	}
	if len(ours.Deploy) < 3 {
		t.Errorf("only %d works: the case does not exercise splitting", len(ours.Deploy))
	}
	// And with existing works, the update path.
	existing := make([]workv1.ManifestWork, len(theirs))
	for i, w := range theirs {
		existing[i] = *w
	}
	moreObjects := append(objects[2:], configMap(t, "late1", 80000), configMap(t, "late2", 3000))
	moreObjs := append(objs[2:], moreObjects[len(moreObjects)-2], moreObjects[len(moreObjects)-1])
	ours, err = Build(moreObjects, Options{AddonName: "a", ClusterName: "c1", Existing: existing})
	if err != nil {
		t.Fatal(err)
	}
	theirsApplied, theirsDeleted, err := sdkbuilder.NewWorkBuilder().WithManifestsLimit(DefaultManifestLimit).Build(moreObjs, func(i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: DeployWorkName("a", i), Namespace: "c1"}
	}, sdkbuilder.ExistingManifestWorksOption(existing))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names(theirsApplied), names(ours.Deploy)); diff != "" {
		t.Errorf("update split differs from OCM's work builder (-ocm +ours):\n%s", diff)
	}
	if diff := cmp.Diff(names(theirsDeleted), names(ours.Delete)); diff != "" {
		t.Errorf("deleted works differ (-ocm +ours):\n%s", diff)
	}
}

func TestHooksOrphansAndNamespaces(t *testing.T) {
	hookJob := obj(t, "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: cleanup\n  namespace: ns1\n  annotations: {addon.open-cluster-management.io/addon-pre-delete: ''}")
	hookPod := obj(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns1\n  labels: {open-cluster-management.io/addon-pre-delete: ''}")
	plainJob := obj(t, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ns1}")
	orphan := obj(t, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: keep\n  namespace: ns1\n  annotations: {addon.open-cluster-management.io/deletion-orphan: ''}")
	policy := obj(t, "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: np\n  namespace: ns1\n  annotations: {addon.open-cluster-management.io/deletion-orphan: ''}")
	works, err := Build([]*unstructured.Unstructured{hookJob, obj(t, deploymentYAML), hookPod, plainJob, orphan, policy},
		Options{AddonName: "a", ClusterName: "c1", AddonNamespace: "other", Owner: owner,
			ConfigReferences: []ConfigReference{{GroupResource: configref.GroupResource{Resource: "r"}, Desired: &DesiredConfig{Name: "n", SpecHash: "h"}}}})
	if err != nil {
		t.Fatal(err)
	}
	got := names(works.Deploy)
	slices.Sort(got["addon-a-deploy-0"])
	if diff := cmp.Diff(map[string][]string{"addon-a-deploy-0": {"agent", "j", "keep", "np"}}, got); diff != "" {
		t.Errorf("deploy (-want +got):\n%s", diff)
	}
	w := works.Deploy[0]
	// In another namespace than the add-on: labelled, not owned (garbage collection cannot cross namespaces).
	if w.Labels[AddonNamespaceLabel] != "other" || w.OwnerReferences != nil {
		t.Errorf("labels %v owners %v", w.Labels, w.OwnerReferences)
	}
	wantDelete := &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
		SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{
			{Resource: "secrets", Namespace: "ns1", Name: "keep"},
			{Group: "networking.k8s.io", Resource: "networkpolicies", Namespace: "ns1", Name: "np"}}}}
	if diff := cmp.Diff(wantDelete, w.Spec.DeleteOption); diff != "" {
		t.Errorf("deleteOption (-want +got):\n%s", diff)
	}
	hook := works.PreDelete
	if hook == nil {
		t.Fatal("no pre-delete work")
	}
	if hook.Name != "addon-a-pre-delete" || hook.Namespace != "c1" || hook.Annotations != nil || hook.Labels[AddonNamespaceLabel] != "other" ||
		len(hook.OwnerReferences) != 1 || hook.Spec.DeleteOption != nil {
		t.Errorf("hook work meta %+v", hook.ObjectMeta)
	}
	wantHookConfigs := []workv1.ManifestConfigOption{
		{ResourceIdentifier: workv1.ResourceIdentifier{Group: "batch", Resource: "jobs", Namespace: "ns1", Name: "cleanup"}, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}},
		{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "pods", Namespace: "ns1", Name: "p"}, FeedbackRules: []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}}},
	}
	if diff := cmp.Diff(wantHookConfigs, hook.Spec.ManifestConfigs); diff != "" {
		t.Errorf("hook manifestConfigs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"addon-a-pre-delete": {"cleanup", "p"}}, names([]*workv1.ManifestWork{hook})); diff != "" {
		t.Errorf("hook manifests (-want +got):\n%s", diff)
	}
}

func TestBuildErrors(t *testing.T) {
	_, err := Build([]*unstructured.Unstructured{obj(t, deploymentYAML), obj(t, strings.Replace(deploymentYAML, "apps/v1", "apps/v1beta2", 1))},
		Options{AddonName: "a", ClusterName: "c"})
	if err == nil || !strings.Contains(err.Error(), "Deployment ns1/agent is rendered twice (objects 0 and 1)") {
		t.Errorf("duplicate: got %v", err)
	}
	if _, err := Build(nil, Options{AddonName: "a"}); err == nil {
		t.Errorf("no cluster name: no error")
	}
	works, err := Build(nil, Options{AddonName: "a", ClusterName: "c", Existing: []workv1.ManifestWork{{ObjectMeta: metav1.ObjectMeta{Name: "addon-a-deploy-0"}}}})
	if err != nil || works.Deploy != nil || works.Delete != nil {
		t.Errorf("nothing to deploy: %+v %v", works, err)
	}
}

// BenchmarkPreviewManifestWorks1000Clusters renders the hello-template and builds its ManifestWork
// for 1,000 clusters per operation: the preview's ManifestWork output across a fleet.
func BenchmarkPreviewManifestWorks1000Clusters(b *testing.B) {
	read := func(p string) []byte {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		return j
	}
	tpl, err := render.DecodeAddOnTemplate(read("../render/testdata/hello/addon-template.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	adc, err := render.DecodeAddOnDeploymentConfig(read("../render/testdata/hello/addon-deployment-config.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	r, err := render.Compile(tpl)
	if err != nil {
		b.Fatal(err)
	}
	const clusters = 1000
	names := make([]string, clusters)
	for i := range names {
		names[i] = fmt.Sprintf("cluster%d", i+1)
	}
	refs := []ConfigReference{{GroupResource: configref.GroupResource{Group: configref.AddonGroup, Resource: "addontemplates"},
		Desired: &DesiredConfig{Name: "hello-template", SpecHash: strings.Repeat("a", 64)}}}
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, name := range names {
			res, err := r.Render(render.Cluster{Name: name, DeploymentConfigs: []*addonv1alpha1.AddOnDeploymentConfig{adc}})
			if err != nil {
				b.Fatal(err)
			}
			works, err := Build(res.Objects, Options{AddonName: tpl.Spec.AddonName, ClusterName: name, ConfigReferences: refs,
				ManifestConfigs: tpl.Spec.AgentSpec.ManifestConfigs})
			if err != nil {
				b.Fatal(err)
			}
			if len(works.Deploy) != 1 {
				b.Fatalf("%d works", len(works.Deploy))
			}
		}
	}
	b.StopTimer()
	goruntime.ReadMemStats(&after)
	n := float64(b.N) * clusters
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/cluster")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/cluster")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/cluster")
}
