package planner

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

var update = flag.Bool("update", false, "rewrite docs/guides/plan-example/hub-after-01.yaml")

// docsSnapshot is the hub state docs/guides/plan.md plans the rollout examples' step 02 on.
const docsSnapshot = "../../docs/guides/plan-example/hub-after-01.yaml"

// The hub of the plan examples in docs/guides/plan.md: four clusters of the set "default", the
// examples' Placement default/global-placement deciding all of them (as OCM's placement
// controller would), and the rollout examples' step 01 (its committed render) installed by the
// simulation. The committed file must be what this test writes (-update rewrites it).
func TestDocsExampleSnapshot(t *testing.T) {
	docs := []string{`{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: Placement, metadata: {namespace: default, name: global-placement, uid: uid-global-placement, generation: 1}, spec: {clusterSets: [default]}}`}
	var decisions []string
	for i := 1; i <= 4; i++ {
		docs = append(docs, fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1, kind: ManagedCluster, metadata: {name: cluster%d, labels: {cluster.open-cluster-management.io/clusterset: default}}}`, i))
		decisions = append(decisions, fmt.Sprintf(`{clusterName: cluster%d, reason: ""}`, i))
	}
	docs = append(docs, fmt.Sprintf(`{apiVersion: cluster.open-cluster-management.io/v1beta1, kind: PlacementDecision, metadata: {namespace: default, name: global-placement-decision-1, labels: {cluster.open-cluster-management.io/placement: global-placement, cluster.open-cluster-management.io/decision-group-index: "0", cluster.open-cluster-management.io/decision-group-name: ""}}, status: {decisions: [%s]}}`,
		strings.Join(decisions, ", ")))
	fresh := snapshotOf(t, docs...)
	fresh.HistoryNamespace = "open-cluster-management-hub"

	step01, err := os.Open("../../kustomize-rollout-examples/01-fresh-install/expected/hub.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer step01.Close()
	objs, err := ReadManifests(step01)
	if err != nil {
		t.Fatal(err)
	}
	rep, h, err := plan(fresh, objs, Options{Now: t0, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if p := placementOf(t, rep, "default/global-placement"); p.Change != ChangeInstall || !p.Completes || len(rep.Warnings) > 0 {
		t.Fatalf("step 01 on the fresh hub: %+v, warnings %v", p, rep.Warnings)
	}
	// The API server gives the add-on a uid when step 01 is applied; its history names it.
	for _, cma := range h.cmas {
		cma.UID = types.UID("uid-" + cma.Name)
	}
	for _, cm := range h.histories {
		for i := range cm.OwnerReferences {
			cm.OwnerReferences[i].UID = types.UID("uid-" + cm.OwnerReferences[i].Name)
		}
	}
	s, err := h.snapshot(fresh.HistoryNamespace, []ConfigKind{
		{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "AddOnDeploymentConfig", Resource: "addondeploymentconfigs", Namespaced: true},
		{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Kind: "AddOnTemplate", Resource: "addontemplates"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Server = "https://hub.example:6443"
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b = append([]byte("# The hub of the examples in docs/guides/plan.md: written by internal/planner's\n# TestDocsExampleSnapshot (go test ./internal/planner -run TestDocsExampleSnapshot -update).\n"), b...)
	if *update {
		if err := os.WriteFile(filepath.FromSlash(docsSnapshot), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(filepath.FromSlash(docsSnapshot))
	if err != nil {
		t.Fatalf("%v (go test ./internal/planner -run TestDocsExampleSnapshot -update writes it)", err)
	}
	if string(committed) != string(b) {
		got := filepath.Join(os.TempDir(), "hub-after-01.got.yaml")
		_ = os.WriteFile(got, b, 0o644)
		t.Fatalf("%s is not what the simulation of step 01 writes (%s): go test ./internal/planner -run TestDocsExampleSnapshot -update", docsSnapshot, got)
	}
	// The snapshot reads back, and step 02 plans on it as the docs show.
	back, err := ReadSnapshot(committed)
	if err != nil {
		t.Fatal(err)
	}
	step02, err := os.Open("../../kustomize-rollout-examples/02-rolling-update/expected/hub.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer step02.Close()
	if objs, err = ReadManifests(step02); err != nil {
		t.Fatal(err)
	}
	rep, err = Plan(back, objs, Options{Now: back.TakenAt.Time, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	p := placementOf(t, rep, "default/global-placement")
	if p.Change != ChangeUpgrade || batches(p) != "cluster1 | cluster2 | cluster3 | cluster4" || !p.Completes || len(p.Manifests) == 0 {
		t.Fatalf("step 02 after 01: change %s, batches %q, completes %t, manifests %d", p.Change, batches(p), p.Completes, len(p.Manifests))
	}
}
