package planner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/operations"
)

// The tests build a hub from YAML, as `addonops snapshot` writes it, settle it by planning the
// install (the simulation's end state is the next step's hub), and plan changes on it.

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

type placementSpec struct {
	name     string
	strategy string // the rolloutStrategy as YAML (flow style)
	groups   [][]string
}

func adc(name, value string) string {
	return fmt.Sprintf(`{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: AddOnDeploymentConfig, metadata: {namespace: default, name: %s, uid: uid-%s, generation: 1}, spec: {customizedVariables: [{name: V, value: %q}]}}`, name, name, value)
}

func cma(annotations string, cfg string, ps ...placementSpec) string {
	var pl []string
	for _, p := range ps {
		pl = append(pl, fmt.Sprintf(`{namespace: default, name: %s, rolloutStrategy: %s, configs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, namespace: default, name: %s}]}`, p.name, p.strategy, cfg))
	}
	return fmt.Sprintf(`{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: ClusterManagementAddOn, metadata: {name: hello, uid: uid-hello, annotations: {addon.open-cluster-management.io/lifecycle: self, %s}}, spec: {supportedConfigs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs}], installStrategy: {type: Placements, placements: [%s]}}}`,
		annotations, strings.Join(pl, ", "))
}

func hubObjects(ps ...placementSpec) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range ps {
		out = append(out, fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, metadata: {namespace: default, name: %s, uid: uid-p-%s}, spec: {decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: "100%%"}}}}`, p.name, p.name))
		for i, g := range p.groups {
			var ds []string
			for _, c := range g {
				ds = append(ds, fmt.Sprintf(`{clusterName: %s, reason: ""}`, c))
				if !seen[c] {
					seen[c] = true
					out = append(out, fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: %s}}`, c))
				}
			}
			out = append(out, fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: PlacementDecision, metadata: {namespace: default, name: %s-decision-%d, labels: {cluster.x-k8s.io/placement: %s, cluster.open-cluster-management.io/placement: %s, cluster.open-cluster-management.io/decision-group-index: "%d", cluster.open-cluster-management.io/decision-group-name: ""}}, status: {decisions: [%s]}}`,
				p.name, i, p.name, p.name, i, strings.Join(ds, ", ")))
		}
	}
	return out
}

func snapshotOf(t testing.TB, docs ...string) *Snapshot {
	t.Helper()
	s := &Snapshot{APIVersion: SnapshotAPIVersion, Kind: SnapshotKind, HistoryNamespace: "addonops-system"}
	s.TakenAt.Time = t0
	for _, d := range docs {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(d), &obj); err != nil {
			t.Fatalf("%v in %s", err, d)
		}
		s.Objects = append(s.Objects, obj)
	}
	return s
}

func manifests(t testing.TB, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ReadManifests(strings.NewReader(strings.Join(docs, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// step plans the change on s and returns the report and the hub after it, as a snapshot.
func step(t *testing.T, s *Snapshot, docs ...string) (*Report, *Snapshot) {
	t.Helper()
	rep, h, err := plan(s, manifests(t, docs...), Options{Now: s.TakenAt.Time, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	next, err := h.snapshot(s.HistoryNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Through YAML, as a snapshot file goes.
	b, err := next.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	next, err = ReadSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	return rep, next
}

func placementOf(t testing.TB, r *Report, key string) PlacementPlan {
	t.Helper()
	for _, a := range r.Addons {
		for _, p := range a.Placements {
			if p.Placement == key {
				return p
			}
		}
	}
	var buf bytes.Buffer
	_ = r.Write(&buf, FormatText)
	t.Fatalf("no placement %s in the plan:\n%s", key, buf.String())
	return PlacementPlan{}
}

func batches(p PlacementPlan) string {
	var out []string
	for _, b := range p.Batches {
		out = append(out, strings.Join(b.Clusters, ","))
	}
	return strings.Join(out, " | ")
}

func expect(t *testing.T, r *Report, key, change, wantBatches string) PlacementPlan {
	t.Helper()
	p := placementOf(t, r, key)
	if p.Change != change || batches(p) != wantBatches || !p.Completes {
		var buf bytes.Buffer
		_ = r.Write(&buf, FormatText)
		t.Fatalf("placement %s: change %s, batches %q, completes %t; want %s, %q, true\n%s", key, p.Change, batches(p), p.Completes, change, wantBatches, buf.String())
	}
	return p
}

const soak0 = `addonops.io/health-soak: "0s"`

func TestInstallUpgradeRollbackProgressive(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 2}}`, groups: [][]string{{"c1", "c2", "c3", "c4", "c5"}}}
	base := snapshotOf(t, append(hubObjects(main), cma(soak0, "cfg-v1", main), adc("cfg-v1", "1"))...)

	rep, s1 := step(t, base)
	install := expect(t, rep, "default/main", ChangeInstall, "c1,c2 | c3,c4 | c5")
	if install.Strategy.MaxConcurrency != 2 || install.Clusters != 5 {
		t.Fatalf("strategy %+v, clusters %d", install.Strategy, install.Clusters)
	}

	rep, s2 := step(t, s1, cma(soak0, "cfg-v2", main), adc("cfg-v2", "2"))
	up := expect(t, rep, "default/main", ChangeUpgrade, "c1,c2 | c3,c4 | c5")
	if up.FromVersion != install.ToVersion || up.ToVersion == up.FromVersion {
		t.Fatalf("upgrade from %s to %s; install was to %s", up.FromVersion, up.ToVersion, install.ToVersion)
	}
	if len(rep.Addons[0].Configs) != 1 || !strings.Contains(rep.Addons[0].Configs[0].Diff, `+    value: "2"`) {
		t.Fatalf("config changes: %+v", rep.Addons[0].Configs)
	}

	// Back to cfg-v1: a version the history holds as completed.
	rep, _ = step(t, s2, cma(soak0, "cfg-v1", main))
	back := placementOf(t, rep, "default/main")
	if back.Change != ChangeRollback || back.RollbackTo == nil || back.RollbackTo.Version != install.ToVersion || !back.Completes {
		t.Fatalf("rollback: %+v", back)
	}
	if got := len(strings.Split(strings.ReplaceAll(batches(back), " | ", ","), ",")); got != 5 {
		t.Fatalf("rollback told %d clusters, want 5: %s", got, batches(back))
	}

	// The same manifests again: nothing moves.
	rep, _ = step(t, s2, cma(soak0, "cfg-v2", main), adc("cfg-v2", "2"))
	if p := placementOf(t, rep, "default/main"); p.Change != ChangeNoOp || len(p.Batches) != 0 || rep.Addons[0].Changed {
		t.Fatalf("no-op: %+v", rep.Addons[0])
	}
}

func TestAllOneBatchAndAlreadyOnTarget(t *testing.T) {
	a := placementSpec{name: "all", strategy: `{type: All}`, groups: [][]string{{"c1", "c2", "c3"}}}
	base := snapshotOf(t, append(hubObjects(a), cma(soak0, "cfg-v1", a), adc("cfg-v1", "1"))...)
	_, s1 := step(t, base)
	rep, _ := step(t, s1, cma(soak0, "cfg-v2", a), adc("cfg-v2", "2"))
	expect(t, rep, "default/all", ChangeUpgrade, "c1,c2,c3")

	// A fourth cluster joins; the others run the target already.
	b := placementSpec{name: "all", strategy: `{type: All}`, groups: [][]string{{"c1", "c2", "c3", "c4"}}}
	s2 := snapshotOf(t, append(hubObjects(b), cma(soak0, "cfg-v1", b), adc("cfg-v1", "1"))...)
	s2.Objects = append(s2.Objects, objectsOf(s1, "ManagedClusterAddOn", "ManifestWork", "ConfigMap")...)
	s2.Objects = replaceCMAStatus(t, s2.Objects, s1)
	rep, _ = step(t, s2)
	p := placementOf(t, rep, "default/all")
	if strings.Join(p.AlreadyOnTarget, ",") != "c1,c2,c3" || batches(p) != "c4" {
		t.Fatalf("already on target %v, batches %s", p.AlreadyOnTarget, batches(p))
	}
}

func objectsOf(s *Snapshot, kinds ...string) []map[string]any {
	var out []map[string]any
	for _, o := range s.Objects {
		for _, k := range kinds {
			if o["kind"] == k {
				out = append(out, o)
			}
		}
	}
	return out
}

// replaceCMAStatus gives the CMA in objs the status it has in from.
func replaceCMAStatus(t *testing.T, objs []map[string]any, from *Snapshot) []map[string]any {
	t.Helper()
	var st any
	for _, o := range from.Objects {
		if o["kind"] == "ClusterManagementAddOn" {
			st = o["status"]
		}
	}
	for _, o := range objs {
		if o["kind"] == "ClusterManagementAddOn" {
			o["status"] = st
		}
	}
	return objs
}

func TestCanaryGatesTheUpgrade(t *testing.T) {
	canary := placementSpec{name: "canary", strategy: `{type: All}`, groups: [][]string{{"c1"}}}
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 2}}`, groups: [][]string{{"c2", "c3", "c4"}}}
	ann := soak0 + `, addonops.io/canary-placements: '{"default/main": "default/canary"}'`
	base := snapshotOf(t, append(hubObjects(canary, main), cma(ann, "cfg-v1", canary, main), adc("cfg-v1", "1"))...)
	_, s1 := step(t, base)
	rep, _ := step(t, s1, cma(ann, "cfg-v2", canary, main), adc("cfg-v2", "2"))
	c := expect(t, rep, "default/canary", ChangeUpgrade, "c1")
	m := expect(t, rep, "default/main", ChangeUpgrade, "c2,c3 | c4")
	if m.Canary == nil || m.Canary.Placement != "default/canary" || !m.Canary.Gates {
		t.Fatalf("canary of main: %+v", m.Canary)
	}
	if m.Batches[0].Step <= c.Batches[len(c.Batches)-1].Step {
		t.Fatalf("main's first batch at step %d does not come after the canary's last at step %d", m.Batches[0].Step, c.Batches[len(c.Batches)-1].Step)
	}
}

func TestPausedPlacementWarns(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c1", "c2"}}}
	base := snapshotOf(t, append(hubObjects(main), cma(soak0, "cfg-v1", main), adc("cfg-v1", "1"))...)
	_, s1 := step(t, base)
	paused := soak0 + `, ` + operations.PauseAnnotation + `: "*"`
	rep, _ := step(t, s1, cma(paused, "cfg-v2", main), adc("cfg-v2", "2"))
	p := placementOf(t, rep, "default/main")
	if p.Completes || len(p.Batches) != 0 || len(p.Warnings) == 0 {
		t.Fatalf("paused: %+v", p)
	}
	if !strings.Contains(strings.Join(rep.Addons[0].Warnings, "\n"), "paused") {
		t.Fatalf("add-on warnings: %v", rep.Addons[0].Warnings)
	}
}

func TestHealthSoakAdvancesTheClock(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 1, minSuccessTime: 1m}}`, groups: [][]string{{"c1", "c2"}}}
	base := snapshotOf(t, append(hubObjects(main), cma(`addonops.io/health-soak: "30s"`, "cfg-v1", main), adc("cfg-v1", "1"))...)
	rep, s1 := step(t, base)
	expect(t, rep, "default/main", ChangeInstall, "c1 | c2")
	if !s1.TakenAt.After(t0.Add(time.Minute)) {
		t.Fatalf("the simulation ended at %s: the soak and minSuccessTime did not pass", s1.TakenAt)
	}
}

func TestUndecodableMCAIsReportedNotFatal(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c1", "c2"}}}
	bad := `{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: ManagedClusterAddOn, metadata: {namespace: c2, name: hello}, spec: {installNamespace: 7}}`
	base := snapshotOf(t, append(hubObjects(main), cma(soak0, "cfg-v1", main), adc("cfg-v1", "1"), bad)...)
	rep, _ := step(t, base)
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "ManagedClusterAddOn c2/hello does not decode") {
		t.Fatalf("warnings: %v", rep.Warnings)
	}
	p := placementOf(t, rep, "default/main")
	if batches(p) != "c1" || p.Completes {
		t.Fatalf("with c2 undecodable: batches %s, completes %t", batches(p), p.Completes)
	}
}

func TestFormatsAndSnapshotVersion(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c1"}}}
	base := snapshotOf(t, append(hubObjects(main), cma(soak0, "cfg-v1", main), adc("cfg-v1", "1"))...)
	rep, _ := step(t, base)
	for format, want := range map[string]string{FormatText: "placement default/main: Install", FormatMarkdown: "| hello | default/main | Install |", FormatJSON: `"schemaVersion": "addonops.io/plan/v1"`} {
		var b bytes.Buffer
		if err := rep.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s output lacks %q:\n%s", format, want, b.String())
		}
	}
	if _, err := ReadSnapshot([]byte("apiVersion: addonops.io/v0\nkind: HubSnapshot\nobjects: []\n")); err == nil || !strings.Contains(err.Error(), "addonops.io/v1alpha1") {
		t.Fatalf("an old snapshot version: %v", err)
	}
}

func TestTemplateManifestDiffsGroupClusters(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c1", "c2", "c3"}}}
	tpl := `{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: AddOnTemplate, metadata: {name: hello-tpl}, spec: {addonName: hello, agentSpec: {workload: {manifests: [
		{apiVersion: apps/v1, kind: Deployment, metadata: {name: agent, namespace: hello-agent}, spec: {selector: {matchLabels: {app: agent}}, template: {metadata: {labels: {app: agent}}, spec: {containers: [{name: agent, image: "quay.io/hello/agent:{{VERSION}}", args: ["--cluster={{CLUSTER_NAME}}"]}]}}}}]}}}}`
	withTemplate := func(cfg string) string {
		return strings.Replace(cma(soak0, cfg, main), `supportedConfigs: [`, `supportedConfigs: [{group: addon.open-cluster-management.io, resource: addontemplates, defaultConfig: {name: hello-tpl}}, `, 1)
	}
	version := func(name, v string) string {
		return fmt.Sprintf(`{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: AddOnDeploymentConfig, metadata: {namespace: default, name: %s, generation: 1}, spec: {customizedVariables: [{name: VERSION, value: %q}]}}`, name, v)
	}
	objs := hubObjects(main)
	for i, o := range objs {
		if strings.Contains(o, "kind: ManagedCluster, metadata: {name: c2}") {
			objs[i] = `{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: c2, annotations: {open-cluster-management.io/image-registries: '{"registries":[{"mirror":"mirror.example/hello","source":"quay.io/hello"}]}'}}}`
		}
	}
	base := snapshotOf(t, append(objs, withTemplate("cfg-v1"), tpl, version("cfg-v1", "1.0"))...)
	_, s1 := step(t, base)
	rep, _ := step(t, s1, withTemplate("cfg-v2"), version("cfg-v2", "2.0"))
	p := expect(t, rep, "default/main", ChangeUpgrade, "c1,c2,c3")
	if len(p.Manifests) != 2 {
		t.Fatalf("manifest diffs: %+v", p.Manifests)
	}
	want := map[string]string{
		"c1,c3": "-        image: quay.io/hello/agent:1.0\n+        image: quay.io/hello/agent:2.0\n",
		"c2":    "-        image: mirror.example/hello/agent:1.0\n+        image: mirror.example/hello/agent:2.0\n",
	}
	for _, m := range p.Manifests {
		key := strings.Join(m.Clusters, ",")
		if m.Error != "" || !strings.Contains(m.Diff, want[key]) || want[key] == "" {
			t.Errorf("clusters %s: error %q, diff:\n%s\nwant it to contain:\n%s", key, m.Error, m.Diff, want[key])
		}
	}
}

func TestUnmanagedAddonWarns(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c1"}}}
	base := snapshotOf(t, append(hubObjects(main), adc("cfg-v1", "1"))...)
	ocm := strings.Replace(cma(soak0, "cfg-v1", main), "addon.open-cluster-management.io/lifecycle: self", "addon.open-cluster-management.io/lifecycle: addon-manager", 1)
	rep, _ := step(t, base, ocm)
	if len(rep.Addons) != 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "add-on hello of the manifests is not managed by addonops") {
		t.Fatalf("addons %+v, warnings %v", rep.Addons, rep.Warnings)
	}
}
