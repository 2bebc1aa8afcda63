package rolloutplan

import (
	"testing"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

func TestWithObservedGenerations(t *testing.T) {
	widget := configref.GroupResource{Group: "example.io", Resource: "widgets"}
	w1 := cfg(widget, "default", "w", "")
	// The hub: cfg-a edited once (generation 2), cfg-b just created, tmpl at 1; cfg-gone deleted.
	hub := map[configref.Ref]int64{a1.Ref: 2, b1.Ref: 1, tp.Ref: 1, w1.Ref: 5}
	lookup := func(r configref.Ref) (int64, bool) { g, ok := hub[r]; return g, ok }
	supported := func(gr configref.GroupResource) bool { return gr == adc || gr == tmpl }
	gen := func(r addonv1alpha1.ConfigReference, g int64) addonv1alpha1.ConfigReference {
		r.LastObservedGeneration = g
		return r
	}
	gone := cfg(adc, "default", "cfg-gone", "gggg")
	cases := []struct {
		name    string
		refs    []addonv1alpha1.ConfigReference
		want    []addonv1alpha1.ConfigReference
		changed bool
	}{
		{"nothing configured", nil, nil, false},
		{"created: generation 1", []addonv1alpha1.ConfigReference{ref(&b1, nil)}, []addonv1alpha1.ConfigReference{gen(ref(&b1, nil), 1)}, true},
		{"edited in place: generation 2, desired hash untouched (a waiting cluster)",
			[]addonv1alpha1.ConfigReference{gen(ref(&a1, &a1), 1)}, []addonv1alpha1.ConfigReference{gen(ref(&a1, &a1), 2)}, true},
		{"already observed: no change", []addonv1alpha1.ConfigReference{gen(ref(&a1, nil), 2)}, []addonv1alpha1.ConfigReference{gen(ref(&a1, nil), 2)}, false},
		// WithDesired resets the generation of a renamed slot; the new object's is written.
		{"renamed (config-hash): the new object's generation", []addonv1alpha1.ConfigReference{ref(&b1, &a1)}, []addonv1alpha1.ConfigReference{gen(ref(&b1, &a1), 1)}, true},
		{"rolled back to an older object: its generation", []addonv1alpha1.ConfigReference{ref(&a1, &b1)}, []addonv1alpha1.ConfigReference{gen(ref(&a1, &b1), 2)}, true},
		{"config deleted (garbage collected): last generation kept", []addonv1alpha1.ConfigReference{gen(ref(&gone, &gone), 3)}, []addonv1alpha1.ConfigReference{gen(ref(&gone, &gone), 3)}, false},
		{"unsupported type: left alone, as OCM leaves it 0", []addonv1alpha1.ConfigReference{ref(&a1, nil), ref(&w1, nil)},
			[]addonv1alpha1.ConfigReference{gen(ref(&a1, nil), 2), ref(&w1, nil)}, true},
		{"every supported reference, template included", []addonv1alpha1.ConfigReference{ref(&b1, nil), ref(&tp, nil)},
			[]addonv1alpha1.ConfigReference{gen(ref(&b1, nil), 1), gen(ref(&tp, nil), 1)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := js(t, tc.refs)
			got, changed := WithObservedGenerations(tc.refs, supported, lookup)
			if !equalJSON(t, got, tc.want) || changed != tc.changed {
				t.Fatalf("WithObservedGenerations = %v\n%s\nwant %v\n%s", changed, js(t, got), tc.changed, js(t, tc.want))
			}
			if js(t, tc.refs) != before {
				t.Fatal("the input was modified")
			}
		})
	}
	if _, changed := WithObservedGenerations([]addonv1alpha1.ConfigReference{ref(&a1, nil)}, supported, nil); changed {
		t.Fatal("no lookup: nothing may change")
	}
}
