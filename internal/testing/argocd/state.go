package argocd

import (
	"context"
	"fmt"
	"strings"

	"github.com/addonops/addonops/internal/testing/gitrepo"
)

// CommitState reads Application app and says what Argo CD did with commit sha
// (Application.CommitState); a part of Argo CD that exited is a fatal problem.
func (a *ArgoCD) CommitState(ctx context.Context, app, sha string) gitrepo.CommitState {
	if err := a.Failure(); err != nil {
		return gitrepo.CommitState{Status: "a part exited", Problem: err.Error(), Fatal: true,
			Line: fmt.Sprintf("Argo CD Application %s: %s", app, gitrepo.OneLine(err.Error(), 200))}
	}
	application, err := a.Application(ctx, app)
	if err != nil {
		return gitrepo.CommitState{Status: "no Application", Line: fmt.Sprintf("Argo CD Application %s: %v", app, err)}
	}
	return application.CommitState(sha)
}

// CommitState says what Argo CD did with commit sha, from the Application's status: its last sync
// (operationState) says whether Argo CD applied the commit, and once a comparison after that sync
// says Synced, its health (our Lua checks for the OCM kinds) is the verdict: Healthy or Degraded
// (Failed); any other health is no verdict yet.
func (a *Application) CommitState(sha string) gitrepo.CommitState {
	line := func(format string, args ...any) string {
		return fmt.Sprintf("Argo CD Application %s: ", a.Metadata.Name) + fmt.Sprintf(format, args...)
	}
	s := a.Status
	st := gitrepo.CommitState{Revision: gitrepo.Short(s.Sync.Revision)}
	st.Status = fmt.Sprintf("%s %s", gitrepo.OrDash(s.Sync.Status), gitrepo.OrDash(s.Health.Status))
	var problems []string
	for _, c := range s.Conditions {
		if strings.HasSuffix(c.Type, "Error") {
			problems = append(problems, c.Type+": "+c.Message)
		}
	}
	op := s.Operation
	opRev, opPhase := "", ""
	if op != nil {
		opPhase = op.Phase
		if op.SyncResult != nil {
			opRev = op.SyncResult.Revision
		}
	}
	at := "commit " + gitrepo.Short(sha)
	cma := ""
	for _, r := range s.Resources {
		if r.Kind == "ClusterManagementAddOn" && r.Health != nil {
			cma = fmt.Sprintf(" (ClusterManagementAddOn %s %s)", r.Name, r.Health.Status)
		}
	}
	switch {
	case opRev == sha && (opPhase == "Failed" || opPhase == "Error"):
		problems = append(problems, fmt.Sprintf("sync of %s %s: %s", gitrepo.Short(sha), opPhase, op.Message))
		st.Line = line("sync of %s %s: %s", at, opPhase, gitrepo.OneLine(op.Message, 200))
	case opRev != sha || s.Sync.Revision != sha:
		st.Line = line("%s at %s, last sync %s of %s; not yet %s", st.Status, gitrepo.OrDash(gitrepo.Short(s.Sync.Revision)),
			gitrepo.OrDash(opPhase), gitrepo.OrDash(gitrepo.Short(opRev)), at)
	case opPhase != "Succeeded":
		st.Status += " (syncing)"
		st.Line = line("syncing %s (%s)", at, opPhase)
	case s.Sync.Status != "Synced":
		// The sync of the commit succeeded, but the status is still the comparison that started
		// it (OutOfSync, with the health of what was there before): only a comparison after the
		// sync says Synced, and its health is about what the commit applied.
		st.Applied = true
		st.Status += " (synced, not compared again yet)"
		st.Line = line("%s at %s: synced, not compared again yet", gitrepo.OrDash(s.Sync.Status), at)
	default:
		st.Applied, st.Current = true, true
		switch s.Health.Status {
		case "Healthy":
			st.Verdict = gitrepo.Healthy
		case "Degraded":
			st.Verdict = gitrepo.Failed
		}
		if s.ReconciledAt != nil {
			st.VerdictAt = s.ReconciledAt.Time
		}
		st.Line = line("%s at %s%s", st.Status, at, cma)
		if s.Health.Message != "" && s.Health.Status != "Healthy" {
			st.Line += ": " + gitrepo.OneLine(s.Health.Message, 200)
		}
	}
	if len(problems) > 0 {
		st.Problem = strings.Join(problems, "; ")
	}
	return st
}
