package operations

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/canary"
)

// addon is a ClusterManagementAddOn named hello with the given install placements and, when
// present, the pause annotation raw.
func addon(raw string, present bool, placements ...string) *addonv1alpha1.ClusterManagementAddOn {
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	if present {
		cma.Annotations = map[string]string{PauseAnnotation: raw}
	}
	if placements != nil {
		cma.Spec.InstallStrategy.Type = addonv1alpha1.AddonInstallStrategyPlacements
	}
	for _, p := range placements {
		ns, name, _ := strings.Cut(p, "/")
		cma.Spec.InstallStrategy.Placements = append(cma.Spec.InstallStrategy.Placements,
			addonv1alpha1.PlacementStrategy{PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: name}})
	}
	return cma
}

// Pause and Resume decide as `addonops pause|resume ADDON [--placement]` (and the demo) do: which
// placements they accept, and the annotation they leave.
func TestPauseAndResume(t *testing.T) {
	prod := &canary.PlacementKey{Namespace: "default", Name: "prod"}
	for _, tc := range []struct {
		name   string
		cma    *addonv1alpha1.ClusterManagementAddOn
		k      *canary.PlacementKey
		resume bool
		value  string // the edit's value
		did    string // in Did, or in Noop when the edit changes nothing
		err    string
	}{
		{name: "pause every placement", cma: addon("", false, "default/prod"), value: "*", did: `paused every placement ("*")`},
		{name: "pause every placement over a value that does not parse", cma: addon("prod", true), value: "*", did: "paused every placement"},
		{name: "pause one", cma: addon("", false, "default/canary", "default/prod"), k: prod, value: "default/prod", did: "paused placement default/prod"},
		{name: "pause one already paused", cma: addon("default/prod", true, "default/prod"), k: prod, value: "default/prod", did: "already paused"},
		{name: "pause a placement that is not an install placement", cma: addon("", false, "default/canary"), k: prod,
			err: "placement default/prod is not an install placement of add-on hello; its install placements are default/canary"},
		{name: "pause a placement of an add-on without install placements", cma: addon("", false), k: prod,
			err: "it has none"},
		{name: "resume every placement", cma: addon("*", true, "default/prod"), resume: true, value: "(not set)", did: "resumed every placement"},
		{name: "resume one", cma: addon("default/canary,default/prod", true, "default/canary", "default/prod"), k: prod, resume: true,
			value: "default/canary", did: "resumed placement default/prod"},
		// A placement removed from the spec can still leave the annotation.
		{name: "resume a placement no longer installed", cma: addon("default/prod", true, "default/canary"), k: prod, resume: true,
			value: "(not set)", did: "no placement is paused any more"},
		{name: "resume one while every placement is paused", cma: addon("*", true, "default/canary", "default/prod"), k: prod, resume: true,
			value: "default/canary", did: "the other install placements"},
		{name: "resume a placement that is not installed while every placement is paused", cma: addon("*", true, "default/canary"), k: prod,
			resume: true, err: "is not an install placement"},
		{name: "resume one over a value that does not parse", cma: addon("prod", true, "default/prod"), k: prod, resume: true, err: "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decide := Pause
			if tc.resume {
				decide = Resume
			}
			edit, err := decide(tc.cma, tc.k)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want …%q…", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if valueOf(edit.Value) != tc.value || !strings.Contains(edit.Did+" | "+edit.Noop, tc.did) {
				t.Errorf("edit %s, %q / %q; want %s, …%q…", valueOf(edit.Value), edit.Did, edit.Noop, tc.value, tc.did)
			}
		})
	}
}

func TestRequireInstallPlacements(t *testing.T) {
	if got, err := RequireInstallPlacements(addon("", false, "default/canary", "default/prod")); err != nil || JoinKeys(got) != "default/canary, default/prod" {
		t.Errorf("RequireInstallPlacements = %v, %v; want default/canary, default/prod in spec order", got, err)
	}
	if _, err := RequireInstallPlacements(addon("", false)); err == nil || !strings.Contains(err.Error(), "add-on hello has no install placements") {
		t.Errorf("RequireInstallPlacements of an add-on without placements: %v", err)
	}
}

// Outcome is what the CLI (and the demo, indented) prints after a write.
func TestOutcome(t *testing.T) {
	v := "default/prod"
	edit := Edit{Value: &v, Did: "paused placement default/prod", Noop: "placement default/prod was already paused; nothing changed"}
	for _, tc := range []struct {
		edit    Edit
		changed bool
		want    string
	}{
		{edit, true, "hello: paused placement default/prod\n  addonops.io/pause: default/prod\n"},
		{edit, false, "hello: placement default/prod was already paused; nothing changed\n  addonops.io/pause: default/prod\n"},
		{Edit{Did: "resumed every placement"}, true, "hello: resumed every placement\n  addonops.io/pause: (not set)\n"},
	} {
		if got := Outcome("hello", PauseAnnotation, tc.edit, tc.changed); got != tc.want {
			t.Errorf("Outcome(%+v, %v) = %q, want %q", tc.edit, tc.changed, got, tc.want)
		}
	}
}

// valueOf shows an edit's annotation value, "(not set)" for a removed one.
func valueOf(v *string) string {
	if v == nil {
		return "(not set)"
	}
	return *v
}
