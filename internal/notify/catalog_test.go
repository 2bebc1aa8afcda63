package notify

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/argoproj/notifications-engine/pkg/api"
	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"
)

// catalogPath is the shipped catalog, config/notifications/catalog.yaml.
var catalogPath = filepath.Join("..", "..", "config", "notifications", "catalog.yaml")

// The shipped catalog, with a webhook service added as a user would, parsed and sent by the
// library itself: every trigger is defined, fires, and its JSON body carries the moment.
func TestCatalog(t *testing.T) {
	data, err := os.ReadFile(catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("%s: %v", catalogPath, err)
	}
	if cm.Name != ConfigMapName {
		t.Errorf("%s names ConfigMap %q, want %q", catalogPath, cm.Name, ConfigMapName)
	}
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("webhook body is not JSON: %v: %s", err, b)
		}
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
	}))
	defer srv.Close()
	cm.Data["service.webhook"] = "url: $webhook-url\n"
	secret := &corev1.Secret{Data: map[string][]byte{"webhook-url": []byte(srv.URL)}}
	cfg, err := api.ParseConfig(&cm, secret)
	if err != nil {
		t.Fatalf("the catalog does not parse: %v", err)
	}
	a, err := api.NewAPI(*cfg, func(obj map[string]any, _ services.Destination) map[string]any { return obj })
	if err != nil {
		t.Fatalf("the catalog's triggers or templates do not compile: %v", err)
	}
	cma := &addonv1alpha1.ClusterManagementAddOn{ObjectMeta: metav1.ObjectMeta{Name: "logging"}}
	var want []map[string]any
	for _, trig := range Triggers() {
		m := Moment{Trigger: trig, Reason: ReasonsOf(trig)[0], Message: `a "quoted" message`, Addon: "logging"}
		m.Placement, m.VersionID, m.Kind, m.Clusters = "fleet/prod", "abc123", "Upgrade", []string{"c1", "c2"}
		vars, err := Vars(cma, m)
		if err != nil {
			t.Fatal(err)
		}
		conds, err := a.RunTrigger(trig, vars)
		if err != nil {
			t.Fatalf("trigger %s: %v", trig, err)
		}
		if len(conds) != 1 || !conds[0].Triggered {
			t.Fatalf("trigger %s: %+v, want one condition that fires", trig, conds)
		}
		if err := a.Send(vars, conds[0].Templates, services.Destination{Service: "webhook"}); err != nil {
			t.Fatalf("trigger %s: %v", trig, err)
		}
		want = append(want, map[string]any{"trigger": trig, "addon": "logging", "placement": "fleet/prod", "versionID": "abc123",
			"kind": "Upgrade", "clusters": []any{"c1", "c2"}, "reason": m.Reason, "message": m.Message})
		if n := a.GetConfig().Templates[conds[0].Templates[0]]; !strings.Contains(n.Message, "{{.versionID}}") {
			t.Errorf("trigger %s: the template's message does not name the version: %q", trig, n.Message)
		}
	}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("webhook bodies (-want +got):\n%s", diff)
	}
}
