package gitrepo

import (
	"strings"
	"time"
)

// Verdict is a GitOps engine's health verdict on a commit it applied.
type Verdict string

const (
	// NoVerdict: the engine has not judged the commit (the rollout is in progress for it).
	NoVerdict Verdict = ""
	Healthy   Verdict = "Healthy"
	Failed    Verdict = "Failed"
)

// CommitState is what a GitOps engine did with one commit of a repository, as its own objects
// say (argocd's Application.CommitState, flux's CommitState): the demo and the end-to-end tests
// read an engine through it.
type CommitState struct {
	// Applied: the engine applied the commit's objects to the hub.
	Applied bool
	// Current: the engine's status (Status, Verdict) is about what it applied of the commit, not
	// about what was there before (Argo CD: a comparison after the sync of the commit is in).
	Current bool
	// Verdict is the engine's health verdict on the commit's objects, NoVerdict while the rollout
	// is in progress for it; VerdictAt is when the engine reached it (the end of the health check
	// that gave it), to the second.
	Verdict   Verdict
	VerdictAt time.Time
	// Problem is set when the engine cannot apply the commit (not a health verdict); Fatal when
	// it never will (a part of it exited).
	Problem string
	Fatal   bool
	// Revision is the engine's name of what it applied, shortened for people (Flux: the OCI
	// artifact's revision).
	Revision string
	// Status is the engine's status in a few words ("Ready=True Healthy=True"), Line one line
	// saying where the engine is with the commit ("Flux Kustomization hello-addon-hub: ...").
	Status string
	Line   string
}

// Short shortens a commit's SHA to 12 characters, for people.
func Short(sha string) string { return sha[:min(len(sha), 12)] }

// OneLine joins a message's lines and cuts it to at most n bytes, for a status line.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// OrDash is s, or "-" when s is empty, for a status line.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
