package templatedeploy

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/manifesthead"
	"github.com/addonops/addonops/internal/render"
	"github.com/addonops/addonops/internal/spechash"
)

var update = flag.Bool("update", false, "rewrite golden files")

// object decodes YAML into its unstructured form.
func object(t testing.TB, y string) *unstructured.Unstructured {
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

func readObject(t testing.TB, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return object(t, string(b))
}

func config(t testing.TB, gr configref.GroupResource, u *unstructured.Unstructured) hubcache.Config {
	t.Helper()
	h, err := spechash.Of(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return hubcache.Config{Ref: configref.Ref{GroupResource: gr, Namespace: u.GetNamespace(), Name: u.GetName()}, DesiredHash: h, Object: u, Hash: h}
}

// world is one MCA with its configs, cluster and works.
type world struct {
	mca     *addonv1alpha1.ManagedClusterAddOn
	cluster *clusterv1.ManagedCluster
	desired hubcache.Desired
	works   []*workv1.ManifestWork
}

func newWorld(t testing.TB, tpl *unstructured.Unstructured, adcs ...*unstructured.Unstructured) *world {
	t.Helper()
	w := &world{
		mca:     &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello-template", Namespace: "cluster1", UID: "mca-uid"}},
		cluster: &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster1"}},
	}
	tc := config(t, configref.AddOnTemplates, tpl)
	w.desired.Template = &tc
	for _, a := range adcs {
		w.desired.DeploymentConfigs = append(w.desired.DeploymentConfigs, config(t, configref.AddOnDeploymentConfigs, a))
	}
	for _, c := range append([]hubcache.Config{tc}, w.desired.DeploymentConfigs...) {
		w.mca.Status.ConfigReferences = append(w.mca.Status.ConfigReferences, addonv1alpha1.ConfigReference{
			ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: c.Group, Resource: c.Resource},
			ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name},
			DesiredConfig:       &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name}, SpecHash: c.DesiredHash},
		})
	}
	w.configured(true)
	return w
}

func (w *world) configured(ok bool) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&w.mca.Status.Conditions, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionConfigured, Status: s, Reason: "x"})
}

func (w *world) input() Input {
	return Input{MCA: w.mca, Cluster: w.cluster, Desired: w.desired, Works: w.works}
}

// stored is what the API server hands back for a work we wrote: CRD defaults applied, manifests
// re-encoded (no trailing newline, keys sorted), a resourceVersion and generation.
func stored(t testing.TB, w *workv1.ManifestWork) *workv1.ManifestWork {
	t.Helper()
	out := w.DeepCopy()
	out.ResourceVersion, out.Generation, out.UID = "7", 1, "work-uid"
	for i := range out.Spec.Workload.Manifests {
		var v any
		if err := json.Unmarshal(out.Spec.Workload.Manifests[i].Raw, &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		out.Spec.Workload.Manifests[i].Raw = b
	}
	for i := range out.Spec.ManifestConfigs {
		out.Spec.ManifestConfigs[i].FeedbackScrapeType = workv1.FeedbackPollType
	}
	return out
}

const helloDir = "../render/testdata/hello/"

func hello(t testing.TB) *world {
	return newWorld(t, readObject(t, helloDir+"addon-template.yaml"), readObject(t, helloDir+"addon-deployment-config.yaml"))
}

// TestHelloGolden renders the design's hello-template for cluster1 into its ManifestWork and compares
// it with testdata/hello-work.yaml (go test -run TestHelloGolden -update rewrites it). The
// integration test compares the work our reconciler writes on a real API server with the same file.
func TestHelloGolden(t *testing.T) {
	w := hello(t)
	// The ADC as the API server stores it: the CRD default for agentInstallNamespace applied.
	adc := w.desired.DeploymentConfigs[0].Object
	if err := unstructured.SetNestedField(adc.Object, "open-cluster-management-agent-addon", "spec", "agentInstallNamespace"); err != nil {
		t.Fatal(err)
	}
	w = newWorld(t, w.desired.Template.Object, adc)
	p := Decide(w.input())
	if p.Skip != "" || len(p.Create) != 1 || len(p.Update)+len(p.Delete) != 0 || len(p.Conditions) != 0 {
		t.Fatalf("plan: %+v", p)
	}
	CompareGolden(t, "testdata/hello-work.yaml", p.Create[0], *update)
	// The Deployment is the one written by hand from OCM's rules next to the renderer's tests.
	wantJSON, err := readObject(t, helloDir+"expected-deployment.yaml").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want, err := manifestValue(workv1.Manifest{RawExtension: runtime.RawExtension{Raw: wantJSON}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := manifestValue(p.Create[0].Spec.Workload.Manifests[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deployment in the work differs from %sexpected-deployment.yaml (-want +got):\n%s", helloDir, diff)
	}
	if len(p.AddFinalizers) != 0 {
		t.Errorf("finalizers %v for a template without hooks", p.AddFinalizers)
	}
}

// CompareGolden compares a work with a golden file (see Describe).
func CompareGolden(t testing.TB, path string, w *workv1.ManifestWork, write bool) {
	t.Helper()
	got, err := Describe(w)
	if err != nil {
		t.Fatal(err)
	}
	if write {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

const hookTemplate = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata: {name: hooked}
spec:
  addonName: hello-template
  agentSpec:
    workload:
      manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: "agent-{{CLUSTER_NAME}}", namespace: default}
        data: {v: "1"}
      - apiVersion: batch/v1
        kind: Job
        metadata:
          name: cleanup
          namespace: default
          annotations: {addon.open-cluster-management.io/addon-pre-delete: ""}
        spec:
          template:
            spec:
              restartPolicy: Never
              containers: [{name: c, image: busybox}]
`

func jobFeedback(complete string) workv1.ManifestCondition {
	return workv1.ManifestCondition{
		ResourceMeta: workv1.ManifestResourceMeta{Group: "batch", Resource: "jobs", Namespace: "default", Name: "cleanup"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			{Name: "JobComplete", Value: workv1.FieldValue{Type: workv1.String, String: &complete}},
		}},
	}
}

func available(w *workv1.ManifestWork, status metav1.ConditionStatus, gen int64) *workv1.ManifestWork {
	w.Generation = gen
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkAvailable, Status: status, Reason: "x", ObservedGeneration: gen})
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: status, Reason: "x", ObservedGeneration: gen})
	return w
}

func names(ws []*workv1.ManifestWork) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return out
}

func TestDecide(t *testing.T) {
	// A deployed world: its works as stored, a second deploy work no longer needed, a foreign one.
	deployed := func(t *testing.T) *world {
		w := hello(t)
		p := Decide(w.input())
		if len(p.Create) != 1 {
			t.Fatalf("first plan: %+v", p)
		}
		w.works = []*workv1.ManifestWork{stored(t, p.Create[0])}
		return w
	}
	hooked := func(t *testing.T) *world {
		w := newWorld(t, object(t, hookTemplate))
		return w
	}
	deleting := func(w *world) *world {
		now := metav1.NewTime(time.Unix(1000, 0))
		w.mca.DeletionTimestamp = &now
		w.mca.Finalizers = []string{FinalizerPreDelete}
		return w
	}
	hookWork := func(t *testing.T, w *world) *workv1.ManifestWork {
		works, _, err := build(w.input())
		if err != nil || works.PreDelete == nil {
			t.Fatalf("hook work: %v %v", works, err)
		}
		return stored(t, works.PreDelete)
	}

	cases := []struct {
		name  string
		world func(t *testing.T) *world
		check func(t *testing.T, w *world, p Plan)
	}{
		{"first deploy creates one work", func(t *testing.T) *world { return hello(t) }, func(t *testing.T, w *world, p Plan) {
			if got := names(p.Create); !slices.Equal(got, []string{"addon-hello-template-deploy-0"}) || !p.TrackApplied {
				t.Errorf("create %v track %v", got, p.TrackApplied)
			}
		}},
		{"refused desired configs (a cluster named them) change no work", func(t *testing.T) *world {
			w := deployed(t)
			w.works[0].Spec.Workload.Manifests = w.works[0].Spec.Workload.Manifests[1:]
			w.desired.Refused = "forged by the cluster"
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.Create)+len(p.Update)+len(p.Delete) != 0 || p.TrackApplied || len(p.AddFinalizers)+len(p.RemoveFinalizers) != 0 {
				t.Errorf("plan %+v, want no writes", p)
			}
			if len(p.Conditions) != 1 || p.Conditions[0].Reason != ReasonConfigsRefused || p.Conditions[0].Status != metav1.ConditionFalse || p.Conditions[0].Message != "forged by the cluster" {
				t.Errorf("conditions %+v, want ManifestApplied=False ConfigsRefused with the refusal", p.Conditions)
			}
		}},
		{"a deleted MCA runs no hook from refused configs", func(t *testing.T) *world {
			w := deleting(hooked(t))
			w.desired.Refused = "forged by the cluster"
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.Create)+len(p.Update) != 0 || !slices.Contains(p.RemoveFinalizers, FinalizerPreDelete) {
				t.Errorf("plan %+v, want no hook work and the finalizer removed", p)
			}
		}},
		{"works as stored by the API server need no write", deployed, func(t *testing.T, w *world, p Plan) {
			if len(p.Create)+len(p.Update)+len(p.Delete) != 0 || p.Skip != "" {
				t.Errorf("plan %+v, want no writes", p)
			}
		}},
		{"a foreign annotation is removed", func(t *testing.T) *world {
			w := deployed(t)
			w.works[0].Annotations["someone/else"] = "x"
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.Update) != 1 || p.Update[0].ResourceVersion != "7" || p.Update[0].Annotations["someone/else"] != "" {
				t.Errorf("update %+v", p.Update)
			}
		}},
		{"an edited manifest is put back", func(t *testing.T) *world {
			w := deployed(t)
			w.works[0].Spec.Workload.Manifests = w.works[0].Spec.Workload.Manifests[1:]
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.Update) != 1 || len(p.Update[0].Spec.Workload.Manifests) != 3 {
				t.Errorf("update %+v", names(p.Update))
			}
		}},
		{"a deploy work no longer needed is deleted, other works are not", func(t *testing.T) *world {
			w := deployed(t)
			extra := w.works[0].DeepCopy()
			extra.Name = "addon-hello-template-deploy-1"
			extra.Spec.Workload.Manifests = nil
			hosting := w.works[0].DeepCopy()
			hosting.Name = "addon-hello-template-deploy-hosting-cluster1-0"
			w.works = append(w.works, extra, hosting)
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if got := names(p.Delete); !slices.Equal(got, []string{"addon-hello-template-deploy-1"}) {
				t.Errorf("delete %v", got)
			}
		}},
		{"not Configured: frozen, works untouched", func(t *testing.T) *world {
			w := deployed(t)
			w.configured(false)
			w.works[0].Spec.Workload.Manifests = nil // even a changed work stays
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if p.Skip == "" || len(p.Create)+len(p.Update)+len(p.Delete) != 0 || p.TrackApplied {
				t.Errorf("plan %+v, want skip", p)
			}
		}},
		{"no Configured condition yet: frozen", func(t *testing.T) *world {
			w := hello(t)
			w.mca.Status.Conditions = nil
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if p.Skip == "" || len(p.Create) != 0 {
				t.Errorf("plan %+v", p)
			}
		}},
		{"the cluster's image-registries annotation changed: the work is updated at once", func(t *testing.T) *world {
			w := deployed(t)
			w.cluster.Annotations = map[string]string{render.ImageRegistriesAnnotation: `{"registries":[{"mirror":"mirror.example.com/x"}]}`}
			return w
		}, func(t *testing.T, w *world, p Plan) {
			mirrored := false
			for _, u := range p.Update {
				for _, m := range u.Spec.Workload.Manifests {
					mirrored = mirrored || strings.Contains(string(m.Raw), `"image":"mirror.example.com/x/addon-examples:latest"`)
				}
			}
			if len(p.Update) != 1 || !mirrored || p.Skip != "" {
				t.Errorf("plan %+v, want the work updated with the mirrored image", p)
			}
		}},
		{"not Configured: an image-registries annotation change waits too", func(t *testing.T) *world {
			w := deployed(t)
			w.configured(false)
			w.cluster.Annotations = map[string]string{render.ImageRegistriesAnnotation: `{"registries":[{"mirror":"mirror.example.com/x"}]}`}
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if p.Skip == "" || len(p.Create)+len(p.Update)+len(p.Delete) != 0 {
				t.Errorf("plan %+v, want skip", p)
			}
		}},
		{"template edited in place before the cluster's turn: waits", func(t *testing.T) *world {
			w := deployed(t)
			w.desired.Template.Hash = "something-else"
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if !strings.Contains(p.Skip, "rollout turn for it has not come") || len(p.Create)+len(p.Update)+len(p.Delete) != 0 {
				t.Errorf("plan %+v", p)
			}
		}},
		{"deployment config edited in place: waits", func(t *testing.T) *world {
			w := deployed(t)
			w.desired.DeploymentConfigs[0].Hash = "new"
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if !strings.Contains(p.Skip, "addondeploymentconfigs.addon.open-cluster-management.io cluster1/hello-config has changed") {
				t.Errorf("skip %q", p.Skip)
			}
		}},
		{"template missing: condition, works untouched", func(t *testing.T) *world {
			w := deployed(t)
			w.desired.Template.Object = nil
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.Create)+len(p.Update)+len(p.Delete) != 0 || len(p.Conditions) != 1 ||
				p.Conditions[0].Reason != ReasonWorkApplyFailed || !strings.Contains(p.Conditions[0].Message, "addontemplates.addon.open-cluster-management.io hello-template not found") {
				t.Errorf("plan %+v", p)
			}
		}},
		{"render error: condition with the error, works untouched", func(t *testing.T) *world {
			w := deployed(t)
			// The ADC no longer defines LOG_LEVEL, which the template uses.
			adc := w.desired.DeploymentConfigs[0].Object.DeepCopy()
			unstructured.RemoveNestedField(adc.Object, "spec", "customizedVariables")
			w2 := newWorld(t, w.desired.Template.Object, adc)
			w2.works = w.works
			return w2
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.Create)+len(p.Update)+len(p.Delete) != 0 || len(p.Conditions) != 1 {
				t.Fatalf("plan %+v", p)
			}
			c := p.Conditions[0]
			if c.Type != ConditionManifestApplied || c.Status != metav1.ConditionFalse || c.Reason != ReasonWorkApplyFailed ||
				!strings.Contains(c.Message, `undefined variable "LOG_LEVEL"`) || !strings.Contains(c.Message, "AddOnTemplate hello-template for cluster cluster1") {
				t.Errorf("condition %+v", c)
			}
		}},
		{"cluster missing: waits", func(t *testing.T) *world {
			w := hello(t)
			w.cluster = nil
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if !strings.Contains(p.Skip, "ManagedCluster cluster1 not found") {
				t.Errorf("skip %q", p.Skip)
			}
		}},
		{"not a template add-on", func(t *testing.T) *world {
			w := hello(t)
			w.desired.Template = nil
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if !strings.Contains(p.Skip, "not a template add-on") {
				t.Errorf("skip %q", p.Skip)
			}
		}},
		{"hooks: finalizer added, hook work not applied before deletion", hooked, func(t *testing.T, w *world, p Plan) {
			if !slices.Equal(p.AddFinalizers, []string{FinalizerPreDelete}) || len(p.RemoveFinalizers) != 0 {
				t.Errorf("finalizers +%v -%v", p.AddFinalizers, p.RemoveFinalizers)
			}
			if got := names(p.Create); !slices.Equal(got, []string{"addon-hello-template-deploy-0"}) {
				t.Errorf("create %v", got)
			}
		}},
		{"hooks: deprecated finalizer replaced", func(t *testing.T) *world {
			w := hooked(t)
			w.mca.Finalizers = []string{finalizerPreDeleteDeprecated, FinalizerPreDelete}
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.AddFinalizers) != 0 || !slices.Equal(p.RemoveFinalizers, []string{finalizerPreDeleteDeprecated}) {
				t.Errorf("finalizers +%v -%v", p.AddFinalizers, p.RemoveFinalizers)
			}
		}},
		{"no hooks any more: finalizer removed", func(t *testing.T) *world {
			w := hello(t)
			w.mca.Finalizers = []string{FinalizerPreDelete}
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if !slices.Equal(p.RemoveFinalizers, []string{FinalizerPreDelete}) {
				t.Errorf("finalizers -%v", p.RemoveFinalizers)
			}
		}},
		{"deleted: hook work applied, not completed", func(t *testing.T) *world { return deleting(hooked(t)) }, func(t *testing.T, w *world, p Plan) {
			if got := names(p.Create); !slices.Contains(got, "addon-hello-template-pre-delete") {
				t.Errorf("create %v", got)
			}
			if len(p.RemoveFinalizers) != 0 || len(p.Conditions) != 1 || p.Conditions[0].Reason != ReasonHookNotCompleted {
				t.Errorf("plan %+v", p)
			}
		}},
		{"deleted: hook available but job not complete", func(t *testing.T) *world {
			w := deleting(hooked(t))
			h := available(hookWork(t, w), metav1.ConditionTrue, 1)
			h.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{jobFeedback("False")}
			w.works = []*workv1.ManifestWork{h}
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.RemoveFinalizers) != 0 || len(p.Delete) != 0 || p.Conditions[0].Reason != ReasonHookNotCompleted {
				t.Errorf("plan %+v", p)
			}
		}},
		{"deleted: hook completed: works deleted, finalizer removed", func(t *testing.T) *world {
			w := deleting(hooked(t))
			h := available(hookWork(t, w), metav1.ConditionTrue, 1)
			h.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{jobFeedback("True")}
			deploy := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "addon-hello-template-deploy-0", Namespace: "cluster1"}}
			other := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses", Namespace: "cluster1"}}
			w.works = []*workv1.ManifestWork{deploy, h, other}
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if got := names(p.Delete); !slices.Equal(got, []string{"addon-hello-template-deploy-0", "addon-hello-template-pre-delete"}) {
				t.Errorf("delete %v", got)
			}
			if !slices.Contains(p.RemoveFinalizers, FinalizerPreDelete) || len(p.Conditions) != 1 || p.Conditions[0].Reason != ReasonHookCompleted {
				t.Errorf("plan %+v", p)
			}
		}},
		{"deleted: completion of an older hook generation does not count", func(t *testing.T) *world {
			w := deleting(hooked(t))
			h := available(hookWork(t, w), metav1.ConditionTrue, 1)
			h.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{jobFeedback("True")}
			h.Generation = 2
			w.works = []*workv1.ManifestWork{h}
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if len(p.RemoveFinalizers) != 0 {
				t.Errorf("plan %+v", p)
			}
		}},
		{"deleted while waiting for its turn: hook of the configs it was told to run, deploy works frozen", func(t *testing.T) *world {
			w := deleting(hooked(t))
			w.configured(false)
			w.desired.Template.Hash = "edited"
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if got := names(p.Create); !slices.Equal(got, []string{"addon-hello-template-pre-delete"}) {
				t.Errorf("create %v", got)
			}
		}},
		{"deleted without the template: hook skipped, finalizer removed", func(t *testing.T) *world {
			w := deleting(hooked(t))
			w.desired.Template.Object = nil
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if !slices.Contains(p.RemoveFinalizers, FinalizerPreDelete) || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "not found") {
				t.Errorf("plan %+v", p)
			}
		}},
		{"deleted without our finalizer: nothing to do", func(t *testing.T) *world {
			w := deleting(hooked(t))
			w.mca.Finalizers = nil
			return w
		}, func(t *testing.T, w *world, p Plan) {
			if p.Skip == "" || len(p.Create) != 0 {
				t.Errorf("plan %+v", p)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.world(t)
			tc.check(t, w, Decide(w.input()))
		})
	}
}

func TestNeedsUpdate(t *testing.T) {
	w := hello(t)
	p := Decide(w.input())
	base := p.Create[0]
	cases := []struct {
		name   string
		change func(*workv1.ManifestWork)
		want   bool
	}{
		{"as stored", func(*workv1.ManifestWork) {}, false},
		{"creationTimestamp added to a manifest", func(x *workv1.ManifestWork) {
			var v map[string]any
			_ = json.Unmarshal(x.Spec.Workload.Manifests[0].Raw, &v)
			_ = unstructured.SetNestedField(v, nil, "metadata", "creationTimestamp")
			x.Spec.Workload.Manifests[0].Raw, _ = json.Marshal(v)
		}, false},
		{"manifest value changed", func(x *workv1.ManifestWork) {
			x.Spec.Workload.Manifests[0].Raw = []byte(strings.Replace(string(x.Spec.Workload.Manifests[0].Raw), "cluster1", "cluster2", 1))
		}, true},
		{"label added", func(x *workv1.ManifestWork) { x.Labels["x"] = "y" }, true},
		{"owner changed", func(x *workv1.ManifestWork) { x.OwnerReferences[0].UID = "other" }, true},
		{"updateStrategy defaulted", func(x *workv1.ManifestWork) {
			x.Spec.ManifestConfigs[0].UpdateStrategy = nil
		}, false},
		{"feedback rule removed", func(x *workv1.ManifestWork) { x.Spec.ManifestConfigs = nil }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			existing := stored(t, base)
			tc.change(existing)
			if got := NeedsUpdate(existing, base); got != tc.want {
				t.Errorf("NeedsUpdate = %v, want %v", got, tc.want)
			}
			// As the cache holds it (hubcache, --deploy-templates): a stand-in per manifest.
			standIns := 0
			for i, m := range existing.Spec.Workload.Manifests {
				if s, ok := manifesthead.StandIn(m.Raw); ok {
					existing.Spec.Workload.Manifests[i].Raw = s
					standIns++
				}
			}
			if standIns == 0 {
				t.Fatal("no manifest of the work is larger than its stand-in")
			}
			if got := NeedsUpdate(existing, base); got != tc.want {
				t.Errorf("with stand-ins: NeedsUpdate = %v, want %v", got, tc.want)
			}
		})
	}
	// Defaults on both sides compare equal to their absence.
	a := &workv1.ManifestWork{Spec: workv1.ManifestWorkSpec{DeleteOption: &workv1.DeleteOption{},
		ManifestConfigs: []workv1.ManifestConfigOption{{UpdateStrategy: &workv1.UpdateStrategy{ServerSideApply: &workv1.ServerSideApplyConfig{IgnoreFields: []workv1.IgnoreField{{}}}}}}}}
	b := a.DeepCopy()
	b.Spec.DeleteOption.PropagationPolicy = workv1.DeletePropagationPolicyTypeForeground
	b.Spec.ManifestConfigs[0].UpdateStrategy.Type = workv1.UpdateStrategyTypeUpdate
	b.Spec.ManifestConfigs[0].UpdateStrategy.ServerSideApply.FieldManager = "work-agent"
	b.Spec.ManifestConfigs[0].UpdateStrategy.ServerSideApply.IgnoreFields[0].Condition = workv1.IgnoreFieldsConditionOnSpokePresent
	b.Spec.ManifestConfigs[0].FeedbackScrapeType = workv1.FeedbackPollType
	if NeedsUpdate(a, b) || NeedsUpdate(b, a) {
		t.Error("CRD defaults count as changes")
	}
}

func TestSetManifestApplied(t *testing.T) {
	work := func(status metav1.ConditionStatus, observed, gen int64) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		if status != "" {
			w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: status, ObservedGeneration: observed}}
		}
		return w
	}
	trueCond := metav1.Condition{Type: ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied, Message: MessageApplied}
	falseCond := metav1.Condition{Type: ConditionManifestApplied, Status: metav1.ConditionFalse, Reason: ReasonAppliedFailed, Message: MessageAppliedFailed}
	renderFailed := applyFailed("failed to render")
	cases := []struct {
		name  string
		have  *metav1.Condition
		works []*workv1.ManifestWork
		want  *metav1.Condition
	}{
		{"all applied", nil, []*workv1.ManifestWork{work("True", 1, 1), work("True", 2, 2)}, &trueCond},
		{"one failed, even before an applied one", &trueCond, []*workv1.ManifestWork{work("False", 1, 1), work("True", 1, 1)}, &falseCond},
		{"not reported yet keeps True", &trueCond, []*workv1.ManifestWork{work("", 0, 1)}, &trueCond},
		{"not reported on the new generation keeps True", &trueCond, []*workv1.ManifestWork{work("True", 1, 2)}, &trueCond},
		{"not reported yet removes False", &falseCond, []*workv1.ManifestWork{work("", 0, 1)}, nil},
		{"not reported yet removes a render error", &renderFailed, []*workv1.ManifestWork{work("True", 1, 2)}, nil},
		{"nothing to deploy", nil, nil, &metav1.Condition{Type: ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied, Message: MessageNothingToDo}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var conds []metav1.Condition
			if tc.have != nil {
				conds = append(conds, *tc.have)
			}
			SetManifestApplied(&conds, tc.works)
			got := meta.FindStatusCondition(conds, ConditionManifestApplied)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got != nil && (got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestHookCompleted(t *testing.T) {
	podPhase := func(phase string) workv1.ManifestCondition {
		return workv1.ManifestCondition{
			ResourceMeta:    workv1.ManifestResourceMeta{Resource: "pods", Namespace: "default", Name: "p"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{Name: "PodPhase", Value: workv1.FieldValue{Type: workv1.String, String: &phase}}}},
		}
	}
	hook := func(avail metav1.ConditionStatus, feedback ...workv1.ManifestCondition) *workv1.ManifestWork {
		w := &workv1.ManifestWork{Spec: workv1.ManifestWorkSpec{ManifestConfigs: []workv1.ManifestConfigOption{
			{ResourceIdentifier: workv1.ResourceIdentifier{Group: "batch", Resource: "jobs", Namespace: "default", Name: "cleanup"}},
			{ResourceIdentifier: workv1.ResourceIdentifier{Resource: "pods", Namespace: "default", Name: "p"}},
		}}}
		available(w, avail, 3)
		w.Status.ResourceStatus.Manifests = feedback
		return w
	}
	cases := []struct {
		name string
		work *workv1.ManifestWork
		want bool
	}{
		{"job and pod done", hook("True", jobFeedback("True"), podPhase("Succeeded")), true},
		{"pod still running", hook("True", jobFeedback("True"), podPhase("Running")), false},
		{"job not reported", hook("True", podPhase("Succeeded")), false},
		{"work not available", hook("False", jobFeedback("True"), podPhase("Succeeded")), false},
		{"no manifest configs", &workv1.ManifestWork{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := HookCompleted(tc.work); got != tc.want {
				t.Errorf("HookCompleted = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOrphans(t *testing.T) {
	owned := func(name, kind, ownerName string) *workv1.ManifestWork {
		w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if kind != "" {
			ctrl := true
			w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "addon.open-cluster-management.io/v1beta1", Kind: kind, Name: ownerName, Controller: &ctrl}}
		}
		return w
	}
	works := []*workv1.ManifestWork{
		owned("addon-a-deploy-0", "ManagedClusterAddOn", "a"),
		owned("addon-a-pre-delete", "ManagedClusterAddOn", "a"),
		owned("addon-a-deploy-1", "", ""),                        // nobody's: not ours to delete
		owned("addon-a-deploy-2", "ManagedClusterAddOn", "b"),    // another add-on's owner
		owned("something-else", "ManagedClusterAddOn", "a"),      // not a deployer name
		owned("addon-a-deploy-3", "ClusterManagementAddOn", "a"), // owned by something else
	}
	if got := names(Orphans("a", works)); !slices.Equal(got, []string{"addon-a-deploy-0", "addon-a-pre-delete"}) {
		t.Errorf("orphans %v", got)
	}
}

// TestPlanIsDeterministic renders a multi-work add-on repeatedly: the same input gives the same
// works, byte for byte.
func TestPlanIsDeterministic(t *testing.T) {
	var manifests []string
	for i := range 6 {
		manifests = append(manifests, fmt.Sprintf(`      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: big-%d, namespace: default}
        data: {d: %q}`, i, strings.Repeat("x", 150*1024)))
	}
	tpl := object(t, strings.Replace(hookTemplate, "      manifests:\n", "      manifests:\n"+strings.Join(manifests, "\n")+"\n", 1))
	var first []byte
	for range 5 {
		w := newWorld(t, tpl)
		p := Decide(w.input())
		b, err := json.Marshal(p.Create)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
			if got := names(p.Create); !slices.Equal(got, []string{"addon-hello-template-deploy-0", "addon-hello-template-deploy-1", "addon-hello-template-deploy-2"}) {
				t.Fatalf("works %v", got)
			}
			continue
		}
		if string(b) != string(first) {
			t.Fatal("the same input gave different works")
		}
	}
}

// A work holding a stand-in of the cache is never written: writeWorks refuses it with an error.
func TestNotStandIns(t *testing.T) {
	w := hello(t)
	work := Decide(w.input()).Create[0]
	if err := notStandIns(work); err != nil {
		t.Fatalf("a rendered work refused: %v", err)
	}
	cached := work.DeepCopy()
	for i, m := range cached.Spec.Workload.Manifests {
		if s, ok := manifesthead.StandIn(m.Raw); ok {
			cached.Spec.Workload.Manifests[i].Raw = s
		}
	}
	err := notStandIns(cached)
	if err == nil || !strings.Contains(err.Error(), "stand-in") || !strings.Contains(err.Error(), cached.Name) {
		t.Fatalf("a work with stand-ins: %v", err)
	}
}
