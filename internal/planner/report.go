package planner

import "encoding/json"

// SchemaVersion is the version of the JSON form of a plan (docs/reference/plan-schema.md). A field
// is only ever added within a version; a change of meaning or a removal makes a new version.
const SchemaVersion = "addonops.io/plan/v1"

// Report is a plan: what applying the rendered manifests does on the hub.
type Report struct {
	SchemaVersion string `json:"schemaVersion"`
	// State says which hub state the plan was taken on and when that state was read.
	State State `json:"state"`
	// Addons are the add-ons the controller manages, by name.
	Addons []AddonPlan `json:"addons"`
	// Ignored are the objects of the rendered manifests the plan does not read (not an add-on,
	// placement, cluster or config kind).
	Ignored []string `json:"ignored,omitempty"`
	// Warnings are what the hub state tells beyond one add-on (objects that do not decode, what a
	// snapshot could not read).
	Warnings []string `json:"warnings,omitempty"`
}

// State is the hub state a plan was taken on.
type State struct {
	// Source is "snapshot FILE" or "hub SERVER".
	Source string `json:"source"`
	// TakenAt is when the hub was read (RFC 3339).
	TakenAt string `json:"takenAt"`
	// AgeSeconds is how old the state was when the plan was taken.
	AgeSeconds int64 `json:"ageSeconds"`
}

// AddonPlan is the plan of one add-on.
type AddonPlan struct {
	Addon string `json:"addon"`
	// Changed is false when the change moves nothing of this add-on.
	Changed bool `json:"changed"`
	// Configs are the add-on's configs the change adds or edits, with their spec diffs.
	Configs    []ConfigChange  `json:"configs,omitempty"`
	Placements []PlacementPlan `json:"placements,omitempty"`
	// Unplaced are the clusters no placement owns that take the default configs.
	Unplaced []string `json:"unplaced,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Steps is how many decisions the simulation took (a stalled rollout stops early).
	Steps int `json:"steps"`
	// NotInManifests: the rendered manifests lack the add-on and the plan runs without --prune,
	// so its ClusterManagementAddOn is left as is (the plan shows what the rest of the change
	// does to it).
	NotInManifests bool `json:"notInManifests,omitempty"`
	// Removal: the rendered manifests lack the add-on and the plan runs with --prune, so the
	// change deletes its ClusterManagementAddOn; LoseAgent are the clusters whose agent goes with
	// it, all at once (no rollout, canary or maintenance window holds a deletion).
	Removal   bool     `json:"removal,omitempty"`
	LoseAgent []string `json:"loseAgent,omitempty"`
}

// ConfigChange is one config object the change adds or edits.
type ConfigChange struct {
	// Config names it as kubectl does ("addondeploymentconfigs.addon.open-cluster-management.io ns/name").
	Config string `json:"config"`
	// Action is "add" or "edit".
	Action string `json:"action"`
	// RenamedFrom is, for a config config-hash renamed, the version the add-on used before (same
	// kind, namespace and addonops.io/base-name): the diff is against it.
	RenamedFrom string `json:"renamedFrom,omitempty"`
	// Diff is a unified diff of its content (everything but apiVersion, kind, metadata and status).
	Diff string `json:"diff,omitempty"`
}

// Change kinds of a placement.
const (
	ChangeInstall  = "Install"
	ChangeUpgrade  = "Upgrade"
	ChangeRollback = "Rollback"
	ChangeNoOp     = "NoOp"
	ChangeRemoval  = "Removal"
	// ChangeContinue: the change keeps the version the placement rolls out now; the plan shows
	// the rest of that rollout.
	ChangeContinue = "Continue"
)

// PlacementPlan is the plan of one install placement.
type PlacementPlan struct {
	// Placement is "namespace/name".
	Placement string `json:"placement"`
	// Change is Install, Upgrade, Rollback, Continue, NoOp or Removal.
	Change string `json:"change"`
	// RollbackTo is the history entry a rollback returns to.
	RollbackTo *HistoryEntry `json:"rollbackTo,omitempty"`
	// FromVersion and ToVersion are version ids (what `addonops history` lists); empty for none.
	FromVersion string   `json:"fromVersion,omitempty"`
	ToVersion   string   `json:"toVersion,omitempty"`
	FromConfigs []string `json:"fromConfigs,omitempty"`
	ToConfigs   []string `json:"toConfigs,omitempty"`
	Strategy    Strategy `json:"strategy"`
	// Canary is the placement that gates this one, when there is one.
	Canary *Canary `json:"canary,omitempty"`
	// Clusters is how many clusters the placement owns.
	Clusters int `json:"clusters"`
	// AlreadyOnTarget are the clusters that run the target version already: done at once.
	AlreadyOnTarget []string `json:"alreadyOnTarget,omitempty"`
	// Batches are the clusters told the target version, in order.
	Batches []Batch `json:"batches,omitempty"`
	// Manifests are, for a template add-on, how its agent manifests change per group of clusters.
	Manifests []ManifestDiff `json:"manifests,omitempty"`
	// NotConfigured are clusters that cannot be configured, and why.
	NotConfigured []ClusterProblem `json:"notConfigured,omitempty"`
	// Outcome is the placement's Progressing reason when the simulation ended (the controller's
	// vocabulary: InstallSucceed, UpgradeSucceed, Paused, ...), with its message.
	Outcome        string `json:"outcome"`
	OutcomeMessage string `json:"outcomeMessage,omitempty"`
	// LoseAgent are, for the removal of the add-on (--prune), the placement's clusters whose agent
	// goes.
	LoseAgent []string `json:"loseAgent,omitempty"`
	// Completes is true when every cluster of the placement ends on the target version.
	Completes bool     `json:"completes"`
	Warnings  []string `json:"warnings,omitempty"`
}

// HistoryEntry is a version of the add-on's version history.
type HistoryEntry struct {
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Started   string `json:"started"`
	Completed string `json:"completed,omitempty"`
	Result    string `json:"result"`
}

// Strategy is the rollout strategy the placement's clusters move by.
type Strategy struct {
	Type string `json:"type"`
	// MaxConcurrency is how many clusters may be in progress at once (0: no limit).
	MaxConcurrency   int    `json:"maxConcurrency,omitempty"`
	MaxFailures      string `json:"maxFailures,omitempty"`
	MinSuccessTime   string `json:"minSuccessTime,omitempty"`
	ProgressDeadline string `json:"progressDeadline,omitempty"`
	// HealthSoak is how long a cluster must stay healthy before it counts done.
	HealthSoak string `json:"healthSoak,omitempty"`
	// MandatoryGroups are the decision groups that go first.
	MandatoryGroups []string `json:"mandatoryGroups,omitempty"`
}

// Canary is the gating canary placement.
type Canary struct {
	Placement string `json:"placement"`
	// Gates is whether the canary gates this change (an upgrade waits for it; a rollback or
	// removal does not).
	Gates bool `json:"gates"`
	// State is the canary placement's Progressing reason before the change, with its message.
	State   string `json:"state,omitempty"`
	Message string `json:"message,omitempty"`
}

// Batch is clusters told the target version in one go: the next batch starts when they are done.
type Batch struct {
	// Step is the simulation round the batch started in, across the add-on's placements: a
	// gated placement's first batch comes after its canary's last.
	Step     int      `json:"step"`
	Clusters []string `json:"clusters"`
	// NotBefore is, for a batch a maintenance window holds, when the window opens and the batch
	// may start (RFC 3339, in the window's zone), the change applied when the hub state was read.
	NotBefore string `json:"notBefore,omitempty"`
	// Window says which window holds it (the controller's words: "deny window 0 (...) is active").
	Window string `json:"window,omitempty"`
}

// ClusterProblem is a cluster and why it cannot be configured.
type ClusterProblem struct {
	Cluster string `json:"cluster"`
	Reason  string `json:"reason"`
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
