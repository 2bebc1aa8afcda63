package e2e

import (
	"fmt"
	"time"
)

const (
	// fluxRecipe is the README's Flux objects; the test changes only what a local registry and a
	// test's pace need (see applyRecipe).
	fluxRecipe = "health/flux/addonops-hub.yaml"
	// renderWorkflow is CI's side of the recipe, and healthReadme says it in prose.
	renderWorkflow = "health/flux/render-workflow.yaml"
	healthReadme   = "health/README.md"
	// fluxKustomization is the name the recipe gives its OCIRepository and Kustomization.
	fluxKustomization = "hello-addon-hub"
	// ociSourceRevision is the annotation `flux push artifact --revision` writes, which
	// source-controller copies into the OCIRepository's artifact metadata.
	ociSourceRevision = "org.opencontainers.image.revision"
	// requestedAtAnnotation asks Flux for a reconcile now (what `flux reconcile` writes).
	requestedAtAnnotation = "reconcile.fluxcd.io/requestedAt"
	// fluxPruneAnnotation is what config-hash stamps on hashed configs.
	fluxPruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
	// The test's intervals, instead of the recipe's 1m and 10m: the source is polled every 2s, and
	// the Kustomization reconciles (applies again, checks health again) every 10s.
	fluxSourceInterval        = "2s"
	fluxKustomizationInterval = "10s"
	// fluxTimeout bounds one push-to-verdict wait: a whole rollout with its health-check polls
	// (Flux polls every 5s) on two shared cores.
	fluxTimeout = 4 * time.Minute
	// quietPeriod is how long writes are counted after a verdict; it spans at least two of the
	// Kustomization's own intervals besides the reconciles the test requests.
	quietPeriod = 25 * time.Second
	// pausedHold is how long the test watches a paused rollout stay paused under Flux (several
	// health-check polls).
	pausedHold = 15 * time.Second
	// paused is the Progressing reason of a paused placement; placementNotFound of one whose
	// Placement does not exist.
	paused            = "Paused"
	placementNotFound = "PlacementNotFound"
)

// kustSnap is what the test follows of the Kustomization.
type kustSnap struct {
	// Ready, Healthy, Reconciling and Stalled are "<status>/<reason>" of those conditions, "" when
	// the condition is absent.
	Ready, Healthy, Reconciling, Stalled string
	// Message and Progress are the Ready and the Reconciling conditions' messages.
	Message, Progress string
	// Attempted and Applied are status.lastAttemptedRevision and lastAppliedRevision.
	Attempted, Applied string
	// ReadySince is the Ready condition's lastTransitionTime.
	ReadySince string
}

func (k kustSnap) key() string { return fluxKustomization }

func (k kustSnap) String() string {
	s := fmt.Sprintf("Ready=%s Healthy=%s Reconciling=%s Stalled=%s attempted=%s applied=%s: %q", orDash(k.Ready), orDash(k.Healthy),
		orDash(k.Reconciling), orDash(k.Stalled), orDash(k.Attempted), orDash(k.Applied), k.Message)
	if k.Progress != "" {
		s += fmt.Sprintf(" (reconciling: %q)", k.Progress)
	}
	return s
}
