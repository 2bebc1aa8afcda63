//go:build integration

package main

import (
	"fmt"
	"testing"

	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/operations"
)

func TestOverrideWindow(t *testing.T) {
	const addon = "day2-override-window"
	createCMA(t, addon, fixture{
		placements: []string{"default/dev", "default/prod", "default/staging"},
		annotations: map[string]string{
			maintwindow.Annotation: `[{"kind": "deny", "schedule": "0 8 * * 1-5", "duration": "10h", "placements": ["default/prod", "default/staging"]}]`,
		},
		desired: map[string][]history.Config{
			"default/dev":     {templateV1},
			"default/prod":    {adcV2, templateV2},
			"default/staging": nil,
		},
	})
	k := operations.WindowOverrideAnnotation
	id := history.VersionID([]history.Config{templateV2, adcV2})
	want := fmt.Sprintf(`{"default/prod":"%s"}`, id)
	rv := step(t, addon, k, want, fmt.Sprintf("version %s (hello-config-9e8d7c, hello-template-5d2f1c) of placement default/prod may start batches while its maintenance windows are closed", id),
		"override-window", addon, "--placement", "default/prod")
	r := operations.Parse(getCMA(t, addon).Annotations)
	if r.WindowOverride[key("default/prod")] != id || len(r.Problems) > 0 {
		t.Errorf("parsed back: %+v; want default/prod → %s", r, id)
	}
	if again := step(t, addon, k, want, "already passes its maintenance windows; nothing changed", "override-window", addon, "--placement", "default/prod"); again != rv {
		t.Errorf("overriding again wrote the CMA")
	}

	refused(t, addon, "--placement NS/NAME is required", "override-window", addon)
	refused(t, addon, "placement default/dev of add-on day2-override-window has no maintenance windows (annotation addonops.io/maintenance-windows)",
		"override-window", addon, "--placement", "default/dev")
	refused(t, addon, "placement default/nope is not an install placement", "override-window", addon, "--placement", "default/nope")
	refused(t, addon, "placement default/staging of add-on day2-override-window has no desired configs yet", "override-window", addon, "--placement", "default/staging")

	createCMA(t, "day2-override-window-bad", fixture{placements: []string{"default/prod"},
		annotations: map[string]string{maintwindow.Annotation: `[{"kind": "deny", "schedule": "0 8 * * 1-5", "duration": "forever"}]`},
		desired:     map[string][]history.Config{"default/prod": {templateV1}}})
	refused(t, "day2-override-window-bad", `window 0: duration "forever"`, "override-window", "day2-override-window-bad", "--placement", "default/prod")
}
