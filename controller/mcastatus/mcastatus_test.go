package mcastatus

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	rollout "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

var (
	adc  = configref.GroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	tmpl = configref.GroupResource{Group: configref.AddonGroup, Resource: "addontemplates"}
	cm   = configref.GroupResource{Group: "", Resource: "configmaps"}
	t0   = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t1   = metav1.NewTime(t0.Add(time.Minute))
)

func cfg(gr configref.GroupResource, ns, name, hash string) Config {
	return Config{Ref: configref.Ref{GroupResource: gr, Namespace: ns, Name: name}, SpecHash: hash}
}

func hashOf(c Config) *addonv1alpha1.ConfigSpecHash { return c.SpecHashOf() }

func ref(desired, applied *Config) addonv1alpha1.ConfigReference {
	c := desired
	if c == nil {
		c = applied
	}
	r := addonv1alpha1.ConfigReference{
		ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: c.Group, Resource: c.Resource},
		ConfigReferent:      addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name},
	}
	if desired != nil {
		r.DesiredConfig = hashOf(*desired)
	}
	if applied != nil {
		r.LastAppliedConfig = hashOf(*applied)
	}
	return r
}

func mca(refs []addonv1alpha1.ConfigReference, conds ...metav1.Condition) *addonv1alpha1.ManagedClusterAddOn {
	return &addonv1alpha1.ManagedClusterAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "c1"},
		Status:     addonv1alpha1.ManagedClusterAddOnStatus{ConfigReferences: refs, Conditions: conds},
	}
}

func cond(t, status, reason string, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, LastTransitionTime: at}
}

var (
	a1 = cfg(adc, "default", "cfg-a", "aaaa")
	b1 = cfg(adc, "default", "cfg-b", "bbbb")
	tp = cfg(tmpl, "", "tmpl", "tttt")
)

// The annotation must be byte-compatible with what addon-framework writes (reference §5.2).
func TestConfigSpecHashes(t *testing.T) {
	refs := []addonv1alpha1.ConfigReference{
		ref(&Config{Ref: configref.Ref{GroupResource: adc, Namespace: "default", Name: "hello-config"}, SpecHash: "h1"}, nil),
		ref(&Config{Ref: configref.Ref{GroupResource: tmpl, Name: "hello-template"}, SpecHash: "h2"}, nil),
		ref(&Config{Ref: configref.Ref{GroupResource: cm, Namespace: "ns", Name: "cm"}, SpecHash: "h3"}, nil),
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Resource: "x"}}, // no desired: ignored
	}
	b, err := json.Marshal(ConfigSpecHashes(refs))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/hello-config":"h1","addontemplates.addon.open-cluster-management.io//hello-template":"h2","configmaps/ns/cm":"h3"}`
	if string(b) != want {
		t.Fatalf("annotation = %s\nwant        %s", b, want)
	}
	if ConfigSpecHashes(nil) != nil {
		t.Fatal("no configs must give no annotation map")
	}
}

func work(name string, gen int64, annotation string, conds ...metav1.Condition) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "c1", Generation: gen,
		Labels: map[string]string{addonv1alpha1.AddonLabelKey: "hello"}}}
	if annotation != "" {
		w.Annotations = map[string]string{ConfigSpecHashAnnotation: annotation}
	}
	w.Status.Conditions = conds
	return w
}

func wcond(t, status string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: "R", Message: "m", ObservedGeneration: gen}
}

func TestWorkMatches(t *testing.T) {
	withB := []addonv1alpha1.ConfigReference{ref(&b1, nil)}
	annB := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"bbbb"}`
	cases := []struct {
		name string
		ann  string
		refs []addonv1alpha1.ConfigReference
		want bool
	}{
		{"no annotation, no configs", "", nil, true},
		{"no annotation, configs", "", withB, false},
		{"equal", annB, withB, true},
		{"other hash", `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"cccc"}`, withB, false},
		{"extra key", `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"bbbb","x/y/z":"1"}`, withB, false},
		{"empty value in annotation", `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":""}`, []addonv1alpha1.ConfigReference{ref(&Config{Ref: b1.Ref}, nil)}, false},
		{"empty desired hash", `{}`, []addonv1alpha1.ConfigReference{ref(&Config{Ref: b1.Ref}, nil)}, false},
		{"not JSON", `{`, withB, false},
		{"annotation but no configs", annB, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := workMatches(work("w", 1, tc.ann), tc.refs); got != tc.want {
				t.Fatalf("workMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWithDesired(t *testing.T) {
	cases := []struct {
		name   string
		old    []addonv1alpha1.ConfigReference
		target []Config
		want   []addonv1alpha1.ConfigReference
	}{
		{"fresh", nil, []Config{tp, a1}, []addonv1alpha1.ConfigReference{ref(&a1, nil), ref(&tp, nil)}},
		{
			"renamed config keeps lastApplied of its group/resource slot",
			[]addonv1alpha1.ConfigReference{ref(&a1, &a1)},
			[]Config{b1},
			[]addonv1alpha1.ConfigReference{ref(&b1, &a1)},
		},
		{
			"dropped group/resource disappears, new one appended in group/resource order",
			[]addonv1alpha1.ConfigReference{ref(&tp, &tp)},
			[]Config{a1},
			[]addonv1alpha1.ConfigReference{ref(&a1, nil)},
		},
		{
			"two configs of one group/resource keep their slots",
			[]addonv1alpha1.ConfigReference{ref(&a1, &a1), ref(&b1, &b1)},
			[]Config{b1, a1},
			[]addonv1alpha1.ConfigReference{ref(&b1, &a1), ref(&a1, &b1)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := WithDesired(tc.old, tc.target)
			if !equalJSON(t, got, tc.want) {
				t.Fatalf("WithDesired =\n%s\nwant\n%s", js(t, got), js(t, tc.want))
			}
		})
	}
	old := []addonv1alpha1.ConfigReference{ref(&a1, &a1)}
	old[0].LastObservedGeneration = 7
	if g := WithDesired(old, []Config{cfg(adc, "default", "cfg-a", "new")})[0].LastObservedGeneration; g != 7 {
		t.Fatalf("same object: lastObservedGeneration = %d, want kept 7", g)
	}
	if g := WithDesired(old, []Config{b1})[0].LastObservedGeneration; g != 0 {
		t.Fatalf("other object: lastObservedGeneration = %d, want reset", g)
	}
}

func js(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func equalJSON(t *testing.T, a, b any) bool { return js(t, a) == js(t, b) }

func TestApplied(t *testing.T) {
	cases := []struct {
		name string
		m    *addonv1alpha1.ManagedClusterAddOn
		want bool
	}{
		{"all applied", mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1), ref(&tp, &tp)}), true},
		{"one not applied", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1), ref(&tp, &tp)}), false},
		{"never applied", mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}), false},
		{"same name, other hash", mca([]addonv1alpha1.ConfigReference{ref(&a1, &Config{Ref: a1.Ref, SpecHash: "old"})}), false},
		{"no configs, succeeded", mca(nil, cond(ConditionProgressing, "False", ReasonInstallSucceed, t0)), true},
		{"no configs, installing", mca(nil, cond(ConditionProgressing, "True", ReasonInstalling, t0)), false},
		{"no configs, nothing", mca(nil), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Applied(tc.m); got != tc.want {
				t.Fatalf("Applied = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	var conds []metav1.Condition
	if !SetCondition(&conds, cond("P", "True", "A", metav1.Time{}), t0, false) || !conds[0].LastTransitionTime.Equal(&t0) {
		t.Fatalf("new condition: %+v", conds)
	}
	if SetCondition(&conds, cond("P", "True", "A", metav1.Time{}), t1, false) {
		t.Fatal("same condition reported as a change")
	}
	if !SetCondition(&conds, cond("P", "True", "B", metav1.Time{}), t1, false) || !conds[0].LastTransitionTime.Equal(&t0) {
		t.Fatalf("reason change must keep the transition time: %+v", conds)
	}
	if !SetCondition(&conds, cond("P", "True", "B", metav1.Time{}), t1, true) || !conds[0].LastTransitionTime.Equal(&t1) {
		t.Fatalf("restart must move the transition time: %+v", conds)
	}
	if !SetCondition(&conds, cond("P", "False", "B", metav1.Time{}), t0, false) || !conds[0].LastTransitionTime.Equal(&t0) {
		t.Fatalf("status flip must move the transition time: %+v", conds)
	}
}

func TestProgress(t *testing.T) {
	annA := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-a":"aaaa"}`
	annB := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"bbbb"}`
	ok2 := []metav1.Condition{wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "True", 2)}
	configured := cond(ConditionConfigured, "True", ReasonConfigured, t0)
	installing := cond(ConditionProgressing, "True", ReasonInstalling, t0)
	upgrading := cond(ConditionProgressing, "True", ReasonUpgrading, t0)
	cases := []struct {
		name        string
		m           *addonv1alpha1.ManagedClusterAddOn
		works       []*workv1.ManifestWork
		wantReason  string // "" = no Progressing condition
		wantStatus  string
		wantApplied bool
		wantMsg     string
	}{
		{"not started: no configs, not configured", mca(nil), nil, "", "", false, ""},
		{"install, no work yet", mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing), nil,
			ReasonInstalling, "True", false, MessageInstalling},
		{"install, stale work", mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, ok2...)}, ReasonInstalling, "True", false, MessageInstalling},
		{"install, ready", mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, ReasonInstallSucceed, "False", true, MessageInstallSucceed},
		{"upgrade, ready", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, upgrading),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, ok2...)}, ReasonUpgradeSucceed, "False", true, MessageUpgradeSucceed},
		{"upgrade, Applied=False at generation", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, upgrading),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2))}, ReasonUpgradeFailed, "False", false, "Applied=False at generation 2"},
		{"install, Available=False at generation", mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "False", 2))}, ReasonInstallFailed, "False", false, "Available=False"},
		{"failure of an older generation is not a failure", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, upgrading),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 1))}, ReasonUpgrading, "True", false, MessageUpgrading},
		{"ready at an older generation is not ready", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, upgrading),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 3, annB, ok2...)}, ReasonUpgrading, "True", false, MessageUpgrading},
		{"stale work outranks failed work", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, upgrading),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2)), work("addon-hello-deploy-1", 2, annA, ok2...)},
			ReasonUpgrading, "True", false, MessageUpgrading},
		{"every work must be ready", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, upgrading),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, ok2...), work("addon-hello-deploy-1", 2, annB)},
			ReasonUpgrading, "True", false, MessageUpgrading},
		{"applied stays succeeded even if a work fails later", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(ConditionProgressing, "False", ReasonUpgradeSucceed, t0)),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2))}, ReasonUpgradeSucceed, "False", true, ""},
		{"no configs: works without annotation install it", mca(nil, configured),
			[]*workv1.ManifestWork{work("addon-hello-deploy-0", 2, "", ok2...)}, ReasonInstallSucceed, "False", false, MessageInstallSucceed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := js(t, tc.m)
			st := Progress(tc.m, AddonWorks("hello", tc.works), t1)
			if js(t, tc.m) != before {
				t.Fatal("Progress modified its input")
			}
			c := meta.FindStatusCondition(st.Conditions, ConditionProgressing)
			if tc.wantReason == "" {
				if c != nil {
					t.Fatalf("Progressing = %+v, want none", c)
				}
				return
			}
			if c == nil || c.Reason != tc.wantReason || string(c.Status) != tc.wantStatus || !strings.Contains(c.Message, tc.wantMsg) {
				t.Fatalf("Progressing = %+v, want %s/%s containing %q", c, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			got := &addonv1alpha1.ManagedClusterAddOn{Status: st}
			if len(st.ConfigReferences) > 0 && Applied(got) != tc.wantApplied {
				t.Fatalf("applied = %v, want %v: %s", Applied(got), tc.wantApplied, js(t, st.ConfigReferences))
			}
		})
	}
}

func TestAddonWorks(t *testing.T) {
	hosted := work("addon-hello-deploy-hosting-c2-0", 1, "")
	hosted.Labels[addonv1alpha1.AddonNamespaceLabelKey] = "c2"
	other := work("addon-other-deploy-0", 1, "")
	other.Labels[addonv1alpha1.AddonLabelKey] = "other"
	got := AddonWorks("hello", []*workv1.ManifestWork{work("addon-hello-deploy-1", 1, ""), hosted, other,
		work("addon-hello-pre-delete", 1, ""), work("addon-hello-deploy-0", 1, "")})
	if len(got) != 2 || got[0].Name != "addon-hello-deploy-0" || got[1].Name != "addon-hello-deploy-1" {
		t.Fatalf("AddonWorks picked %v", names(got))
	}
}

func names(ws []*workv1.ManifestWork) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return out
}

func TestRolloutStatus(t *testing.T) {
	configured := cond(ConditionConfigured, "True", ReasonConfigured, t0)
	target := []Config{b1}
	cases := []struct {
		name    string
		m       *addonv1alpha1.ManagedClusterAddOn
		want    rollout.RolloutStatus
		wantLTT *metav1.Time
	}{
		{"no status", mca(nil), rollout.ToApply, nil},
		{"other desired", mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured), rollout.ToApply, nil},
		{"target but not configured", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, cond(ConditionConfigured, "False", ReasonNotConfigured, t0)), rollout.ToApply, nil},
		{"held but already running target", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, cond(ConditionConfigured, "False", ReasonNotConfigured, t0), cond(ConditionProgressing, "False", ReasonUpgradeSucceed, t1)), rollout.Succeeded, &t1},
		{"succeeded", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(ConditionProgressing, "False", ReasonUpgradeSucceed, t1)), rollout.Succeeded, &t1},
		{"succeeded under a foreign reason", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(ConditionProgressing, "False", "Completed", t1)), rollout.Succeeded, &longAgo},
		{"failed", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(ConditionProgressing, "False", ReasonUpgradeFailed, t1)), rollout.Failed, &t1},
		{"progressing", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(ConditionProgressing, "True", ReasonUpgrading, t1)), rollout.Progressing, &t1},
		{"progressing, foreign reason: no clock", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(ConditionProgressing, "False", ReasonUpgradeSucceed, t1)), rollout.Progressing, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RolloutStatus("c1", tc.m, target)
			if got.Status != tc.want || got.ClusterName != "c1" {
				t.Fatalf("status = %v, want %v", got.Status, tc.want)
			}
			if (got.LastTransitionTime == nil) != (tc.wantLTT == nil) || got.LastTransitionTime != nil && !got.LastTransitionTime.Equal(tc.wantLTT) {
				t.Fatalf("lastTransitionTime = %v, want %v", got.LastTransitionTime, tc.wantLTT)
			}
		})
	}
}

func TestPushHoldKeep(t *testing.T) {
	annA := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-a":"aaaa"}`
	ready := []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "True", 2))}
	succeeded := cond(ConditionProgressing, "False", ReasonUpgradeSucceed, t0)
	configured := cond(ConditionConfigured, "True", ReasonConfigured, t0)

	t.Run("push restarts the progress clock", func(t *testing.T) {
		m := mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, succeeded)
		st := Push(m, []Config{b1}, ready, t1)
		p := meta.FindStatusCondition(st.Conditions, ConditionProgressing)
		if p.Reason != ReasonUpgrading || p.Status != metav1.ConditionTrue || !p.LastTransitionTime.Equal(&t1) {
			t.Fatalf("Progressing = %+v", p)
		}
		if !equalJSON(t, st.ConfigReferences, []addonv1alpha1.ConfigReference{ref(&b1, &a1)}) {
			t.Fatalf("configReferences = %s", js(t, st.ConfigReferences))
		}
	})
	t.Run("push to the version still running finishes at once", func(t *testing.T) {
		// Rolled to b, never applied it, rolled back to a: its works still run a.
		m := mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(ConditionProgressing, "True", ReasonUpgrading, t0))
		st := Push(m, []Config{a1}, ready, t1)
		p := meta.FindStatusCondition(st.Conditions, ConditionProgressing)
		if p.Reason != ReasonUpgradeSucceed || !Applied(&addonv1alpha1.ManagedClusterAddOn{Status: st}) {
			t.Fatalf("Progressing = %+v, refs %s", p, js(t, st.ConfigReferences))
		}
	})
	t.Run("first push of a fresh MCA is an install", func(t *testing.T) {
		st := Push(mca(nil), []Config{a1}, nil, t1)
		if p := meta.FindStatusCondition(st.Conditions, ConditionProgressing); p.Reason != ReasonInstalling {
			t.Fatalf("Progressing = %+v", p)
		}
		if c := meta.FindStatusCondition(st.Conditions, ConditionConfigured); c.Status != metav1.ConditionTrue || c.Reason != ReasonConfigured || c.Message != MessageConfigured {
			t.Fatalf("Configured = %+v", c)
		}
	})
	t.Run("hold", func(t *testing.T) {
		m := mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, succeeded)
		st := Hold(m, t1)
		c := meta.FindStatusCondition(st.Conditions, ConditionConfigured)
		if c.Status != metav1.ConditionFalse || c.Reason != "ConfigurationsNotConfigured" || c.Message != "Configurations updated and not configured yet" {
			t.Fatalf("Configured = %+v", c)
		}
		if !equalJSON(t, st.ConfigReferences, m.Status.ConfigReferences) {
			t.Fatal("hold changed the desired configs")
		}
		if !equalJSON(t, Keep(&addonv1alpha1.ManagedClusterAddOn{Status: st}, t1).ConfigReferences, m.Status.ConfigReferences) {
			t.Fatal("keep changed the desired configs")
		}
	})
}
