package flux

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/addonops/addonops/internal/testing/gitrepo"
)

// CommitState reads the recipe's OCIRepository and Kustomization, both named name in Namespace,
// and says what Flux did with commit sha (CommitState); a part of Flux that exited is a fatal
// problem.
func (f *Flux) CommitState(ctx context.Context, name, sha string) gitrepo.CommitState {
	line := func(format string, args ...any) string {
		return fmt.Sprintf("Flux Kustomization %s: ", name) + fmt.Sprintf(format, args...)
	}
	if err := f.Failure(); err != nil {
		return gitrepo.CommitState{Status: "a part exited", Problem: err.Error(), Fatal: true, Line: line("%s", gitrepo.OneLine(err.Error(), 200))}
	}
	oci, err := f.hub.Clients.Dynamic.Resource(OCIRepositoryGVR).Namespace(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return gitrepo.CommitState{Status: "no OCIRepository", Line: line("its OCIRepository: %v", err)}
	}
	var k *unstructured.Unstructured
	if rev, source := Artifact(oci); source == SourceRevision(sha) {
		if k, err = f.hub.Clients.Dynamic.Resource(KustomizationGVR).Namespace(Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return gitrepo.CommitState{Revision: rev, Status: "no Kustomization", Line: line("%v", err)}
		}
	}
	return CommitState(oci, k, sha)
}

// RequestReconcile asks Flux to reconcile the object name of resource gvr in Namespace now, as
// `flux reconcile` does (RequestedAtAnnotation), and returns the request's value, which the
// object's status.lastHandledReconcileAt takes once a reconcile handled it.
func (f *Flux) RequestReconcile(ctx context.Context, gvr schema.GroupVersionResource, name, fieldManager string) (string, error) {
	at := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, RequestedAtAnnotation, at)
	if _, err := f.hub.Clients.Dynamic.Resource(gvr).Namespace(Namespace).Patch(ctx, name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return "", fmt.Errorf("flux: requesting a reconcile of %s %s/%s: %w", gvr.Resource, Namespace, name, err)
	}
	return at, nil
}

// condition is one condition of a Flux object.
type condition struct{ Status, Reason, Message string }

func conditions(u *unstructured.Unstructured) map[string]condition {
	out := map[string]condition{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		out[t] = condition{Status: s, Reason: r, Message: msg}
	}
	return out
}

// ShortRevision shortens a Flux revision ("main@sha256:<64 hex>") for people.
func ShortRevision(rev string) string {
	if i := strings.LastIndexByte(rev, ':'); i >= 0 && len(rev)-i-1 > 12 {
		return rev[:i+1+12]
	}
	return rev
}

// CommitState says what Flux did with commit sha, from the recipe's OCIRepository oci (has
// source-controller fetched the commit's push?) and its Kustomization k (nil: not read, for an
// artifact that is not the commit's). The Kustomization reports each reconcile's stage in its
// Reconciling condition ("Running health checks for revision R" once it applied R), and when a
// reconcile ended (no Reconciling condition, or reason ProgressingWithRetry after a failure) its
// Ready condition is about status.lastAttemptedRevision: Ready is the Healthy verdict, Ready=False
// HealthCheckFailed the Failed one, any other Ready=False a problem.
func CommitState(oci, k *unstructured.Unstructured, sha string) gitrepo.CommitState {
	name := oci.GetName()
	line := func(format string, args ...any) string {
		return fmt.Sprintf("Flux Kustomization %s: ", name) + fmt.Sprintf(format, args...)
	}
	rev, source := Artifact(oci)
	if source != SourceRevision(sha) || k == nil {
		st := gitrepo.CommitState{Status: "fetching", Line: line("waiting for source-controller to fetch commit %s (its artifact: %s)",
			gitrepo.Short(sha), gitrepo.OrDash(ShortRevision(rev)))}
		if c := conditions(oci)["Ready"]; c.Status == "False" {
			st.Problem = fmt.Sprintf("OCIRepository %s: %s: %s", name, c.Reason, c.Message)
			st.Line += "; OCIRepository Ready=False " + c.Reason + ": " + c.Message
		}
		return st
	}
	conds := conditions(k)
	attempted, _, _ := unstructured.NestedString(k.Object, "status", "lastAttemptedRevision")
	appliedRev, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
	ready, healthy, rec := conds["Ready"], conds["Healthy"], conds["Reconciling"]
	st := gitrepo.CommitState{Revision: ShortRevision(rev)}
	st.Status = fmt.Sprintf("Ready=%s Healthy=%s", gitrepo.OrDash(ready.Status), gitrepo.OrDash(healthy.Status))
	if ready.Status == "False" {
		st.Status = fmt.Sprintf("Ready=False/%s Healthy=%s", ready.Reason, gitrepo.OrDash(healthy.Status))
	}
	at := fmt.Sprintf("%s (commit %s)", st.Revision, gitrepo.Short(sha))
	running := rec.Status == "True" && rec.Reason != "ProgressingWithRetry"
	switch {
	case running && strings.Contains(rec.Message, " revision "+rev):
		stage, _, _ := strings.Cut(rec.Message, " for revision ")
		st.Status += " (" + stage + ")"
		st.Applied = strings.HasPrefix(rec.Message, "Running health checks")
		st.Current = st.Applied
		st.Line = line("%s: %s", st.Status, at)
	case running:
		st.Line = line("%s: reconciling %s, not yet %s", st.Status, gitrepo.OrDash(ShortRevision(attempted)), at)
	case attempted != rev:
		st.Line = line("%s at %s; %s fetched, not yet applied", st.Status, gitrepo.OrDash(ShortRevision(attempted)), at)
	case ready.Status == "True" && appliedRev == rev:
		st.Applied, st.Current, st.Verdict, st.VerdictAt = true, true, gitrepo.Healthy, lastReconciled(k)
		st.Line = line("%s at %s", st.Status, at)
	case ready.Status == "False" && ready.Reason == "HealthCheckFailed":
		st.Applied, st.Current, st.Verdict, st.VerdictAt = true, true, gitrepo.Failed, lastReconciled(k)
		st.Line = line("%s at %s: %s", st.Status, at, gitrepo.OneLine(ready.Message, 200))
	case ready.Status == "False":
		st.Problem = fmt.Sprintf("Kustomization %s: %s: %s", name, ready.Reason, ready.Message)
		st.Line = line("%s at %s: %s", st.Status, at, gitrepo.OneLine(ready.Message, 200))
	default:
		st.Line = line("%s at %s", st.Status, at)
	}
	return st
}

// lastReconciled is when kustomize-controller last ended a reconcile of the Kustomization: the
// newest entry of status.history (its lastReconciled, to the second), written with the reconcile's
// verdict; zero when there is none.
func lastReconciled(k *unstructured.Unstructured) time.Time {
	history, _, _ := unstructured.NestedSlice(k.Object, "status", "history")
	var latest time.Time
	for _, h := range history {
		m, _ := h.(map[string]any)
		s, _ := m["lastReconciled"].(string)
		if t, err := time.Parse(time.RFC3339, s); err == nil && t.After(latest) {
			latest = t
		}
	}
	return latest
}
