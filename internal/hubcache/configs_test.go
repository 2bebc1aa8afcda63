package hubcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

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

// countingDiscovery is a fake discovery that counts how often the group list is asked for (once per
// discovery of the whole API: the memory cache asks for it first) and can fail.
type countingDiscovery struct {
	*fakediscovery.FakeDiscovery
	groups int
	err    error
}

func (d *countingDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	d.groups++
	if d.err != nil {
		return nil, d.err
	}
	return d.FakeDiscovery.ServerGroups()
}

// coreResources are what every API server serves (client-go's memory cache takes an API server
// serving no group at all for one it could not ask, and asks again at every lookup).
var coreResources = &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}}

func newTestConfigs(t *testing.T) (*Configs, *countingDiscovery, *time.Time) {
	t.Helper()
	disc := &countingDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}}
	disc.Resources = []*metav1.APIResourceList{coreResources}
	s := newConfigs(disc, dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	return s, disc, &now
}

// However many config kinds the API server does not serve, the cache asks discovery at most once per
// RediscoverAfter: every unserved kind due for another look shares one request, and a kind whose CRD
// is installed meanwhile is found at the next one.
func TestConfigsDiscoveryIsRateLimited(t *testing.T) {
	ctx := context.Background()
	s, disc, now := newTestConfigs(t)
	var grs []configref.GroupResource
	for i := range 500 {
		grs = append(grs, configref.GroupResource{Group: fmt.Sprintf("g%d.example.com", i), Resource: "kinds"})
	}
	// Decisions ask every 200 ms for a minute (a busy add-on), the kinds in a different order
	// each time.
	for step := range 300 {
		slices.Reverse(grs)
		if synced, unserved := s.Ensure(ctx, grs); !synced || !unserved {
			t.Fatalf("step %d: synced %v, unserved %v; want true, true", step, synced, unserved)
		}
		*now = now.Add(200 * time.Millisecond)
	}
	// The first look, and one per RediscoverAfter after it.
	if max := 1 + int(time.Minute/RediscoverAfter); disc.groups > max {
		t.Fatalf("%d discoveries for 500 unserved kinds in a minute, want at most %d", disc.groups, max)
	}

	// A CRD installed now is found within RediscoverAfter, still without extra requests.
	before := disc.groups
	disc.Resources = []*metav1.APIResourceList{coreResources, {GroupVersion: "g7.example.com/v1", APIResources: []metav1.APIResource{{Name: "kinds", Kind: "Kind", Namespaced: true}}}}
	served := configref.GroupResource{Group: "g7.example.com", Resource: "kinds"}
	for range 60 {
		s.Ensure(ctx, grs)
		*now = now.Add(200 * time.Millisecond)
	}
	if kinds := s.Kinds(); len(kinds) != 1 || kinds[0].GroupResource != served {
		t.Fatalf("watched kinds %v, want only %v", kinds, served)
	}
	if n := disc.groups - before; n < 1 || n > 2 {
		t.Fatalf("%d discoveries in %s, want 1 or 2", n, 12*time.Second)
	}
}

// A failing discovery is not retried by every kind and every decision: the next try is
// RediscoverAfter later.
func TestConfigsFailedDiscoveryIsNotRetriedAtOnce(t *testing.T) {
	ctx := context.Background()
	s, disc, now := newTestConfigs(t)
	disc.err = errors.New("the server is currently unable to handle the request")
	grs := []configref.GroupResource{{Group: "a.example.com", Resource: "as"}, {Group: "b.example.com", Resource: "bs"}}
	for range 49 {
		s.Ensure(ctx, grs)
		*now = now.Add(200 * time.Millisecond)
	}
	if disc.groups != 1 {
		t.Fatalf("%d discoveries within %s of a failed one, want 1", disc.groups, RediscoverAfter)
	}
	disc.err = nil
	disc.Resources = []*metav1.APIResourceList{coreResources, {GroupVersion: "a.example.com/v1", APIResources: []metav1.APIResource{{Name: "as", Kind: "A"}}}}
	*now = now.Add(time.Second)
	s.Ensure(ctx, grs)
	if disc.groups != 2 || len(s.Kinds()) != 1 {
		t.Fatalf("after %s: %d discoveries, kinds %v; want 2 and a.example.com's", RediscoverAfter, disc.groups, s.Kinds())
	}
}
