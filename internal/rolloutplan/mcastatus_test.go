package rolloutplan

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

	"github.com/addonops/addonops/internal/addonstatus"
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

// soaking is a HealthSoak condition: works ready and the add-on healthy since at.
func soaking(at metav1.Time) metav1.Condition {
	return cond(addonstatus.ConditionHealthSoak, "True", addonstatus.ReasonSoaking, at)
}

var (
	a1 = cfg(adc, "default", "cfg-a", "aaaa")
	b1 = cfg(adc, "default", "cfg-b", "bbbb")
	tp = cfg(tmpl, "", "tmpl", "tttt")
)

// The annotation must be byte-compatible with what addon-framework's agentdeploy writes on the works
// it builds (ManifestConfigSpecHashAnnotationKey).
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
		{"no configs, succeeded", mca(nil, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonInstallSucceed, t0)), true},
		{"no configs, installing", mca(nil, cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonInstalling, t0)), false},
		{"no configs, nothing", mca(nil), false},
		{"carried over but the change is not checked yet", mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonRollingBack, t0)), false},
		{"failed", mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonRollbackFailed, t0)), false},
		{"foreign reason", mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, cond(addonstatus.ConditionProgressing, "False", "Completed", t0)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := addonstatus.Applied(tc.m); got != tc.want {
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
	configured := cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0)
	installing := cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonInstalling, t0)
	upgrading := cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonUpgrading, t0)
	rollingBack := cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonRollingBack, t0)
	deployed := cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t0)
	healthy := cond(addonstatus.ConditionAvailable, "True", "ProbeAvailable", t0)
	sick := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "ProbeUnavailable", Message: "deployments default/agent has no ready replica", LastTransitionTime: t0}
	renderErr := metav1.Condition{Type: addonstatus.ConditionManifestApplied, Status: metav1.ConditionFalse, Reason: "ManifestWorkApplyFailed", Message: "render: bad template", LastTransitionTime: t1}
	staleRenderErr := renderErr
	staleRenderErr.LastTransitionTime = metav1.NewTime(t0.Add(-time.Hour))
	readyB := []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, ok2...)}
	refsB := []addonv1alpha1.ConfigReference{ref(&b1, &a1)}
	cases := []struct {
		name        string
		m           *addonv1alpha1.ManagedClusterAddOn
		works       []*workv1.ManifestWork
		health      bool // health checked, with the default soak
		now         metav1.Time
		wantReason  string // "" = no Progressing condition
		wantStatus  string
		wantApplied bool
		wantMsg     string
		wantRecheck time.Duration
		wantSoak    string // reason of the HealthSoak condition; "" = not checked
	}{
		{name: "not started: no configs, not configured", m: mca(nil)},
		// No deployer reported anything yet: looked at again when DefaultDeployerWait (2m after t0)
		// is over.
		{name: "install, no work yet", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing),
			wantReason: addonstatus.ReasonInstalling, wantStatus: "True", wantMsg: addonstatus.MessageInstalling, wantRecheck: time.Minute},
		{name: "install, no deployer for the whole wait: the message asks for one", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing),
			now: metav1.NewTime(t0.Add(DefaultDeployerWait)), wantReason: addonstatus.ReasonInstalling, wantStatus: "True",
			wantMsg: "installing... " + addonstatus.MessageWaitingForDeployer},
		{name: "upgrade, no deployer for the whole wait", m: mca(refsB, configured, upgrading),
			now: metav1.NewTime(t0.Add(time.Hour)), wantReason: addonstatus.ReasonUpgrading, wantStatus: "True",
			wantMsg: "upgrading... " + addonstatus.MessageWaitingForDeployer},
		{name: "a deployer reported (ManifestApplied=True): the usual message again", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured,
			cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonInstalling, t0), deployed),
			now: metav1.NewTime(t0.Add(time.Hour)), wantReason: addonstatus.ReasonInstalling, wantStatus: "True", wantMsg: addonstatus.MessageInstalling},
		{name: "install, stale work", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing, deployed, healthy),
			works: readyB, wantReason: addonstatus.ReasonInstalling, wantStatus: "True", wantMsg: addonstatus.MessageInstalling},
		// Works ready and health True at the first look: the soak starts now; not done yet.
		{name: "install, ready: the health soak starts", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing, deployed, healthy),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, health: true, wantReason: addonstatus.ReasonInstalling, wantStatus: "True",
			wantMsg: "installing... the add-on's ManifestWorks report the desired configs and the add-on is healthy; it must stay healthy for 10s (health soak)", wantRecheck: DefaultHealthSoak + time.Second, wantSoak: addonstatus.ReasonSoaking},
		{name: "install, ready and soaked", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing, deployed, healthy, soaking(t1)),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, health: true, now: metav1.NewTime(t1.Add(DefaultHealthSoak + time.Second)),
			wantReason: addonstatus.ReasonInstallSucceed, wantStatus: "False", wantApplied: true, wantMsg: addonstatus.MessageInstallSucceed, wantSoak: addonstatus.ReasonSoaked},
		{name: "install, ready but the deployer has not reported ManifestApplied", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing, healthy),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, health: true, wantReason: addonstatus.ReasonInstalling, wantStatus: "True", wantMsg: addonstatus.MessageInstalling,
			wantRecheck: time.Minute},
		{name: "upgrade, ready: the health soak starts", m: mca(refsB, configured, upgrading, deployed, healthy),
			works: readyB, health: true, wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: "upgrading... the add-on's ManifestWorks report the desired configs and the add-on is healthy",
			wantRecheck: DefaultHealthSoak + time.Second, wantSoak: addonstatus.ReasonSoaking},
		{name: "upgrade, ready, soaking", m: mca(refsB, configured, upgrading, deployed, healthy, soaking(t1)),
			works: readyB, health: true, now: metav1.NewTime(t1.Add(4 * time.Second)), wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: "must stay healthy for 10s",
			wantRecheck: DefaultHealthSoak - 3*time.Second, wantSoak: addonstatus.ReasonSoaking},
		{name: "upgrade, ready and soaked", m: mca(refsB, configured, upgrading, deployed, healthy, soaking(t1)),
			works: readyB, health: true, now: metav1.NewTime(t1.Add(time.Minute)), wantReason: addonstatus.ReasonUpgradeSucceed, wantStatus: "False", wantApplied: true, wantMsg: addonstatus.MessageUpgradeSucceed,
			wantSoak: addonstatus.ReasonSoaked},
		{name: "upgrade, soaking, works no longer ready: the soak resets", m: mca(refsB, configured, upgrading, deployed, healthy, soaking(t1)),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 3, annB, ok2...)}, health: true, now: metav1.NewTime(t1.Add(time.Minute)),
			wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: addonstatus.MessageUpgrading, wantSoak: addonstatus.ReasonWorksNotReady},
		{name: "upgrade, soaking, unhealthy: the soak resets", m: mca(refsB, configured, upgrading, deployed, sick, soaking(t1)),
			works: readyB, health: true, now: metav1.NewTime(t1.Add(time.Minute)),
			wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: "waiting for it to be healthy", wantSoak: addonstatus.ReasonNotHealthy},
		{name: "upgrade, ready, unhealthy: waits and says why", m: mca(refsB, configured, upgrading, deployed, sick),
			works: readyB, health: true, wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: "waiting for it to be healthy: Available=False (ProbeUnavailable: deployments default/agent has no ready replica)"},
		{name: "upgrade, ready, no Available yet", m: mca(refsB, configured, upgrading, deployed),
			works: readyB, health: true, wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: "no Available condition reported yet"},
		{name: "upgrade, ready, health prober None (Customized, no Available)", m: func() *addonv1alpha1.ManagedClusterAddOn {
			m := mca(refsB, configured, upgrading, deployed)
			m.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeCustomized
			return m
		}(), works: readyB, health: true, wantReason: addonstatus.ReasonUpgradeSucceed, wantStatus: "False", wantApplied: true, wantSoak: addonstatus.ReasonSoaked},
		{name: "upgrade, ready, unhealthy, health check off: no soak", m: mca(refsB, configured, upgrading, deployed, sick),
			works: readyB, wantReason: addonstatus.ReasonUpgradeSucceed, wantStatus: "False", wantApplied: true, wantSoak: addonstatus.ReasonSoaked},
		{name: "failed for staying unhealthy stays failed", m: mca(refsB, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, t0), deployed, sick),
			works: readyB, health: true, wantReason: addonstatus.ReasonUpgradeFailed, wantStatus: "False"},
		{name: "rollback, works still hold the abandoned version", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, rollingBack, deployed, healthy),
			works: readyB, health: true, wantReason: addonstatus.ReasonRollingBack, wantStatus: "True", wantMsg: addonstatus.MessageRollingBack},
		{name: "rollback, works back on the old version", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, rollingBack, deployed, healthy),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 3, annA, wcond(workv1.WorkApplied, "True", 3), wcond(workv1.WorkAvailable, "True", 3))}, health: true,
			wantReason: addonstatus.ReasonRollingBack, wantStatus: "True", wantMsg: "rolling back... the add-on's ManifestWorks report the desired configs", wantRecheck: DefaultHealthSoak + time.Second},
		{name: "rollback, works back on the old version, soaked", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, rollingBack, deployed, healthy, soaking(t1)),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 3, annA, wcond(workv1.WorkApplied, "True", 3), wcond(workv1.WorkAvailable, "True", 3))}, health: true,
			now: metav1.NewTime(t1.Add(DefaultHealthSoak + time.Second)), wantReason: addonstatus.ReasonRollbackSucceeded, wantStatus: "False", wantApplied: true, wantMsg: addonstatus.MessageRollbackSucceeded},
		{name: "upgrade, Applied=False at generation", m: mca(refsB, configured, upgrading),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2))}, wantReason: addonstatus.ReasonUpgradeFailed, wantStatus: "False", wantMsg: "Applied=False at generation 2"},
		{name: "install, Available=False at generation", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, configured, installing),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "False", 2))}, wantReason: addonstatus.ReasonInstallFailed, wantStatus: "False", wantMsg: "Available=False"},
		{name: "rollback, Applied=False", m: mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, rollingBack),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, wcond(workv1.WorkApplied, "False", 2))}, wantReason: addonstatus.ReasonRollbackFailed, wantStatus: "False", wantMsg: "rollback failed: "},
		{name: "render error during the attempt: a moment of grace (a lost write race turns True again)", m: mca(refsB, configured, upgrading, renderErr),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, now: t1, wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantRecheck: DeployerGrace},
		{name: "render error during the attempt that lasts fails it", m: mca(refsB, configured, upgrading, renderErr),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, now: metav1.NewTime(t1.Add(DeployerGrace)), wantReason: addonstatus.ReasonUpgradeFailed, wantStatus: "False", wantMsg: "ManifestApplied=False (ManifestWorkApplyFailed: render: bad template)"},
		{name: "failed on the deployer stays failed while it says False (the failure moved the transition time)",
			m:     mca(refsB, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, metav1.NewTime(t1.Add(time.Minute))), renderErr),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, now: metav1.NewTime(t1.Add(61 * time.Second)),
			wantReason: addonstatus.ReasonUpgradeFailed, wantStatus: "False", wantMsg: "render: bad template"},
		{name: "render error from before the attempt: grace for the deployer", m: mca(refsB, configured, upgrading, staleRenderErr),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, now: metav1.NewTime(t0.Add(5 * time.Second)),
			wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantRecheck: DeployerGrace - 5*time.Second},
		{name: "render error from before the attempt, grace over", m: mca(refsB, configured, upgrading, staleRenderErr),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annA, ok2...)}, now: metav1.NewTime(t0.Add(DeployerGrace)),
			wantReason: addonstatus.ReasonUpgradeFailed, wantStatus: "False", wantMsg: "render: bad template"},
		{name: "failure of an older generation is not a failure", m: mca(refsB, configured, upgrading),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 1))}, wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: addonstatus.MessageUpgrading,
			wantRecheck: time.Minute},
		{name: "ready at an older generation is not ready", m: mca(refsB, configured, upgrading, deployed, healthy),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 3, annB, ok2...)}, wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: addonstatus.MessageUpgrading},
		{name: "stale work outranks failed work", m: mca(refsB, configured, upgrading),
			works:      []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2)), work("addon-hello-deploy-1", 2, annA, ok2...)},
			wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: addonstatus.MessageUpgrading, wantRecheck: time.Minute},
		{name: "every work must be ready", m: mca(refsB, configured, upgrading, deployed, healthy),
			works:      []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, ok2...), work("addon-hello-deploy-1", 2, annB)},
			wantReason: addonstatus.ReasonUpgrading, wantStatus: "True", wantMsg: addonstatus.MessageUpgrading},
		{name: "applied stays succeeded even if a work fails later", m: mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t0)),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2))}, wantReason: addonstatus.ReasonUpgradeSucceed, wantStatus: "False", wantApplied: true},
		{name: "no configs: works without annotation install it", m: mca(nil, configured, deployed, healthy),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, "", ok2...)}, health: true, wantReason: addonstatus.ReasonInstalling, wantStatus: "True", wantMsg: "must stay healthy", wantRecheck: DefaultHealthSoak + time.Second},
		{name: "no configs: works without annotation install it, soaked", m: mca(nil, configured, deployed, healthy, soaking(t1)),
			works: []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, "", ok2...)}, health: true, now: metav1.NewTime(t1.Add(DefaultHealthSoak + time.Second)), wantReason: addonstatus.ReasonInstallSucceed, wantStatus: "False", wantMsg: addonstatus.MessageInstallSucceed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := js(t, tc.m)
			now := tc.now
			if now.IsZero() {
				now = t1
			}
			gate := Gate{Checked: tc.health, Soak: DefaultHealthSoak}
			st, recheck := Progress(tc.m, AddonWorks("hello", tc.works), gate, now)
			if js(t, tc.m) != before {
				t.Fatal("Progress modified its input")
			}
			if recheck != tc.wantRecheck {
				t.Fatalf("recheck = %v, want %v", recheck, tc.wantRecheck)
			}
			c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
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
			if len(st.ConfigReferences) > 0 && addonstatus.Applied(got) != tc.wantApplied {
				t.Fatalf("applied = %v, want %v: %s", addonstatus.Applied(got), tc.wantApplied, js(t, st.ConfigReferences))
			}
			if tc.wantSoak != "" {
				if hs := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionHealthSoak); hs == nil || hs.Reason != tc.wantSoak {
					t.Fatalf("HealthSoak = %+v, want reason %s", hs, tc.wantSoak)
				}
			}
		})
	}
}

func TestFailUnhealthy(t *testing.T) {
	annB := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"bbbb"}`
	readyB := []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "True", 2))}
	refsB := []addonv1alpha1.ConfigReference{ref(&b1, &a1)}
	configured := cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0)
	deployed := cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t0)
	upgrading := cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonUpgrading, t0)
	sickLater := metav1.Condition{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "ProbeUnavailable", Message: "no ready replica", LastTransitionTime: t1}
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

	m := mca(refsB, configured, upgrading, deployed, sickLater)
	if _, failed, recheck := FailUnhealthy(m, readyB, true, 5*time.Minute, at(2*time.Minute)); failed || recheck != 4*time.Minute {
		// unhealthy since t1 = t0+1m: 4 minutes left at t0+2m
		t.Fatalf("failed=%v recheck=%v, want not yet, 4m left", failed, recheck)
	}
	st, failed, _ := FailUnhealthy(m, readyB, true, 5*time.Minute, at(6*time.Minute))
	c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
	if !failed || c.Reason != addonstatus.ReasonUpgradeFailed || !strings.Contains(c.Message, "upgrade failed: the add-on has not been healthy for 5m0s: Available=False (ProbeUnavailable: no ready replica)") {
		t.Fatalf("failed=%v Progressing=%+v", failed, c)
	}
	// Progress keeps that verdict while nothing changes.
	gate := Gate{Checked: true, Soak: DefaultHealthSoak}
	again, _ := Progress(&addonv1alpha1.ManagedClusterAddOn{Status: st}, readyB, gate, at(7*time.Minute))
	if c := meta.FindStatusCondition(again.Conditions, addonstatus.ConditionProgressing); c.Reason != addonstatus.ReasonUpgradeFailed {
		t.Fatalf("Progress undid the failure: %+v", c)
	}
	// Health comes back: the failure stands through the health soak, then the cluster succeeds
	// after all.
	healed := &addonv1alpha1.ManagedClusterAddOn{Status: st}
	meta.SetStatusCondition(&healed.Status.Conditions, cond(addonstatus.ConditionAvailable, "True", "ProbeAvailable", at(8*time.Minute)))
	soak, recheck := Progress(healed, readyB, gate, at(8*time.Minute))
	if c := meta.FindStatusCondition(soak.Conditions, addonstatus.ConditionProgressing); c.Reason != addonstatus.ReasonUpgradeFailed || recheck != DefaultHealthSoak+time.Second {
		t.Fatalf("healthy again, soaking: %+v, recheck %v", c, recheck)
	}
	back, _ := Progress(&addonv1alpha1.ManagedClusterAddOn{Status: soak}, readyB, gate, at(8*time.Minute+DefaultHealthSoak+time.Second))
	if c := meta.FindStatusCondition(back.Conditions, addonstatus.ConditionProgressing); c.Reason != addonstatus.ReasonUpgradeSucceed {
		t.Fatalf("healthy again: %+v", c)
	}
	for name, tc := range map[string]struct {
		m     *addonv1alpha1.ManagedClusterAddOn
		works []*workv1.ManifestWork
		check bool
	}{
		"works not ready":    {mca(refsB, configured, upgrading, deployed, sickLater), nil, true},
		"healthy":            {mca(refsB, configured, upgrading, deployed, cond(addonstatus.ConditionAvailable, "True", "", t0)), readyB, true},
		"health check off":   {m, readyB, false},
		"not under way":      {mca(refsB, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, t0), deployed, sickLater), readyB, true},
		"no ManifestApplied": {mca(refsB, configured, upgrading, sickLater), readyB, true},
	} {
		if _, failed, recheck := FailUnhealthy(tc.m, tc.works, tc.check, time.Minute, at(time.Hour)); failed || recheck != 0 {
			t.Errorf("%s: failed=%v recheck=%v, want neither", name, failed, recheck)
		}
	}
}

func TestHealthy(t *testing.T) {
	m := mca(nil)
	if ok, why := Healthy(m, true); ok || !strings.Contains(why, "no Available condition") {
		t.Fatalf("no condition: %v %q", ok, why)
	}
	if ok, _ := Healthy(m, false); !ok {
		t.Fatal("health check off must pass")
	}
	m.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeLease
	if ok, _ := Healthy(m, true); ok {
		t.Fatal("lease add-on without Available must wait")
	}
	m.Status.HealthCheck.Mode = addonv1alpha1.HealthCheckModeCustomized
	if ok, _ := Healthy(m, true); !ok {
		t.Fatal("Customized without Available is prober type None")
	}
	m.Status.Conditions = []metav1.Condition{{Type: addonstatus.ConditionAvailable, Status: metav1.ConditionUnknown, Reason: "WorkNotFound", Message: "work not found"}}
	if ok, why := Healthy(m, true); ok || why != "Available=Unknown (WorkNotFound: work not found)" {
		t.Fatalf("unknown: %v %q", ok, why)
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{HealthCheckAnnotation: "None"}}}
	if HealthChecked(cma) {
		t.Fatal("annotation none must turn the check off")
	}
	if !HealthChecked(&addonv1alpha1.ClusterManagementAddOn{}) {
		t.Fatal("health is checked by default")
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
	configured := cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0)
	target := []Config{b1}
	cases := []struct {
		name    string
		m       *addonv1alpha1.ManagedClusterAddOn
		want    rollout.RolloutStatus
		wantLTT *metav1.Time
	}{
		{"no status", mca(nil), rollout.ToApply, nil},
		{"other desired", mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured), rollout.ToApply, nil},
		{"target but not configured", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, cond(addonstatus.ConditionConfigured, "False", addonstatus.ReasonNotConfigured, t0)), rollout.ToApply, nil},
		{"held but already running target", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, cond(addonstatus.ConditionConfigured, "False", addonstatus.ReasonNotConfigured, t0), cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t1)), rollout.Succeeded, &t1},
		{"succeeded", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t1)), rollout.Succeeded, &t1},
		{"succeeded under a foreign reason", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", "Completed", t1)), rollout.Succeeded, &longAgo},
		{"failed", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, t1)), rollout.Failed, &t1},
		{"progressing", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonUpgrading, t1)), rollout.Progressing, &t1},
		{"rolling back", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonRollingBack, t1)), rollout.Progressing, &t1},
		{"rollback failed", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonRollbackFailed, t1)), rollout.Failed, &t1},
		{"rolled back", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonRollbackSucceeded, t1)), rollout.Succeeded, &t1},
		{"succeeded after a health soak: minSuccessTime counts from its start", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t1),
			cond(addonstatus.ConditionHealthSoak, "True", addonstatus.ReasonSoaked, t0)), rollout.Succeeded, &t0},
		// A cluster that failed (UpgradeFailed at t0) and recovered: its soak began at t1, after the
		// failure. minSuccessTime counts from there, also for a status written before Progress
		// moved the transition time on the way from the failure to the success (Progressing's
		// transition time then still says t0).
		{"succeeded after a failure: minSuccessTime counts from the recovery", mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t0),
			cond(addonstatus.ConditionHealthSoak, "True", addonstatus.ReasonSoaked, t1)), rollout.Succeeded, &t1},
		{"progressing, foreign reason: no clock", mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t1)), rollout.Progressing, nil},
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
	succeeded := cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t0)
	configured := cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0)
	deployed := cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t0)
	healthy := cond(addonstatus.ConditionAvailable, "True", "ProbeAvailable", t0)

	t.Run("push restarts the progress clock", func(t *testing.T) {
		m := mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, succeeded)
		m.Generation = 7
		st := Push(m, []Config{b1}, ready, addonstatus.Upgrade, Gate{Checked: true, Soak: DefaultHealthSoak}, t1)
		p := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
		if p.Reason != addonstatus.ReasonUpgrading || p.Status != metav1.ConditionTrue || !p.LastTransitionTime.Equal(&t1) {
			t.Fatalf("Progressing = %+v", p)
		}
		if !equalJSON(t, st.ConfigReferences, []addonv1alpha1.ConfigReference{ref(&b1, &a1)}) {
			t.Fatalf("configReferences = %s", js(t, st.ConfigReferences))
		}
		if g, ok := ConfiguredGeneration(&addonv1alpha1.ManagedClusterAddOn{Status: st}); !ok || g != 7 {
			t.Fatalf("configured generation = %d %v, want 7", g, ok)
		}
		// Hold and Keep keep the recorded generation.
		held := Hold(&addonv1alpha1.ManagedClusterAddOn{Status: st}, t1)
		if g, _ := ConfiguredGeneration(&addonv1alpha1.ManagedClusterAddOn{Status: held}); g != 7 {
			t.Fatalf("hold lost the configured generation: %d", g)
		}
	})
	t.Run("push to the version still running finishes at once without a soak", func(t *testing.T) {
		// Rolled to b, never applied it, rolled back to a: its works still run a.
		m := mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonUpgrading, t0), deployed, healthy)
		st := Push(m, []Config{a1}, ready, addonstatus.Rollback, Gate{Checked: true}, t1)
		p := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
		if p.Reason != addonstatus.ReasonRollbackSucceeded || !addonstatus.Applied(&addonv1alpha1.ManagedClusterAddOn{Status: st}) {
			t.Fatalf("Progressing = %+v, refs %s", p, js(t, st.ConfigReferences))
		}
	})
	t.Run("push to the version still running soaks from the push", func(t *testing.T) {
		// The health seen before the push (True since t0) is not the new attempt's: the soak starts
		// at the push.
		m := mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonUpgrading, t0), deployed, healthy,
			cond(addonstatus.ConditionHealthSoak, "True", addonstatus.ReasonSoaking, t0))
		st := Push(m, []Config{a1}, ready, addonstatus.Rollback, Gate{Checked: true, Soak: DefaultHealthSoak}, t1)
		p := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
		hs := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionHealthSoak)
		if p.Reason != addonstatus.ReasonRollingBack || addonstatus.Applied(&addonv1alpha1.ManagedClusterAddOn{Status: st}) ||
			hs.Status != metav1.ConditionTrue || !hs.LastTransitionTime.Equal(&t1) {
			t.Fatalf("Progressing = %+v, HealthSoak = %+v", p, hs)
		}
	})
	t.Run("push back to the last applied version whose works moved on is not done", func(t *testing.T) {
		// Applied a, then b failed on its works: lastApplied a is carried to the new desired a, but
		// the works still hold b, so the rollback is under way, not done.
		annB := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"bbbb"}`
		m := mca([]addonv1alpha1.ConfigReference{ref(&b1, &a1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, t0), deployed, healthy)
		st := Push(m, []Config{a1}, []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2))}, addonstatus.Rollback, Gate{Checked: true, Soak: DefaultHealthSoak}, t1)
		p := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing)
		if p.Reason != addonstatus.ReasonRollingBack || addonstatus.Applied(&addonv1alpha1.ManagedClusterAddOn{Status: st}) {
			t.Fatalf("Progressing = %+v, refs %s", p, js(t, st.ConfigReferences))
		}
	})
	t.Run("first push of a fresh MCA is an install", func(t *testing.T) {
		st := Push(mca(nil), []Config{a1}, nil, addonstatus.Install, Gate{Checked: true, Soak: DefaultHealthSoak}, t1)
		if p := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionProgressing); p.Reason != addonstatus.ReasonInstalling {
			t.Fatalf("Progressing = %+v", p)
		}
		if hs := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionHealthSoak); hs == nil || hs.Status != metav1.ConditionFalse || hs.Reason != addonstatus.ReasonWorksNotReady {
			t.Fatalf("HealthSoak = %+v", hs)
		}
		if c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionConfigured); c.Status != metav1.ConditionTrue || c.Reason != addonstatus.ReasonConfigured || c.Message != addonstatus.MessageConfigured {
			t.Fatalf("Configured = %+v", c)
		}
	})
	t.Run("hold", func(t *testing.T) {
		m := mca([]addonv1alpha1.ConfigReference{ref(&a1, &a1)}, configured, succeeded)
		st := Hold(m, t1)
		c := meta.FindStatusCondition(st.Conditions, addonstatus.ConditionConfigured)
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

// Progressing's lastTransitionTime is when the change reached its outcome
// (docs/design/lifecycle.md#lasttransitiontime-is-when-the-change-finished): a failed change whose
// cluster recovers gets a new one when it succeeds,
// although the status stays False (UpgradeFailed → UpgradeSucceed), so minSuccessTime and anything
// else that reads it count from the success, not from the failure.
func TestProgressTransitionOnRecovery(t *testing.T) {
	annB := `{"addondeploymentconfigs.addon.open-cluster-management.io/default/cfg-b":"bbbb"}`
	readyB := []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "True", 2), wcond(workv1.WorkAvailable, "True", 2))}
	failedB := []*workv1.ManifestWork{work("addon-hello-deploy-0", 2, annB, wcond(workv1.WorkApplied, "False", 2))}
	configured := cond(addonstatus.ConditionConfigured, "True", addonstatus.ReasonConfigured, t0)
	deployed := cond(addonstatus.ConditionManifestApplied, "True", "AddonManifestApplied", t0)
	healthy := cond(addonstatus.ConditionAvailable, "True", "ProbeAvailable", t1)
	refsB := []addonv1alpha1.ConfigReference{ref(&b1, &a1)}
	t2 := metav1.NewTime(t1.Add(time.Hour))
	cases := []struct {
		name       string
		m          *addonv1alpha1.ManagedClusterAddOn
		works      []*workv1.ManifestWork
		gate       Gate
		looks      []metav1.Time // Progress runs at each, on the previous one's result
		wantReason string
		wantLTT    metav1.Time
	}{
		{name: "upgrade failed, works recover: succeeded now",
			m:     mca(refsB, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, t0), deployed, healthy),
			works: readyB, looks: []metav1.Time{t2}, wantReason: addonstatus.ReasonUpgradeSucceed, wantLTT: t2},
		{name: "install failed, works recover: succeeded now",
			m:     mca([]addonv1alpha1.ConfigReference{ref(&b1, nil)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonInstallFailed, t0), deployed, healthy),
			works: readyB, looks: []metav1.Time{t2}, wantReason: addonstatus.ReasonInstallSucceed, wantLTT: t2},
		{name: "rollback failed, works recover: succeeded now",
			m:     mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonRollbackFailed, t0), deployed, healthy),
			works: readyB, looks: []metav1.Time{t2}, wantReason: addonstatus.ReasonRollbackSucceeded, wantLTT: t2},
		// With a health soak the failure stands until the soak is over: the success is at its end.
		{name: "upgrade failed, works recover, health soak: succeeded at the soak's end",
			m:     mca(refsB, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, t0), deployed, healthy),
			works: readyB, gate: Gate{Checked: true, Soak: DefaultHealthSoak},
			looks:      []metav1.Time{t2, metav1.NewTime(t2.Add(DefaultHealthSoak + time.Second))},
			wantReason: addonstatus.ReasonUpgradeSucceed, wantLTT: metav1.NewTime(t2.Add(DefaultHealthSoak + time.Second))},
		{name: "upgrade failed, works still failed: the failure keeps its time",
			m:     mca(refsB, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeFailed, t0), deployed, healthy),
			works: failedB, looks: []metav1.Time{t2}, wantReason: addonstatus.ReasonUpgradeFailed, wantLTT: t0},
		// Controls: a status flip moves the time anyway; a success stays a success with its time;
		// OCM's Completed taken over as our success reason is no new outcome.
		{name: "upgrading, works ready: succeeded now (status flip)",
			m:     mca(refsB, configured, cond(addonstatus.ConditionProgressing, "True", addonstatus.ReasonUpgrading, t0), deployed, healthy),
			works: readyB, looks: []metav1.Time{t2}, wantReason: addonstatus.ReasonUpgradeSucceed, wantLTT: t2},
		{name: "succeeded stays succeeded with its time",
			m:     mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonstatus.ReasonUpgradeSucceed, t0), deployed, healthy),
			works: readyB, looks: []metav1.Time{t2}, wantReason: addonstatus.ReasonUpgradeSucceed, wantLTT: t0},
		{name: "OCM's Completed becomes our success reason with its time",
			m:     mca([]addonv1alpha1.ConfigReference{ref(&b1, &b1)}, configured, cond(addonstatus.ConditionProgressing, "False", addonv1alpha1.ProgressingReasonCompleted, t0), deployed, healthy),
			works: readyB, looks: []metav1.Time{t2}, wantReason: addonstatus.ReasonUpgradeSucceed, wantLTT: t0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m.DeepCopy()
			for _, now := range tc.looks {
				st, _ := Progress(m, tc.works, tc.gate, now)
				m = m.DeepCopy()
				m.Status = st
			}
			c := meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionProgressing)
			if c.Reason != tc.wantReason || !c.LastTransitionTime.Equal(&tc.wantLTT) {
				t.Fatalf("Progressing %s since %v, want %s since %v", c.Reason, c.LastTransitionTime, tc.wantReason, tc.wantLTT)
			}
			// The rollout reads that time for minSuccessTime (or the health soak's start, which is
			// no earlier than the recovery either, see RolloutStatus).
			recovered := addonstatus.IsFailedReason(meta.FindStatusCondition(tc.m.Status.Conditions, addonstatus.ConditionProgressing).Reason) && addonstatus.IsDoneReason(c.Reason)
			if got := RolloutStatus("c1", m, []Config{b1}); recovered && (got.Status != rollout.Succeeded || got.LastTransitionTime.Before(&t2)) {
				t.Fatalf("rollout status %v since %v: counts from before the recovery at %v", got.Status, got.LastTransitionTime, t2)
			}
		})
	}
}

// DesiredIs, LastAppliedIs and HasLastApplied say what comparing the lists says.
func TestListFreeComparisons(t *testing.T) {
	gr := addonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"}
	gr2 := addonv1alpha1.ConfigGroupResource{Group: "", Resource: "configmaps"}
	h := func(name, hash string) *addonv1alpha1.ConfigSpecHash {
		return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent{Namespace: "ns", Name: name}, SpecHash: hash}
	}
	refs := [][]addonv1alpha1.ConfigReference{
		nil,
		{{ConfigGroupResource: gr}},
		{{ConfigGroupResource: gr, DesiredConfig: h("a", "1")}},
		{{ConfigGroupResource: gr, DesiredConfig: h("a", "1"), LastAppliedConfig: h("a", "1")}},
		{{ConfigGroupResource: gr, DesiredConfig: h("b", "2"), LastAppliedConfig: h("a", "1")}},
		{{ConfigGroupResource: gr, LastAppliedConfig: h("a", "1")}, {ConfigGroupResource: gr2, DesiredConfig: h("c", "3")}},
		{{ConfigGroupResource: gr, DesiredConfig: h("a", "1")}, {ConfigGroupResource: gr2, DesiredConfig: h("c", "3"), LastAppliedConfig: h("c", "3")}},
	}
	targets := [][]Config{nil, {}}
	for _, r := range refs {
		m := &addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{ConfigReferences: r}}
		targets = append(targets, Desired(m), LastApplied(m))
	}
	targets = append(targets, []Config{FromSpecHash(gr, h("a", "2"))}, []Config{FromSpecHash(gr2, h("a", "1"))})
	for i, r := range refs {
		m := &addonv1alpha1.ManagedClusterAddOn{Status: addonv1alpha1.ManagedClusterAddOnStatus{ConfigReferences: r}}
		if got, want := HasLastApplied(m), len(LastApplied(m)) > 0; got != want {
			t.Errorf("refs %d: HasLastApplied %v, want %v", i, got, want)
		}
		for j, target := range targets {
			if got, want := DesiredIs(m, target), Equal(Desired(m), target); got != want {
				t.Errorf("refs %d, target %d: DesiredIs %v, want %v", i, j, got, want)
			}
			if got, want := LastAppliedIs(m, target), Equal(LastApplied(m), target); got != want {
				t.Errorf("refs %d, target %d: LastAppliedIs %v, want %v", i, j, got, want)
			}
		}
	}
}
