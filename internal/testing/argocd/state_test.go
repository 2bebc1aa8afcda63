package argocd

import (
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/gitrepo"
)

// TestCommitState: from an Application's status to what Argo CD did with a commit. Only a sync of
// the commit that succeeded, followed by a comparison that says Synced, gives a verdict, and only
// Healthy and Degraded are verdicts.
func TestCommitState(t *testing.T) {
	const sha, before = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	reconciled := time.Date(2026, 11, 29, 14, 0, 5, 0, time.UTC)
	for _, c := range []struct {
		name   string
		status string // the Application's status, YAML
		want   gitrepo.CommitState
		line   []string // in Line
		// problem is in Problem; "" wants none.
		problem string
	}{{
		name: "the commit before, synced",
		status: `
sync: {status: Synced, revision: ` + before + `}
health: {status: Healthy}
operationState: {phase: Succeeded, syncResult: {revision: ` + before + `}}`,
		want: gitrepo.CommitState{Revision: "bbbbbbbbbbbb", Status: "Synced Healthy"},
		line: []string{"Argo CD Application addons-hub: Synced Healthy at bbbbbbbbbbbb, last sync Succeeded of bbbbbbbbbbbb; not yet commit aaaaaaaaaaaa"},
	}, {
		name: "resolved, not synced yet",
		status: `
sync: {status: OutOfSync, revision: ` + sha + `}
health: {status: Healthy}
operationState: {phase: Succeeded, syncResult: {revision: ` + before + `}}`,
		want: gitrepo.CommitState{Revision: "aaaaaaaaaaaa", Status: "OutOfSync Healthy"},
		line: []string{"not yet commit aaaaaaaaaaaa"},
	}, {
		name: "syncing",
		status: `
sync: {status: OutOfSync, revision: ` + sha + `}
health: {status: Healthy}
operationState: {phase: Running, syncResult: {revision: ` + sha + `}}`,
		want: gitrepo.CommitState{Revision: "aaaaaaaaaaaa", Status: "OutOfSync Healthy (syncing)"},
		line: []string{"syncing commit aaaaaaaaaaaa (Running)"},
	}, {
		name: "synced, still the comparison that started the sync",
		status: `
sync: {status: OutOfSync, revision: ` + sha + `}
health: {status: Healthy}
operationState: {phase: Succeeded, syncResult: {revision: ` + sha + `}}`,
		want: gitrepo.CommitState{Applied: true, Revision: "aaaaaaaaaaaa", Status: "OutOfSync Healthy (synced, not compared again yet)"},
		line: []string{"OutOfSync at commit aaaaaaaaaaaa: synced, not compared again yet"},
	}, {
		name: "compared: progressing",
		status: `
sync: {status: Synced, revision: ` + sha + `}
health: {status: Progressing, message: "rolling out: 2/6\nclusters"}
operationState: {phase: Succeeded, syncResult: {revision: ` + sha + `}}
resources:
- {kind: ClusterManagementAddOn, name: helloworld, health: {status: Progressing}}
reconciledAt: "2026-11-29T14:00:05Z"`,
		want: gitrepo.CommitState{Applied: true, Current: true, Revision: "aaaaaaaaaaaa", Status: "Synced Progressing", VerdictAt: reconciled},
		line: []string{"Synced Progressing at commit aaaaaaaaaaaa (ClusterManagementAddOn helloworld Progressing): rolling out: 2/6 clusters"},
	}, {
		name: "compared: suspended is no verdict",
		status: `
sync: {status: Synced, revision: ` + sha + `}
health: {status: Suspended}
operationState: {phase: Succeeded, syncResult: {revision: ` + sha + `}}`,
		want: gitrepo.CommitState{Applied: true, Current: true, Revision: "aaaaaaaaaaaa", Status: "Synced Suspended"},
	}, {
		name: "compared: healthy",
		status: `
sync: {status: Synced, revision: ` + sha + `}
health: {status: Healthy, message: ignored when healthy}
operationState: {phase: Succeeded, syncResult: {revision: ` + sha + `}}
resources:
- {kind: ClusterManagementAddOn, name: helloworld, health: {status: Healthy}}
reconciledAt: "2026-11-29T14:00:05Z"`,
		want: gitrepo.CommitState{Applied: true, Current: true, Verdict: gitrepo.Healthy, VerdictAt: reconciled, Revision: "aaaaaaaaaaaa", Status: "Synced Healthy"},
		line: []string{"Argo CD Application addons-hub: Synced Healthy at commit aaaaaaaaaaaa (ClusterManagementAddOn helloworld Healthy)"},
	}, {
		name: "compared: degraded",
		status: `
sync: {status: Synced, revision: ` + sha + `}
health: {status: Degraded, message: canary failed}
operationState: {phase: Succeeded, syncResult: {revision: ` + sha + `}}
reconciledAt: "2026-11-29T14:00:05Z"`,
		want: gitrepo.CommitState{Applied: true, Current: true, Verdict: gitrepo.Failed, VerdictAt: reconciled, Revision: "aaaaaaaaaaaa", Status: "Synced Degraded"},
		line: []string{"Synced Degraded at commit aaaaaaaaaaaa: canary failed"},
	}, {
		name: "the sync of the commit failed",
		status: `
sync: {status: OutOfSync, revision: ` + sha + `}
health: {status: Healthy}
operationState: {phase: Failed, message: "one or more objects failed to apply", syncResult: {revision: ` + sha + `}}`,
		want:    gitrepo.CommitState{Revision: "aaaaaaaaaaaa", Status: "OutOfSync Healthy"},
		line:    []string{"sync of commit aaaaaaaaaaaa Failed: one or more objects failed to apply"},
		problem: "sync of aaaaaaaaaaaa Failed: one or more objects failed to apply",
	}, {
		name: "a comparison error",
		status: `
sync: {status: Unknown}
health: {status: Missing}
conditions:
- {type: ComparisonError, message: "repository not accessible"}
- {type: SyncWarning, message: "not a problem"}`,
		want:    gitrepo.CommitState{Status: "Unknown Missing"},
		line:    []string{"Unknown Missing at -, last sync - of -; not yet commit aaaaaaaaaaaa"},
		problem: "ComparisonError: repository not accessible",
	}} {
		t.Run(c.name, func(t *testing.T) {
			app := application(t, c.status)
			got := app.CommitState(sha)
			line, problem := got.Line, got.Problem
			got.Line, got.Problem = "", ""
			if got.VerdictAt.Equal(c.want.VerdictAt) {
				got.VerdictAt = c.want.VerdictAt // the same instant, in another location
			}
			if got != c.want {
				t.Errorf("CommitState:\n got %+v\nwant %+v", got, c.want)
			}
			if !strings.HasPrefix(line, "Argo CD Application addons-hub: ") {
				t.Errorf("line %q does not name the Application", line)
			}
			for _, w := range c.line {
				if !strings.Contains(line, w) {
					t.Errorf("line %q does not say %q", line, w)
				}
			}
			if problem != c.problem {
				t.Errorf("problem %q, want %q", problem, c.problem)
			}
		})
	}
}

// application is Application addons-hub with status (YAML), decoded as Application reads it.
func application(t *testing.T, status string) *Application {
	t.Helper()
	var body map[string]any
	if err := yaml.Unmarshal([]byte(status), &body); err != nil {
		t.Fatalf("status: %v", err)
	}
	obj := map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "addons-hub", "namespace": Namespace}, "status": body}
	raw, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var app Application
	if err := yaml.Unmarshal(raw, &app); err != nil {
		t.Fatalf("decoding the Application: %v", err)
	}
	return &app
}

// TestMissingBinaries: bin/argocd (unless $ADDONOPS_ARGOCD names it) and the redis-server.
func TestMissingBinaries(t *testing.T) {
	t.Setenv("ADDONOPS_ARGOCD", "")
	t.Setenv("ADDONOPS_REDIS_SERVER", "/nonexistent/redis-server")
	if got, want := MissingBinaries(t.TempDir()), []string{"bin/argocd", "/nonexistent/redis-server"}; !slices.Equal(got, want) {
		t.Errorf("MissingBinaries of an empty tree: %v, want %v", got, want)
	}
	t.Setenv("ADDONOPS_ARGOCD", "/elsewhere/argocd")
	if got, want := MissingBinaries(t.TempDir()), []string{"/nonexistent/redis-server"}; !slices.Equal(got, want) {
		t.Errorf("MissingBinaries with $ADDONOPS_ARGOCD set: %v, want %v", got, want)
	}
}
