package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/addonops/addonops/internal/planner"
)

func TestPlanFromSnapshot(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"addonops", "plan", "-f", "testdata/plan-change.yaml", "--snapshot", "testdata/plan-snapshot.yaml", "--max-age", "0", "-o", "json"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep planner.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.SchemaVersion != planner.SchemaVersion || len(rep.Addons) != 1 || len(rep.Addons[0].Placements) != 1 {
		t.Fatalf("plan: %s", out.String())
	}
	p := rep.Addons[0].Placements[0]
	var got []string
	for _, b := range p.Batches {
		got = append(got, strings.Join(b.Clusters, ","))
	}
	if p.Change != planner.ChangeInstall || strings.Join(got, " | ") != "c1,c2 | c3" || !p.Completes {
		t.Fatalf("placement: %+v", p)
	}
	if len(rep.Ignored) != 1 || rep.Ignored[0] != "Namespace hello-system" {
		t.Fatalf("ignored: %v", rep.Ignored)
	}
}

// --diffs size prints each diff as its number of lines (planner.WithDiffSizes), the rest as it is.
func TestPlanDiffSizes(t *testing.T) {
	plan := func(args ...string) string {
		var out, errOut bytes.Buffer
		args = append([]string{"addonops", "plan", "-f", "testdata/plan-change.yaml", "--snapshot", "testdata/plan-snapshot.yaml", "--max-age", "0"}, args...)
		if code := run(args, &out, &errOut); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	full, sized := plan(), plan("--diffs", "size")
	if !strings.Contains(full, "+++ ") || strings.Contains(sized, "+++ ") || !strings.Contains(sized, "(a diff of ") {
		t.Errorf("--diffs size did not replace the diffs by their sizes:\n%s", sized)
	}
	// The lines before the first diff are the same.
	head := full[:strings.Index(full, "--- ")]
	if head = head[:strings.LastIndex(head, "\n")+1]; !strings.HasPrefix(sized, head) {
		t.Errorf("--diffs size changed more than the diffs:\n%s\nwant it to start with:\n%s", sized, head)
	}
}

func TestPlanStaleSnapshotWarns(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"addonops", "plan", "-f", "testdata/plan-change.yaml", "--snapshot", "testdata/plan-snapshot.yaml"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "WARNING: the snapshot is") || !strings.Contains(out.String(), "more than --max-age 1h0m0s") {
		t.Fatalf("no stale warning:\n%s", out.String())
	}
}

func TestPlanBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldSnap := write("old.yaml", "apiVersion: addonops.io/v0\nkind: HubSnapshot\nobjects: []\n")
	noKind := write("nokind.yaml", "metadata: {name: x}\n")
	change, err := os.ReadFile("testdata/plan-change.yaml")
	if err != nil {
		t.Fatal(err)
	}
	invalid := write("invalid.yaml", strings.Replace(string(change), "maxConcurrency: 2", `maxConcurrency: "0%"`, 1))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no -f", []string{"plan", "--snapshot", "testdata/plan-snapshot.yaml"}, "-f is required"},
		{"bad format", []string{"plan", "-f", "testdata/plan-change.yaml", "--snapshot", "testdata/plan-snapshot.yaml", "-o", "yaml"}, `--output "yaml"`},
		{"diff sizes in JSON", []string{"plan", "-f", "testdata/plan-change.yaml", "--snapshot", "testdata/plan-snapshot.yaml", "--diffs", "size", "-o", "json"}, "--diffs size is for people"},
		{"bad diffs", []string{"plan", "-f", "testdata/plan-change.yaml", "--snapshot", "testdata/plan-snapshot.yaml", "--diffs", "none"}, `--diffs "none": want full (every diff whole) or size`},
		{"old snapshot", []string{"plan", "-f", "testdata/plan-change.yaml", "--snapshot", oldSnap}, "this addonops reads apiVersion addonops.io/v1alpha1"},
		{"manifest without kind", []string{"plan", "-f", noKind, "--snapshot", "testdata/plan-snapshot.yaml"}, "document 1: no apiVersion or kind"},
		{"invalid manifests", []string{"plan", "-f", invalid, "--snapshot", "testdata/plan-snapshot.yaml"},
			`the rendered manifests are invalid (1 problem(s)); the hub or the controller would refuse them, so nothing is planned. Fix the sources (the KRM functions rollout-strategy, addon-template validate and config-hash report the same):
  ClusterManagementAddOn hello: spec.installStrategy.placements[0].rolloutStrategy.progressive.maxConcurrency: "0%"`},
		{"unreachable hub", []string{"plan", "-f", "testdata/plan-change.yaml", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"}, "is the hub reachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append([]string{"addonops"}, tc.args...), &out, &errOut)
			if code != exitError || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut.String(), exitError, tc.want)
			}
		})
	}
}

// The docs' hub after the rollout examples' step 01 runs add-on helloworld; the test change holds
// only add-on hello.
func TestPlanPrune(t *testing.T) {
	args := []string{"addonops", "plan", "-f", "testdata/plan-change.yaml", "--snapshot", "../../docs/guides/plan-example/hub-after-01.yaml", "--max-age", "0"}
	for _, tc := range []struct {
		prune bool
		want  []string
	}{
		{false, []string{"Add-on helloworld: not in the manifests, left as is (--prune plans its removal); no change"}},
		{true, []string{"Add-on helloworld: removed (--prune: not in the manifests)",
			"WARNING: --prune: the rendered manifests lack add-on helloworld, so the change deletes its ClusterManagementAddOn: 4 cluster(s) lose the agent at once",
			"placement default/global-placement: Removal, version b809e16382 -> -\n    the add-on is deleted: 4 cluster(s) of the placement lose the agent at once: cluster1, cluster2, cluster3, cluster4\n"}},
	} {
		var out, errOut bytes.Buffer
		a := args
		if tc.prune {
			a = append(a, "--prune")
		}
		if code := run(a, &out, &errOut); code != exitOK {
			t.Fatalf("--prune=%t: exit %d: %s", tc.prune, code, errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("--prune=%t: the plan lacks %q:\n%s", tc.prune, w, out.String())
			}
		}
		if !tc.prune && strings.Contains(out.String(), "Removal") {
			t.Errorf("without --prune, a removal:\n%s", out.String())
		}
	}
}

// The error of invalid manifests, as docs/guides/plan.md shows it (its lines must occur in
// testdata/plan-invalid.golden; -update-docs rewrites the file).
func TestPlanInvalidManifests(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"addonops", "plan", "-f", "testdata/plan-invalid.yaml", "--snapshot", "testdata/plan-snapshot.yaml"}, &out, &errOut)
	if code != exitError || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q; want %d and nothing", code, out.String(), exitError)
	}
	const golden = "testdata/plan-invalid.golden"
	if *updateDocs {
		if err := os.WriteFile(golden, errOut.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if errOut.String() != string(want) {
		t.Fatalf("stderr:\n%s\nwant (%s; go test ./cmd/addonops -run TestPlanInvalidManifests -update-docs rewrites it):\n%s", errOut.String(), golden, want)
	}
}
