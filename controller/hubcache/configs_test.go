package hubcache

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/addonops/addonops/internal/configref"
)

// The forbidden state of a config kind across list and watch outcomes: set on the first refusal and
// kept with its first verb (so status and event do not flip), cleared only by a success of that
// verb or of a watch-list request.
func TestObserveAccess(t *testing.T) {
	gr := configref.GroupResource{Group: "example.io", Resource: "foos"}
	refused := func(verb string) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: gr.Group, Resource: gr.Resource}, "", errors.New(verb+" denied"))
	}
	type call struct {
		verb string
		err  error
	}
	for _, tc := range []struct {
		name        string
		calls       []call
		wantVerb    string // "" : not forbidden at the end
		wantChanges int    // onChange calls
		wantAccess  []bool // onAccess calls: true = forbidden, false = allowed again
	}{
		{name: "list refused", calls: []call{{"list", refused("list")}}, wantVerb: "list", wantChanges: 1, wantAccess: []bool{true}},
		{name: "retries keep the first problem", calls: []call{{"list", refused("list")}, {"watch", refused("watch")}, {"list", refused("list")}},
			wantVerb: "list", wantChanges: 1, wantAccess: []bool{true, true, true}},
		{name: "granted", calls: []call{{"list", refused("list")}, {"list", nil}}, wantChanges: 2, wantAccess: []bool{true, false}},
		{name: "watch-list success clears", calls: []call{{"list", refused("list")}, {"", nil}}, wantChanges: 2, wantAccess: []bool{true, false}},
		{name: "list allowed, watch refused: no flapping", calls: []call{{"list", nil}, {"watch", refused("watch")}, {"list", nil}, {"watch", refused("watch")}},
			wantVerb: "watch", wantChanges: 1, wantAccess: []bool{true, true}},
		{name: "other errors are not a permission problem", calls: []call{{"list", errors.New("connection refused")}, {"list", nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := 0
			var access []bool
			s := &Configs{onChange: func() { changes++ }, onAccess: func(_ configref.GroupResource, f *ForbiddenError) { access = append(access, f != nil) }}
			ci := &configInformer{gvr: schema.GroupVersionResource{Group: gr.Group, Version: "v1", Resource: gr.Resource}}
			for _, c := range tc.calls {
				s.observeAccess(context.Background(), gr, ci, c.verb, c.err)
			}
			got := ""
			if f := ci.forbiddenErr(); f != nil {
				got = f.Verb
			}
			if got != tc.wantVerb || changes != tc.wantChanges || len(access) != len(tc.wantAccess) {
				t.Fatalf("forbidden verb %q, %d changes, access %v; want %q, %d, %v", got, changes, access, tc.wantVerb, tc.wantChanges, tc.wantAccess)
			}
			for i := range access {
				if access[i] != tc.wantAccess[i] {
					t.Fatalf("access %v, want %v", access, tc.wantAccess)
				}
			}
		})
	}
}

func TestForbiddenErrorMessage(t *testing.T) {
	inner := apierrors.NewForbidden(schema.GroupResource{Group: "example.io", Resource: "foos"}, "", errors.New("no"))
	err := error(&ForbiddenError{Verb: "list", Group: "example.io", Resource: "foos", Err: inner})
	want := `forbidden: the controller may not list foos.example.io (group "example.io", resource "foos"); grant list and watch on it, e.g. by labelling a ClusterRole addonops.io/aggregate-to-controller: "true"`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	wrapped := errors.Join(errors.New("config x"), err)
	var f *ForbiddenError
	if !errors.As(wrapped, &f) || !apierrors.IsForbidden(wrapped) {
		t.Errorf("errors.As / apierrors.IsForbidden do not see through %v", wrapped)
	}
	core := &ForbiddenError{Verb: "watch", Resource: "configmaps"}
	if !strings.Contains(core.Error(), `may not watch configmaps (group "", resource "configmaps")`) {
		t.Errorf("core group: %s", core)
	}
}
