package planner

import (
	"errors"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/crdschema"
)

// Each kind of bad input is an InvalidManifestsError naming the object and the field, and nothing
// is planned; the valid variant of the same manifests plans.
func TestPlanRefusesInvalidManifests(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: 1}}`, groups: [][]string{{"c1", "c2"}}}
	hubDocs := append(hubObjects(main, placementSpec{name: "canary", groups: [][]string{{"c3"}}}), adc("cfg", "v1"))
	s := snapshotOf(t, hubDocs...)
	// The hub state holds every AddOnDeploymentConfig: a reference to another is missing.
	s.ConfigKinds = []ConfigKind{{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "AddOnDeploymentConfig", Resource: "addondeploymentconfigs", Namespaced: true}}

	const template = `{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: AddOnTemplate, metadata: {name: hello-v1}, spec: {addonName: %s, agentSpec: {workload: {manifests: [%s]}}}}`
	const manifest = `{apiVersion: v1, kind: ConfigMap, metadata: {namespace: default, name: hello}, data: {a: "%s"}}`
	tpl := func(addon, value string) string {
		return strings.Replace(strings.Replace(template, "%s", addon, 1), "%s", strings.Replace(manifest, "%s", value, 1), 1)
	}

	for _, tc := range []struct {
		name string
		docs []string
		// want are the problems (object: field: message start), in order; none for the valid input.
		want []string
	}{
		{"valid", []string{cma("", "cfg", main), tpl("hello", "{{CLUSTER_NAME}}")}, nil},
		{"apiVersion not served", []string{strings.Replace(cma("", "cfg", main), "addon.open-cluster-management.io/v1alpha1, kind: ClusterManagementAddOn", "addon.open-cluster-management.io/v9, kind: ClusterManagementAddOn", 1)},
			[]string{"ClusterManagementAddOn hello: apiVersion: addon.open-cluster-management.io/v9 is not served for ClusterManagementAddOn"}},
		{"schema: a field of the wrong type", []string{cma("", "cfg", main), `{apiVersion: addon.open-cluster-management.io/v1alpha1, kind: AddOnDeploymentConfig, metadata: {namespace: default, name: cfg}, spec: {customizedVariables: "V=1"}}`},
			[]string{"AddOnDeploymentConfig default/cfg: spec.customizedVariables: Invalid value"}},
		{"schema: a field of the other API version", []string{strings.Replace(cma("", "cfg", main), "spec: {", "spec: {defaultConfigs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, name: cfg, namespace: default}], ", 1)},
			[]string{"ClusterManagementAddOn hello: spec.defaultConfigs: "}},
		{"rollout strategy", []string{cma("", "cfg", placementSpec{name: "main", strategy: `{type: Progressive, progressive: {maxConcurrency: "0%"}}`})},
			[]string{`ClusterManagementAddOn hello: spec.installStrategy.placements[0].rolloutStrategy.progressive.maxConcurrency: "0%"`}},
		{"rollout strategy in the design's vocabulary", []string{cma("", "cfg", placementSpec{name: "main", strategy: `{type: RollingUpdate}`})},
			[]string{`ClusterManagementAddOn hello: spec.installStrategy.placements[0].rolloutStrategy.type: `}},
		{"placement listed twice", []string{cma("", "cfg", main, main)},
			[]string{`ClusterManagementAddOn hello: spec.installStrategy.placements[1]: Duplicate value: {"name":"main","namespace":"default"}`}},
		{"canary annotation does not parse", []string{cma(`addonops.io/canary-placements: "default/main"`, "cfg", main)},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/canary-placements]: "}},
		{"canary gates another add-on's placement", []string{cma(`addonops.io/canary-placements: '{"default/other": "default/canary"}'`, "cfg", main)},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/canary-placements]: gates placement default/other, which is not an install placement"}},
		{"canary placement nowhere", []string{cma(`addonops.io/canary-placements: '{"default/main": "default/gone"}'`, "cfg", main)},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/canary-placements]: canary placement default/gone is neither in the manifests nor on the hub"}},
		{"canary cycle", []string{cma(`addonops.io/canary-placements: '{"default/main": "default/canary", "default/canary": "default/main"}'`, "cfg", main, placementSpec{name: "canary", strategy: "{type: All}"})},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/canary-placements]: the canary placements default/canary, default/main form a cycle"}},
		{"window does not parse", []string{cma(`addonops.io/maintenance-windows: '[{"kind": "deny", "schedule": "every friday", "duration": "1h"}]'`, "cfg", main)},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/maintenance-windows]: annotation addonops.io/maintenance-windows: window 0: "}},
		{"window names another placement", []string{cma(`addonops.io/maintenance-windows: '[{"kind": "deny", "schedule": "0 18 * * 5", "duration": "63h", "placements": ["default/prod"]}]'`, "cfg", main)},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/maintenance-windows]: window 0 names placement default/prod, which is not an install placement"}},
		{"verification does not parse", []string{cma(`addonops.io/verification: '{"template": "error-rate"}'`, "cfg", main)},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/verification]: "}},
		{"verification names another placement", []string{cma(`addonops.io/verification: '[{"placement": "default/prod", "template": "error-rate"}]'`, "cfg", main)},
			[]string{"ClusterManagementAddOn hello: metadata.annotations[addonops.io/verification]: placement default/prod is not an install placement"}},
		{"config reference to nothing", []string{cma("", "cfg-v2", main)},
			[]string{"ClusterManagementAddOn hello: spec.installStrategy.placements[0].configs[0]: refers to addondeploymentconfigs.addon.open-cluster-management.io default/cfg-v2, which is neither in the manifests nor on the hub"}},
		{"template without addonName", []string{cma("", "cfg", main), tpl(`""`, "x")},
			[]string{"AddOnTemplate hello-v1: spec.addonName: AddOnTemplate hello-v1 has no spec.addonName"}},
		{"template placeholder unterminated", []string{cma("", "cfg", main), tpl("hello", "{{CLUSTER_NAME")},
			[]string{"AddOnTemplate hello-v1: spec.agentSpec.workload.manifests[0]: manifest 0 (ConfigMap default/hello)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Plan(s, manifests(t, tc.docs...), Options{Now: t0, Source: "test"})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("valid manifests refused: %v", err)
				}
				if p := placementOf(t, rep, "default/main"); p.Change != ChangeInstall {
					t.Fatalf("valid manifests: change %s, want Install", p.Change)
				}
				return
			}
			var inv *InvalidManifestsError
			if !errors.As(err, &inv) {
				t.Fatalf("err %v (report %v), want an InvalidManifestsError", err, rep != nil)
			}
			if rep != nil {
				t.Fatal("a plan of invalid manifests")
			}
			var got []string
			for _, p := range inv.Problems {
				got = append(got, p.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d starting:\n%s", strings.Join(got, "\n"), len(tc.want), strings.Join(tc.want, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d:\n%s\nwant it to start with\n%s", i, got[i], w)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, "the rendered manifests are invalid") || !strings.Contains(msg, got[0]) {
				t.Errorf("error message %q", msg)
			}
		})
	}
}

// A Placement of the manifests is edited only when its spec differs from the hub's with the CRD's
// defaults applied to both: the hub's carries them (the API server stores them; OCM's CRD
// defaulting, internal/crdschema, writes them here), the manifests' do not.
func TestPlacementEditedOnlyBeyondDefaults(t *testing.T) {
	main := placementSpec{name: "main", strategy: `{type: All}`, groups: [][]string{{"c1"}}}
	s := snapshotOf(t, append(hubObjects(main), adc("cfg", "1"))...)
	for _, o := range s.Objects {
		if o["kind"] == "Placement" {
			k, ok := crdschema.OCM().Lookup("cluster.open-cluster-management.io/v1beta1", "Placement")
			if !ok {
				t.Fatal("no Placement schema")
			}
			k.Default(o)
			if spec, _ := o["spec"].(map[string]any); spec["sortBy"] == nil {
				t.Fatalf("the hub's Placement has no defaults: %v", o["spec"])
			}
		}
	}
	const edited = "the change edits Placement default/main"
	for _, tc := range []struct {
		spec string
		want bool
	}{
		{`{decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: "100%"}}}`, false},
		{`{decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: "50%"}}}`, true},
	} {
		pl := `{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, metadata: {namespace: default, name: main}, spec: ` + tc.spec + `}`
		rep, err := Plan(s, manifests(t, cma(soak0, "cfg", main), pl), Options{Now: t0, Source: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(rep.Warnings, "\n"), edited); got != tc.want {
			t.Errorf("Placement spec %s: warned %t, want %t: %q", tc.spec, got, tc.want, rep.Warnings)
		}
	}
}
