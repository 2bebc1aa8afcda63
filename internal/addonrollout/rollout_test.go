package addonrollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
)

// The config kinds a decision asks the cache to watch (and so, for a kind not seen before, to look
// up with discovery): the CMA's defaults and placement configs, and only those MCA configs whose
// type the CMA supports. An MCA's spec may name any number of made-up types; none is looked up.
func TestReferencedResources(t *testing.T) {
	adc := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	cm := addonv1alpha1.ConfigGroupResource{Resource: "configmaps"}
	tmpl := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addontemplates"}
	secret := addonv1alpha1.ConfigGroupResource{Resource: "secrets"}
	cma := func(placementConfigs ...addonv1alpha1.ConfigGroupResource) *addonv1alpha1.ClusterManagementAddOn {
		c := &addonv1alpha1.ClusterManagementAddOn{Spec: addonv1alpha1.ClusterManagementAddOnSpec{
			SupportedConfigs: []addonv1alpha1.ConfigMeta{
				{ConfigGroupResource: adc, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "d"}},
				{ConfigGroupResource: tmpl}, // supported, no default: nothing to watch unless referenced
			},
		}}
		var cfgs []addonv1alpha1.AddOnConfig
		for _, gr := range placementConfigs {
			cfgs = append(cfgs, addonv1alpha1.AddOnConfig{ConfigGroupResource: gr})
		}
		c.Spec.InstallStrategy.Placements = []addonv1alpha1.PlacementStrategy{{Configs: cfgs}}
		return c
	}
	mca := func(grs ...addonv1alpha1.ConfigGroupResource) *addonv1alpha1.ManagedClusterAddOn {
		m := &addonv1alpha1.ManagedClusterAddOn{}
		for _, gr := range grs {
			m.Spec.Configs = append(m.Spec.Configs, addonv1alpha1.AddOnConfig{ConfigGroupResource: gr})
		}
		return m
	}
	var madeUp []addonv1alpha1.ConfigGroupResource
	for i := range 500 {
		madeUp = append(madeUp, addonv1alpha1.ConfigGroupResource{Group: fmt.Sprintf("g%d.example.com", i), Resource: "kinds"})
	}
	gr := func(c addonv1alpha1.ConfigGroupResource) configref.GroupResource {
		return configref.GroupResource{Group: c.Group, Resource: c.Resource}
	}
	for _, tc := range []struct {
		name string
		cma  *addonv1alpha1.ClusterManagementAddOn
		mcas []*addonv1alpha1.ManagedClusterAddOn
		want []configref.GroupResource
	}{
		{name: "defaults and placement configs", cma: cma(adc, cm), want: []configref.GroupResource{gr(adc), gr(cm)}},
		{name: "MCA config of a supported type", cma: cma(), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(tmpl)},
			want: []configref.GroupResource{gr(adc), gr(tmpl)}},
		{name: "MCA config of an unsupported type is not looked up", cma: cma(), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(secret, tmpl)},
			want: []configref.GroupResource{gr(adc), gr(tmpl)}},
		{name: "500 made-up types in an MCA's spec", cma: cma(adc), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(madeUp...), mca(madeUp[:7]...)},
			want: []configref.GroupResource{gr(adc)}},
		// A placement's config type is the administrator's choice (OCM configures add-ons through
		// placements alone): it is watched whether supported or not.
		{name: "placement config of a type not in supportedConfigs", cma: cma(cm), mcas: []*addonv1alpha1.ManagedClusterAddOn{mca(cm)},
			want: []configref.GroupResource{gr(adc), gr(cm)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := referencedResources(tc.cma, tc.mcas); !slices.Equal(got, tc.want) {
				t.Fatalf("referencedResources = %d kinds %v, want %v", len(got), got[:min(len(got), 5)], tc.want)
			}
		})
	}
}

func TestRolloutRecheck(t *testing.T) {
	tests := []struct {
		name            string
		planned         time.Duration
		stale, unserved bool
		want            time.Duration
	}{
		{name: "nothing to look at again", want: 0},
		{name: "the decision's own recheck", planned: 30 * time.Second, want: 30 * time.Second},
		{name: "stale MCAs and no recheck: soon", stale: true, want: rolloutStaleRecheck},
		{name: "stale MCAs bring a later recheck forward", planned: 30 * time.Second, stale: true, want: rolloutStaleRecheck},
		{name: "stale MCAs keep a sooner recheck", planned: 200 * time.Millisecond, stale: true, want: 200 * time.Millisecond},
		{name: "unserved config kind and no recheck: rediscover", unserved: true, want: hubcache.RediscoverAfter},
		{name: "unserved config kind brings a later recheck forward", planned: time.Minute, unserved: true, want: hubcache.RediscoverAfter},
		{name: "unserved config kind keeps a sooner recheck", planned: 5 * time.Second, unserved: true, want: 5 * time.Second},
		{name: "stale and unserved: the sooner of both", planned: time.Minute, stale: true, unserved: true, want: rolloutStaleRecheck},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rolloutRecheck(tc.planned, tc.stale, tc.unserved); got != tc.want {
				t.Fatalf("rolloutRecheck(%v, %v, %v) = %v, want %v", tc.planned, tc.stale, tc.unserved, got, tc.want)
			}
		})
	}
}

func TestEventType(t *testing.T) {
	tests := []struct {
		name string
		ev   rolloutplan.Event
		want string
	}{
		{name: "a warning", ev: rolloutplan.Event{Warning: true, Reason: addonstatus.ReasonUpgradeFailed}, want: corev1.EventTypeWarning},
		{name: "news", ev: rolloutplan.Event{Reason: addonstatus.ReasonUpgradeSucceed}, want: corev1.EventTypeNormal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := eventType(tc.ev); got != tc.want {
				t.Fatalf("eventType = %q, want %q", got, tc.want)
			}
		})
	}
}

// The deployer-wait Warning goes out once per episode per add-on: again only once no cluster waits
// any more and then one does, and one add-on's episode says nothing of another's.
func TestDeployerEvent(t *testing.T) {
	type step struct {
		uid      string
		waiting  []string
		wantEmit bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "nobody waits: nothing", steps: []step{{uid: "u1"}, {uid: "u1"}}},
		{name: "an episode is reported once", steps: []step{
			{uid: "u1", waiting: []string{"c1"}, wantEmit: true},
			{uid: "u1", waiting: []string{"c1", "c2"}},
			{uid: "u1", waiting: []string{"c2"}},
		}},
		{name: "an ended episode is forgotten: the next one is reported", steps: []step{
			{uid: "u1", waiting: []string{"c1"}, wantEmit: true},
			{uid: "u1"},
			{uid: "u1", waiting: []string{"c1"}, wantEmit: true},
		}},
		{name: "each add-on (by UID) has its own episodes", steps: []step{
			{uid: "u1", waiting: []string{"c1"}, wantEmit: true},
			{uid: "u2", waiting: []string{"c1"}, wantEmit: true},
			{uid: "u2"},
			{uid: "u1", waiting: []string{"c1"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Rollout{opts: RolloutOptions{DeployerWait: time.Minute}}
			for i, s := range tc.steps {
				cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: types.UID(s.uid)}}
				ev, emit := r.deployerEvent(cma, s.waiting)
				if emit != s.wantEmit {
					t.Fatalf("step %d (%s waiting %v): emit %v, want %v", i, s.uid, s.waiting, emit, s.wantEmit)
				}
				if emit && (ev.Reason != addonstatus.ReasonWaitingForDeployer || !ev.Warning) {
					t.Fatalf("step %d: event %+v, want a WaitingForDeployer warning", i, ev)
				}
			}
		})
	}
}

func TestHistoryAddon(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "h", Annotations: map[string]string{history.AddonAnnotation: "a"}}}
	tests := []struct {
		name   string
		obj    any
		want   string
		wantOK bool
	}{
		{name: "a history", obj: cm, want: "a", wantOK: true},
		{name: "a deleted history's tombstone", obj: cache.DeletedFinalStateUnknown{Obj: cm}, want: "a", wantOK: true},
		{name: "a ConfigMap naming no add-on", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "h"}}},
		{name: "an empty annotation", obj: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{history.AddonAnnotation: ""}}}},
		{name: "not a ConfigMap", obj: &addonv1alpha1.ClusterManagementAddOn{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := historyAddon(tc.obj)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("historyAddon = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// A version history is read only from a ConfigMap that is the add-on's own: owned by its CMA (name
// and UID), a record of the expected form, of that add-on. What the controller writes reads back.
func TestCheckHistory(t *testing.T) {
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u1"}}
	rec := &history.Record{Addon: "a", Placements: []history.Placement{{Placement: "ns/p"}}}
	data, err := rec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	other, err := (&history.Record{Addon: "b"}).Encode()
	if err != nil {
		t.Fatal(err)
	}
	own := newHistoryConfigMap("addonops", cma, data)
	with := func(f func(cm *corev1.ConfigMap)) *corev1.ConfigMap {
		cm := own.DeepCopy()
		f(cm)
		return cm
	}
	tests := []struct {
		name    string
		cm      *corev1.ConfigMap
		wantErr string
		newer   string
	}{
		{name: "the controller's own record", cm: own},
		{name: "no ownerReference", cm: with(func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil }), wantErr: "no ownerReference"},
		{name: "owned by a deleted add-on of the same name", cm: with(func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].UID = "u0" }), wantErr: "UID [u0]"},
		{name: "owned by another add-on", cm: with(func(cm *corev1.ConfigMap) { cm.OwnerReferences[0].Name = "b" }), wantErr: "no ownerReference"},
		{name: "not JSON", cm: with(func(cm *corev1.ConfigMap) { cm.Data[history.DataKey] = "{" }), wantErr: "not valid JSON"},
		{name: "no record at all", cm: with(func(cm *corev1.ConfigMap) { cm.Data = nil }), wantErr: "not valid JSON"},
		// A newer controller's record: read (readHistory then never writes it).
		{name: "fields a newer controller wrote", cm: with(func(cm *corev1.ConfigMap) {
			cm.Data[history.DataKey] = `{"addon":"a","placements":[{"placement":"ns/p"}],"extra":1}`
		}), newer: `"extra"`},
		{name: "fields a newer controller wrote, and a malformed one", cm: with(func(cm *corev1.ConfigMap) { cm.Data[history.DataKey] = `{"addon":"a","extra":1,"placements":3}` }), wantErr: "not valid JSON"},
		{name: "another add-on's record", cm: with(func(cm *corev1.ConfigMap) { cm.Data[history.DataKey] = other }), wantErr: `records add-on "b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkHistory(tc.cm, cma)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
					t.Fatalf("checkHistory = %v, %v; want no record and an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got == nil || got.Addon != "a" || len(got.Placements) != 1 || got.Placements[0].Placement != "ns/p" || got.Newer != tc.newer {
				t.Fatalf("checkHistory = %+v, %v; want the record (Newer %q)", got, err, tc.newer)
			}
		})
	}
}

func TestNewHistoryConfigMap(t *testing.T) {
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "u1"}}
	cm := newHistoryConfigMap("addonops", cma, "{}")
	tests := []struct {
		name      string
		got, want string
	}{
		{name: "namespace", got: cm.Namespace, want: "addonops"},
		{name: "name", got: cm.Name, want: history.ConfigMapName("a")},
		{name: "label finding it", got: cm.Labels[history.AddonLabel], want: history.AddonLabelValue("a")},
		{name: "managed-by", got: cm.Labels["app.kubernetes.io/managed-by"], want: "addonops"},
		{name: "annotation the watch reads", got: cm.Annotations[history.AddonAnnotation], want: "a"},
		{name: "data", got: cm.Data[history.DataKey], want: "{}"},
		{name: "owner check", got: fmt.Sprint(history.CheckOwner(cm.OwnerReferences, "a", "u1")), want: "<nil>"},
		{name: "owner is not the controller (a GC owner only)", got: fmt.Sprint(cm.OwnerReferences[0].Controller), want: "<nil>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("%s = %q, want %q", tc.name, tc.got, tc.want)
			}
		})
	}
}

func TestHistoryUpdate(t *testing.T) {
	tests := []struct {
		name      string
		data      map[string]string
		write     string
		wantWrite bool
	}{
		{name: "same record: nothing to write", data: map[string]string{history.DataKey: "v1", "note": "x"}, write: "v1"},
		{name: "a new record", data: map[string]string{history.DataKey: "v1", "note": "x"}, write: "v2", wantWrite: true},
		{name: "a ConfigMap emptied by a person", write: "v2", wantWrite: true},
		{name: "the key removed by a person", data: map[string]string{"note": "x"}, write: "v2", wantWrite: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "h", ResourceVersion: "5"}, Data: tc.data}
			before := cm.DeepCopy()
			got := historyUpdate(cm, tc.write)
			if !equality.Semantic.DeepEqual(before, cm) {
				t.Fatal("historyUpdate changed the cached ConfigMap")
			}
			if !tc.wantWrite {
				if got != nil {
					t.Fatalf("nothing to write, got %+v", got)
				}
				return
			}
			if got == nil || got.Data[history.DataKey] != tc.write || got.ResourceVersion != "5" {
				t.Fatalf("update %+v, want data %q at resourceVersion 5 (written from what it was computed on)", got, tc.write)
			}
			for k, v := range tc.data {
				if k != history.DataKey && got.Data[k] != v {
					t.Errorf("key %s: %q, want it kept (%q)", k, got.Data[k], v)
				}
			}
		})
	}
}

// The status of a CMA that does not decode: a progression per placement of its spec, each saying
// why it waits, keeping the config references it had so the rollout picks up where it stood; the
// same words again are no change (no write, no event).
func TestUndecodableCMAStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Hour))
	placements := func(names ...string) map[string]any {
		var ps []any
		for _, n := range names {
			ps = append(ps, map[string]any{"namespace": "ns", "name": n, "rolloutStrategy": map[string]any{"type": "Bogus"}})
		}
		return map[string]any{"installStrategy": map[string]any{"type": "Placements", "placements": ps}}
	}
	lkg := &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: "v1"}, SpecHash: "h1"}
	adc := addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}
	written := addonv1alpha1.ClusterManagementAddOnStatus{
		DefaultConfigReferences: []addonv1alpha1.DefaultConfigReference{{ConfigGroupResource: adc, DesiredConfig: lkg}},
		InstallProgressions: []addonv1alpha1.InstallProgression{
			{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "ns", Name: "p1"},
				ConfigReferences: []addonv1alpha1.InstallConfigReference{{ConfigGroupResource: adc, LastKnownGoodConfig: lkg, LastAppliedConfig: lkg}},
				Conditions:       []metav1.Condition{{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: addonstatus.ReasonUpgradeSucceed, LastTransitionTime: t0}}},
			{PlacementRef: addonv1alpha1.PlacementRef{Namespace: "ns", Name: "gone"}},
		}}
	toMap := func(st addonv1alpha1.ClusterManagementAddOnStatus) map[string]any {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// What the controller wrote for problem "bad" on placements p1 and p2.
	_, reported, _, _ := undecodableCMAStatus("a", map[string]any{"spec": placements("p1", "p2")}, addonstatus.ReasonInvalidRolloutStrategy, "bad", t0)

	tests := []struct {
		name           string
		obj            map[string]any
		problem        string
		wantPlacements []string
		wantChanged    bool
		wantOld        bool // the written status decoded
		wantKept       bool // p1 keeps its config references and the defaults stay
		wantLTT        metav1.Time
	}{
		{name: "never reported: a progression per placement", obj: map[string]any{"spec": placements("p1", "p2")}, problem: "bad",
			wantPlacements: []string{"p1", "p2"}, wantChanged: true, wantLTT: now},
		{name: "reported before with the same words: no change", obj: map[string]any{"spec": placements("p1", "p2"), "status": toMap(reported)}, problem: "bad",
			wantPlacements: []string{"p1", "p2"}, wantOld: true, wantLTT: t0},
		{name: "a new problem is a change", obj: map[string]any{"spec": placements("p1", "p2"), "status": toMap(reported)}, problem: "worse",
			wantPlacements: []string{"p1", "p2"}, wantChanged: true, wantOld: true, wantLTT: t0},
		// Progressing was False already (the upgrade had succeeded): it did not turn.
		{name: "a rollout that stood somewhere keeps its config references; a placement left the spec", obj: map[string]any{"spec": placements("p1"), "status": toMap(written)}, problem: "bad",
			wantPlacements: []string{"p1"}, wantChanged: true, wantOld: true, wantKept: true, wantLTT: t0},
		{name: "a written status that does not decode is written anew", obj: map[string]any{"spec": placements("p1"), "status": map[string]any{"installProgressions": "nonsense"}}, problem: "bad",
			wantPlacements: []string{"p1"}, wantChanged: true, wantLTT: now},
		// The caller says it in an event instead, writing nothing.
		{name: "no placements: nothing to say it in", obj: map[string]any{"spec": map[string]any{}, "status": toMap(written)}, problem: "bad", wantOld: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old, st, n, changed := undecodableCMAStatus("a", tc.obj, addonstatus.ReasonInvalidRolloutStrategy, tc.problem, now)
			if changed != tc.wantChanged {
				t.Errorf("changed %v, want %v", changed, tc.wantChanged)
			}
			if n != len(tc.wantPlacements) {
				t.Errorf("placements %d, want %d", n, len(tc.wantPlacements))
			}
			if got := len(old.InstallProgressions) > 0; got != tc.wantOld {
				t.Errorf("old status decoded %v, want %v (%+v)", got, tc.wantOld, old)
			}
			if n > 0 && !tc.wantChanged && !equality.Semantic.DeepEqual(old, st) {
				t.Errorf("no change, yet the status differs from the written one (a write):\n%+v\n%+v", old, st)
			}
			var got []string
			for _, ip := range st.InstallProgressions {
				got = append(got, ip.Name)
				c := rolloutplan.ProgressingOf(&ip)
				key := rolloutplan.PlacementKey{Namespace: "ns", Name: ip.Name}
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != addonstatus.ReasonInvalidRolloutStrategy || c.Message != undecodableCMAMessage("a", key, tc.problem) {
					t.Errorf("%s: Progressing %+v, want False InvalidRolloutStrategy naming the problem", ip.Name, c)
				} else if !c.LastTransitionTime.Equal(&tc.wantLTT) {
					t.Errorf("%s: Progressing turned at %v, want %v", ip.Name, c.LastTransitionTime, tc.wantLTT)
				}
			}
			if !slices.Equal(got, tc.wantPlacements) {
				t.Errorf("progressions %v, want %v", got, tc.wantPlacements)
			}
			if tc.wantKept {
				if len(st.InstallProgressions[0].ConfigReferences) != 1 || st.InstallProgressions[0].ConfigReferences[0].LastKnownGoodConfig == nil ||
					*st.InstallProgressions[0].ConfigReferences[0].LastKnownGoodConfig != *lkg {
					t.Errorf("p1's config references %+v, want the last known good kept", st.InstallProgressions[0].ConfigReferences)
				}
				if !equality.Semantic.DeepEqual(st.DefaultConfigReferences, written.DefaultConfigReferences) {
					t.Errorf("default config references %+v, want them kept", st.DefaultConfigReferences)
				}
			}
		})
	}
}

// The add-ons told that a config kind may not be read: the managed ones referencing it, each once.
func TestForbiddenNews(t *testing.T) {
	adc := addonv1alpha1.ConfigGroupResource{Group: configref.AddonGroup, Resource: "addondeploymentconfigs"}
	secret := addonv1alpha1.ConfigGroupResource{Resource: "secrets"}
	gr := configref.GroupResource{Group: adc.Group, Resource: adc.Resource}
	cma := func(name string, supported ...addonv1alpha1.ConfigGroupResource) *addonv1alpha1.ClusterManagementAddOn {
		c := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, s := range supported {
			c.Spec.SupportedConfigs = append(c.Spec.SupportedConfigs, addonv1alpha1.ConfigMeta{ConfigGroupResource: s, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: "d"}})
		}
		return c
	}
	// "viamca" supports the kind without a default: only an MCA's config references it.
	viaMCA := cma("viamca")
	viaMCA.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{ConfigGroupResource: adc}}
	mcas := map[string][]*addonv1alpha1.ManagedClusterAddOn{
		"viamca": {{Spec: addonv1alpha1.ManagedClusterAddOnSpec{Configs: []addonv1alpha1.AddOnConfig{{ConfigGroupResource: adc}}}}},
	}
	mcasOf := func(name string) []*addonv1alpha1.ManagedClusterAddOn { return mcas[name] }
	unmanaged := map[string]bool{"theirs": true}
	managed := func(c *addonv1alpha1.ClusterManagementAddOn) bool { return !unmanaged[c.Name] }

	tests := []struct {
		name     string
		cmas     []*addonv1alpha1.ClusterManagementAddOn
		told     map[string]bool
		want     []string
		wantTold []string
	}{
		{name: "the add-ons referencing the kind", cmas: []*addonv1alpha1.ClusterManagementAddOn{cma("a", adc), cma("b", secret), cma("c", secret, adc)},
			want: []string{"a", "c"}, wantTold: []string{"a", "c"}},
		{name: "already told: not again", cmas: []*addonv1alpha1.ClusterManagementAddOn{cma("a", adc), cma("c", adc)}, told: map[string]bool{"a": true},
			want: []string{"c"}, wantTold: []string{"a", "c"}},
		{name: "an add-on another controller manages is not told", cmas: []*addonv1alpha1.ClusterManagementAddOn{cma("theirs", adc)}},
		{name: "referenced by an MCA's config of a supported type", cmas: []*addonv1alpha1.ClusterManagementAddOn{viaMCA}, want: []string{"viamca"}, wantTold: []string{"viamca"}},
		{name: "nobody references it", cmas: []*addonv1alpha1.ClusterManagementAddOn{cma("b", secret)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			told := map[string]bool{}
			for k, v := range tc.told {
				told[k] = v
			}
			var got []string
			for _, c := range forbiddenNews(gr, tc.cmas, managed, mcasOf, told) {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("told now %v, want %v", got, tc.want)
			}
			var all []string
			for k := range told {
				all = append(all, k)
			}
			slices.Sort(all)
			if !slices.Equal(all, tc.wantTold) {
				t.Errorf("told so far %v, want %v", all, tc.wantTold)
			}
		})
	}
}

// Why a CMA does not decode: when its rollout strategies' problems are all there is, the reason is
// InvalidRolloutStrategy naming the fields; with another problem too, Undecodable with both.
func TestUndecodableCMA(t *testing.T) {
	placement := func(name string, strategy map[string]any) any {
		p := map[string]any{"namespace": "ns", "name": name}
		if strategy != nil {
			p["rolloutStrategy"] = strategy
		}
		return p
	}
	forever := map[string]any{"type": "Progressive", "progressive": map[string]any{"maxConcurrency": int64(1), "minSuccessTime": "forever"}}
	fine := map[string]any{"type": "All"}
	obj := func(addOnMeta map[string]any, placements ...any) *unstructured.Unstructured {
		spec := map[string]any{"installStrategy": map[string]any{"type": "Placements", "placements": placements}}
		if addOnMeta != nil {
			spec["addOnMeta"] = addOnMeta
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": addonv1alpha1.GroupVersion.String(), "kind": "ClusterManagementAddOn",
			"metadata": map[string]any{"name": "a"}, "spec": spec}}
	}
	badMeta := map[string]any{"displayName": int64(5)}
	const foreverMsg = `rolloutStrategy.progressive.minSuccessTime: "forever" is not a Go duration`
	tests := []struct {
		name         string
		obj          *unstructured.Unstructured
		wantReason   string
		wantErrFirst bool // the problem starts with the converter's error
		wantContains []string
		wantLacks    string
	}{
		{name: "an invalid rollout strategy alone", obj: obj(nil, placement("p", forever)), wantReason: addonstatus.ReasonInvalidRolloutStrategy,
			wantContains: []string{"spec.installStrategy.placements[0]." + foreverMsg}, wantLacks: "also"},
		{name: "the field's path names the placement's index", obj: obj(nil, placement("ok", fine), placement("p", forever)), wantReason: addonstatus.ReasonInvalidRolloutStrategy,
			wantContains: []string{"spec.installStrategy.placements[1]." + foreverMsg}, wantLacks: "placements[0]"},
		{name: "an invalid rollout strategy and another field", obj: obj(badMeta, placement("p", forever)), wantReason: addonstatus.ReasonUndecodable,
			// The converter's error (it stops at the first field it cannot hold) and the strategy's.
			wantErrFirst: true, wantContains: []string{" (also: spec.installStrategy.placements[0]." + foreverMsg}},
		{name: "another field alone", obj: obj(badMeta, placement("p", fine)), wantReason: addonstatus.ReasonUndecodable,
			wantErrFirst: true, wantContains: []string{"displayName"}, wantLacks: "also"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decodeErr := hubcache.Decode(tc.obj, &addonv1alpha1.ClusterManagementAddOn{})
			if decodeErr == nil {
				t.Fatal("the test object decodes: it no longer reproduces the problem")
			}
			before := tc.obj.DeepCopy()
			reason, problem := undecodableCMA(&hubcache.DecodeError{Name: "a", Err: decodeErr, Object: tc.obj})
			if reason != tc.wantReason {
				t.Errorf("reason %s, want %s (problem %q)", reason, tc.wantReason, problem)
			}
			if tc.wantErrFirst != strings.HasPrefix(problem, decodeErr.Error()) {
				t.Errorf("problem %q starts with the converter's error %q: %v, want %v", problem, decodeErr, !tc.wantErrFirst, tc.wantErrFirst)
			}
			for _, w := range tc.wantContains {
				if !strings.Contains(problem, w) {
					t.Errorf("problem %q lacks %q", problem, w)
				}
			}
			if tc.wantLacks != "" && strings.Contains(problem, tc.wantLacks) {
				t.Errorf("problem %q has %q", problem, tc.wantLacks)
			}
			if !equality.Semantic.DeepEqual(before, tc.obj) {
				t.Error("undecodableCMA changed the object (the cache's)")
			}
		})
	}
}
