package hubcache

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
)

func cond(typ, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "R", Message: msg}
}

func intValue(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}}
}

func stringValue(name, s string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: &s}}
}

// deployStatus is a resource status entry as OCM's work agent reports a Deployment with the
// rollout feedback addonwork asks for.
func deployStatus(i int) workv1.ManifestCondition {
	return workv1.ManifestCondition{
		ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments",
			Namespace: "open-cluster-management-agent-addon", Name: fmt.Sprintf("hello-agent-%d", i)},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			intValue("ReadyReplicas", 1), intValue("Replicas", 1), intValue("AvailableReplicas", 1),
			intValue("Generation", 2), intValue("ObservedGeneration", 2), intValue("UpdatedReplicas", 1)}},
	}
}

func legitMCA() *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "hello", ResourceVersion: "7"},
		Status: addonv1alpha1.ManagedClusterAddOnStatus{Conditions: []metav1.Condition{
			cond("Progressing", "upgrade completed with no errors."), cond("Configured", "Configurations configured"),
			cond("ManifestApplied", "manifests of addon are applied successfully"), cond("Available", "hello add-on is available."),
			cond("RegistrationApplied", "Registration of the addon agent is configured"), cond("HealthSoak", "the add-on stayed healthy"),
			cond("example.com/Custom", "a third party's"),
		}}}
}

func legitWork() *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "addon-hello-deploy-0", ResourceVersion: "9"},
		Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{cond("Applied", "Apply manifest work complete"), cond("Available", "All resources are available")}}}
	for i := range 20 {
		w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, deployStatus(i))
	}
	return w
}

// What a managed cluster's agent writes within the limits is kept as it is, without an allocation:
// the check runs on every decoded MCA and work.
func TestBoundKeepsLegitStatus(t *testing.T) {
	for _, obj := range []runtime.Object{legitMCA(), legitWork()} {
		before := obj.DeepCopyObject()
		if dropped := bound(obj); dropped != nil || !equality.Semantic.DeepEqual(obj, before) {
			t.Fatalf("%T within the limits: dropped %v", obj, dropped)
		}
		if n := testing.AllocsPerRun(100, func() { bound(obj) }); n != 0 {
			t.Errorf("%T within the limits: %v allocations, want 0", obj, n)
		}
	}
}

func TestBoundMCAConditions(t *testing.T) {
	long := strings.Repeat("x", 32<<10)
	for _, tc := range []struct {
		name       string
		change     func(*addonv1alpha1.ManagedClusterAddOn)
		wantTypes  int      // conditions kept
		wantCut    []string // types whose message is cut
		wantReport []string // substrings of what is reported dropped
	}{
		{name: "100 made-up conditions before the known ones", change: func(m *addonv1alpha1.ManagedClusterAddOn) {
			var made []metav1.Condition
			for i := range 100 {
				made = append(made, cond(fmt.Sprintf("example.com/Fake%d", i), "fake"))
			}
			m.Status.Conditions = append(made, m.Status.Conditions...)
		}, wantTypes: 6 + MaxOtherConditions, wantReport: []string{
			"status.conditions: 93 conditions of types addonops does not read, beyond the 8 it keeps: example.com/Fake8, example.com/Fake9, example.com/Fake10, example.com/Fake11, example.com/Fake12 and 88 more"}},
		{name: "a 32 KiB message", change: func(m *addonv1alpha1.ManagedClusterAddOn) {
			m.Status.Conditions[3].Message = long
		}, wantTypes: 7, wantCut: []string{"Available"}, wantReport: []string{"status.conditions: the message of Available (32768 bytes) cut to 2048 bytes"}},
		{name: "both", change: func(m *addonv1alpha1.ManagedClusterAddOn) {
			for i := range 9 {
				m.Status.Conditions = append(m.Status.Conditions, cond(fmt.Sprintf("Other%d", i), long))
			}
		}, wantTypes: 7 + 7, wantCut: []string{"Other0", "Other6"}, wantReport: []string{"2 conditions of types addonops does not read", "the message of Other0 (32768 bytes), "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := legitMCA()
			tc.change(m)
			dropped := bound(m)
			conds := m.Status.Conditions
			if len(conds) != tc.wantTypes {
				t.Fatalf("%d conditions kept, want %d", len(conds), tc.wantTypes)
			}
			for _, typ := range mcaTypesOf(legitMCA()) {
				if !hasType(conds, typ) {
					t.Errorf("condition %s dropped: addonops reads or writes it", typ)
				}
			}
			for _, c := range conds {
				if len(c.Message) > addonstatus.MaxMessage {
					t.Errorf("condition %s keeps %d bytes of message", c.Type, len(c.Message))
				}
			}
			for _, typ := range tc.wantCut {
				if c := findCond(conds, typ); c == nil || !strings.HasSuffix(c.Message, "[truncated]") {
					t.Errorf("condition %s: message not cut: %+v", typ, c)
				}
			}
			joined := strings.Join(dropped, "\n")
			for _, want := range tc.wantReport {
				if !strings.Contains(joined, want) {
					t.Errorf("reported:\n%s\nwant it to contain %q", joined, want)
				}
			}
			// Bounding a bounded object changes nothing.
			again := m.DeepCopy()
			if d := bound(again); d != nil || !equality.Semantic.DeepEqual(again, m) {
				t.Errorf("bounding again dropped %v", d)
			}
		})
	}
}

func mcaTypesOf(m *addonv1alpha1.ManagedClusterAddOn) []string {
	var out []string
	for _, c := range m.Status.Conditions {
		if mcaConditionTypes[c.Type] {
			out = append(out, c.Type)
		}
	}
	return out
}

func hasType(conds []metav1.Condition, typ string) bool { return findCond(conds, typ) != nil }

func findCond(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func TestBoundWorkResourceStatus(t *testing.T) {
	huge := strings.Repeat("v", 40<<10)
	for _, tc := range []struct {
		name   string
		change func(*workv1.ManifestWork)
		check  func(t *testing.T, w *workv1.ManifestWork)
		report []string
	}{
		{name: "an oversized status feedback string", change: func(w *workv1.ManifestWork) {
			vals := &w.Status.ResourceStatus.Manifests[3].StatusFeedbacks.Values
			*vals = append(*vals, stringValue("PodPhase", huge))
		}, check: func(t *testing.T, w *workv1.ManifestWork) {
			vals := w.Status.ResourceStatus.Manifests[3].StatusFeedbacks.Values
			if len(vals) != 6 || vals[0].Name != "ReadyReplicas" {
				t.Fatalf("feedback values kept: %+v", vals)
			}
		}, report: []string{`status.resourceStatus.manifests[3] (deployments.apps open-cluster-management-agent-addon/hello-agent-3): status feedback values over 1024 bytes: "PodPhase" (40968 bytes)`}},
		{name: "a JSON value at the API server's limit is kept", change: func(w *workv1.ManifestWork) {
			raw := `"` + strings.Repeat("j", 1022) + `"`
			vals := &w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
			*vals = append(*vals, workv1.FeedbackValue{Name: "conditions", Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &raw}})
		}, check: func(t *testing.T, w *workv1.ManifestWork) {
			if n := len(w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values); n != 7 {
				t.Fatalf("%d values kept, want 7", n)
			}
		}},
		{name: "1,000 status feedback values", change: func(w *workv1.ManifestWork) {
			vals := &w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
			for i := range 1000 {
				*vals = append(*vals, intValue(fmt.Sprintf("v%d", i), int64(i)))
			}
		}, check: func(t *testing.T, w *workv1.ManifestWork) {
			vals := w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values
			if len(vals) != MaxFeedbackValues || vals[0].Name != "ReadyReplicas" {
				t.Fatalf("%d values kept (first %q), want %d, the first ones", len(vals), vals[0].Name, MaxFeedbackValues)
			}
		}, report: []string{"status.resourceStatus.manifests[0] (deployments.apps open-cluster-management-agent-addon/hello-agent-0): 942 status feedback values beyond the 64 kept"}},
		{name: "10,000 resource status entries", change: func(w *workv1.ManifestWork) {
			for i := range 10000 {
				w.Status.ResourceStatus.Manifests = append(w.Status.ResourceStatus.Manifests, workv1.ManifestCondition{ResourceMeta: workv1.ManifestResourceMeta{Kind: "ConfigMap", Name: fmt.Sprint(i)}})
			}
		}, check: func(t *testing.T, w *workv1.ManifestWork) {
			if n := len(w.Status.ResourceStatus.Manifests); n != MaxManifestStatuses {
				t.Fatalf("%d entries kept, want %d", n, MaxManifestStatuses)
			}
		}, report: []string{"status.resourceStatus.manifests[512:]: 9508 entries beyond the 512 kept"}},
		{name: "an identity longer than any Kubernetes name", change: func(w *workv1.ManifestWork) {
			w.Status.ResourceStatus.Manifests[5].ResourceMeta.Name = strings.Repeat("n", 100<<10)
		}, check: func(t *testing.T, w *workv1.ManifestWork) {
			ms := w.Status.ResourceStatus.Manifests
			if len(ms) != 19 || ms[5].ResourceMeta.Name != "hello-agent-6" {
				t.Fatalf("%d entries kept, the sixth %q", len(ms), ms[5].ResourceMeta.Name)
			}
		}, report: []string{"status.resourceStatus.manifests[5]: an identity string longer than 253 bytes"}},
		{name: "many values each within the limits", change: func(w *workv1.ManifestWork) {
			// 64 values of 1 KiB per entry: the fifth such entry passes 256 KiB.
			for i := range 10 {
				vals := &w.Status.ResourceStatus.Manifests[i].StatusFeedbacks.Values
				*vals = (*vals)[:0]
				for j := range MaxFeedbackValues {
					*vals = append(*vals, stringValue(fmt.Sprintf("v%d", j), strings.Repeat("s", MaxFeedbackValueBytes)))
				}
			}
		}, check: func(t *testing.T, w *workv1.ManifestWork) {
			if n := len(w.Status.ResourceStatus.Manifests); n != 3 {
				t.Fatalf("%d entries kept, want 3", n)
			}
		}, report: []string{"status.resourceStatus.manifests[3:]: 17 entries beyond 262144 bytes of resource status"}},
		{name: "work conditions", change: func(w *workv1.ManifestWork) {
			w.Status.Conditions[0].Message = huge
			for i := range 20 {
				w.Status.Conditions = append(w.Status.Conditions, cond(fmt.Sprintf("Fake%d", i), "m"))
			}
		}, check: func(t *testing.T, w *workv1.ManifestWork) {
			if n := len(w.Status.Conditions); n != 2+MaxOtherConditions || len(w.Status.Conditions[0].Message) > addonstatus.MaxMessage {
				t.Fatalf("%d conditions kept, Applied's message %d bytes", n, len(w.Status.Conditions[0].Message))
			}
		}, report: []string{"status.conditions: 12 conditions of types addonops does not read", "the message of Applied (40960 bytes) cut to 2048 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := legitWork()
			tc.change(w)
			dropped := bound(w)
			tc.check(t, w)
			joined := strings.Join(dropped, "\n")
			for _, want := range tc.report {
				if !strings.Contains(joined, want) {
					t.Errorf("reported:\n%s\nwant it to contain %q", joined, want)
				}
			}
			if len(tc.report) == 0 && dropped != nil {
				t.Errorf("dropped %v, want nothing", dropped)
			}
			b, _ := json.Marshal(w.Status)
			if len(b) > 2*MaxResourceStatusBytes {
				t.Errorf("%d bytes of status kept", len(b))
			}
			again := w.DeepCopy()
			if d := bound(again); d != nil || !equality.Semantic.DeepEqual(again, w) {
				t.Errorf("bounding again dropped %v", d)
			}
		})
	}
}

// Each object version that loses something is reported once (a relist hands the same version
// again), a new version again, and a deleted object's record goes.
func TestBoundDecodedReportsOncePerVersion(t *testing.T) {
	c := newTestCache()
	var told []*Trimmed
	c.OnTrimmed(func(tr *Trimmed) { told = append(told, tr) })
	hostile := func(rv string) *workv1.ManifestWork {
		w := legitWork()
		w.ResourceVersion = rv
		w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values = append(w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values,
			stringValue("PodPhase", strings.Repeat("x", 5000)))
		return w
	}
	c.boundDecoded(kindWork, hostile("10"))
	c.boundDecoded(kindWork, hostile("10"))
	c.boundDecoded(kindWork, legitWork())
	c.boundDecoded(kindWork, hostile("11"))
	if len(told) != 2 || told[0].ResourceVersion != "10" || told[1].ResourceVersion != "11" {
		t.Fatalf("told %d times: %+v", len(told), told)
	}
	r := told[0].Reference()
	if r.Kind != KindManifestWork || r.APIVersion != "work.open-cluster-management.io/v1" || r.Namespace != "c1" || r.Name != "addon-hello-deploy-0" {
		t.Errorf("reference %+v", r)
	}
	c.trimmed.forget(KindManifestWork, hostile("11"))
	c.boundDecoded(kindWork, hostile("11"))
	if len(told) != 3 {
		t.Fatalf("a re-created object's version was not told: %d", len(told))
	}
}

// The check on objects within the limits, as every decoded MCA and work takes it.
func BenchmarkBoundWithinLimits(b *testing.B) {
	for _, obj := range []runtime.Object{legitMCA(), legitWork()} {
		b.Run(fmt.Sprintf("%T", obj), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bound(obj)
			}
		})
	}
}
