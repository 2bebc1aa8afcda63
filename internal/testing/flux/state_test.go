package flux

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/testing/gitrepo"
)

// TestCommitState: from the recipe's OCIRepository and Kustomization to what Flux did with a
// commit. The commit is applied once kustomize-controller runs the health checks for its artifact;
// Ready with it applied is the Healthy verdict, HealthCheckFailed the Failed one, and any other
// Ready=False a problem.
func TestCommitState(t *testing.T) {
	const (
		sha    = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		before = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		rev    = "main@sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
		old    = "main@sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	)
	fetched := oci(t, rev, SourceRevision(sha), "")
	reconciled := time.Date(2026, 11, 29, 14, 0, 5, 0, time.UTC)
	for _, c := range []struct {
		name    string
		oci     *unstructured.Unstructured
		kust    string // the Kustomization's status, YAML; "" for none read
		want    gitrepo.CommitState
		line    string // in Line
		problem string // "" wants none
	}{{
		name: "the artifact of the commit before",
		oci:  oci(t, old, SourceRevision(before), ""),
		want: gitrepo.CommitState{Status: "fetching"},
		line: "Flux Kustomization hello-addon-hub: waiting for source-controller to fetch commit aaaaaaaaaaaa (its artifact: main@sha256:dddddddddddd)",
	}, {
		name:    "the source fails",
		oci:     oci(t, old, SourceRevision(before), "{type: Ready, status: \"False\", reason: OCIArtifactPullFailed, message: not found}"),
		want:    gitrepo.CommitState{Status: "fetching"},
		line:    "; OCIRepository Ready=False OCIArtifactPullFailed: not found",
		problem: "OCIRepository hello-addon-hub: OCIArtifactPullFailed: not found",
	}, {
		name: "fetched; reconciling the artifact before",
		oci:  fetched,
		kust: `
lastAttemptedRevision: ` + old + `
conditions:
- {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision ` + old + ` with a timeout of 5m0s"}
- {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress}`,
		want: gitrepo.CommitState{Revision: "main@sha256:cccccccccccc", Status: "Ready=Unknown Healthy=-"},
		line: ": reconciling main@sha256:dddddddddddd, not yet main@sha256:cccccccccccc (commit aaaaaaaaaaaa)",
	}, {
		name: "fetched, not attempted",
		oci:  fetched,
		kust: `
lastAttemptedRevision: ` + old + `
lastAppliedRevision: ` + old + `
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: ` + old + `"}`,
		want: gitrepo.CommitState{Revision: "main@sha256:cccccccccccc", Status: "Ready=True Healthy=-"},
		line: "Ready=True Healthy=- at main@sha256:dddddddddddd; main@sha256:cccccccccccc (commit aaaaaaaaaaaa) fetched, not yet applied",
	}, {
		name: "building its manifests",
		oci:  fetched,
		kust: `
lastAttemptedRevision: ` + old + `
conditions:
- {type: Reconciling, status: "True", reason: Progressing, message: "Building manifests for revision ` + rev + ` with a timeout of 5m0s"}
- {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress}`,
		want: gitrepo.CommitState{Revision: "main@sha256:cccccccccccc", Status: "Ready=Unknown Healthy=- (Building manifests)"},
		line: "Ready=Unknown Healthy=- (Building manifests): main@sha256:cccccccccccc (commit aaaaaaaaaaaa)",
	}, {
		name: "applied, running its health checks",
		oci:  fetched,
		kust: `
lastAttemptedRevision: ` + rev + `
lastAppliedRevision: ` + old + `
conditions:
- {type: Reconciling, status: "True", reason: Progressing, message: "Running health checks for revision ` + rev + ` with a timeout of 5m0s"}
- {type: Ready, status: Unknown, reason: Progressing, message: Reconciliation in progress}
- {type: Healthy, status: Unknown, reason: Progressing, message: Running health checks}`,
		want: gitrepo.CommitState{Applied: true, Current: true, Revision: "main@sha256:cccccccccccc", Status: "Ready=Unknown Healthy=Unknown (Running health checks)"},
		line: "Ready=Unknown Healthy=Unknown (Running health checks): main@sha256:cccccccccccc (commit aaaaaaaaaaaa)",
	}, {
		name: "ready",
		oci:  fetched,
		kust: `
lastAttemptedRevision: ` + rev + `
lastAppliedRevision: ` + rev + `
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: ` + rev + `"}
- {type: Healthy, status: "True", reason: Succeeded, message: Health check passed}
history:
- {lastReconciled: "2026-11-29T13:59:00Z"}
- {lastReconciled: "2026-11-29T14:00:05Z"}`,
		want: gitrepo.CommitState{Applied: true, Current: true, Verdict: gitrepo.Healthy, VerdictAt: reconciled, Revision: "main@sha256:cccccccccccc", Status: "Ready=True Healthy=True"},
		line: "Ready=True Healthy=True at main@sha256:cccccccccccc (commit aaaaaaaaaaaa)",
	}, {
		name: "the health check failed, retrying",
		oci:  fetched,
		kust: `
lastAttemptedRevision: ` + rev + `
lastAppliedRevision: ` + old + `
conditions:
- {type: Reconciling, status: "True", reason: ProgressingWithRetry, message: "Detecting drift for revision ` + rev + `"}
- {type: Ready, status: "False", reason: HealthCheckFailed, message: "health check failed after 20s:\n ClusterManagementAddOn/hello"}
- {type: Healthy, status: "False", reason: HealthCheckFailed, message: health check failed}
history:
- {lastReconciled: "2026-11-29T14:00:05Z"}`,
		want: gitrepo.CommitState{Applied: true, Current: true, Verdict: gitrepo.Failed, VerdictAt: reconciled, Revision: "main@sha256:cccccccccccc",
			Status: "Ready=False/HealthCheckFailed Healthy=False"},
		line: "at main@sha256:cccccccccccc (commit aaaaaaaaaaaa): health check failed after 20s: ClusterManagementAddOn/hello",
	}, {
		name: "the build failed",
		oci:  fetched,
		kust: `
lastAttemptedRevision: ` + rev + `
lastAppliedRevision: ` + old + `
conditions:
- {type: Ready, status: "False", reason: BuildFailed, message: "kustomize build failed"}`,
		want:    gitrepo.CommitState{Revision: "main@sha256:cccccccccccc", Status: "Ready=False/BuildFailed Healthy=-"},
		line:    "Ready=False/BuildFailed Healthy=- at main@sha256:cccccccccccc (commit aaaaaaaaaaaa): kustomize build failed",
		problem: "Kustomization hello-addon-hub: BuildFailed: kustomize build failed",
	}} {
		t.Run(c.name, func(t *testing.T) {
			var k *unstructured.Unstructured
			if c.kust != "" {
				k = object(t, "Kustomization", c.kust)
			}
			got := CommitState(c.oci, k, sha)
			line, problem := got.Line, got.Problem
			got.Line, got.Problem = "", ""
			if got.VerdictAt.Equal(c.want.VerdictAt) {
				got.VerdictAt = c.want.VerdictAt // the same instant, in another location
			}
			if got != c.want {
				t.Errorf("CommitState:\n got %+v\nwant %+v", got, c.want)
			}
			if !strings.HasPrefix(line, "Flux Kustomization hello-addon-hub: ") || !strings.Contains(line, c.line) {
				t.Errorf("line %q does not name the Kustomization or say %q", line, c.line)
			}
			if problem != c.problem {
				t.Errorf("problem %q, want %q", problem, c.problem)
			}
		})
	}
}

// oci is the recipe's OCIRepository having fetched artifact revision rev, pushed from source,
// with condition (YAML; "" none).
func oci(t *testing.T, rev, source, condition string) *unstructured.Unstructured {
	t.Helper()
	status := "artifact: {revision: " + rev + ", metadata: {" + SourceRevisionKey + ": \"" + source + "\"}}"
	if condition != "" {
		status += "\nconditions: [" + condition + "]"
	}
	return object(t, "OCIRepository", status)
}

// object is an object of kind named hello-addon-hub in Namespace with status (YAML).
func object(t *testing.T, kind, status string) *unstructured.Unstructured {
	t.Helper()
	var s map[string]any
	if err := yaml.Unmarshal([]byte(status), &s); err != nil {
		t.Fatalf("%s status: %v", kind, err)
	}
	return &unstructured.Unstructured{Object: map[string]any{"kind": kind,
		"metadata": map[string]any{"name": "hello-addon-hub", "namespace": Namespace}, "status": s}}
}
