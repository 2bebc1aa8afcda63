// Package planner is `addonops plan` and `addonops snapshot`: it reads the hub state a rollout
// decision needs (Snapshot), applies a change's rendered manifests to it in memory, and runs the
// controller's own decision code on it (rolloutplan.DecideInstall, rolloutplan.Decide) again and
// again, playing the add-on's deployer and work agent, to tell what the change will do: per add-on
// and placement the kind of change, the versions, the gating canary, the batches in order, the
// clusters already on the target or that cannot be configured, and what a reviewer must see
// (Report). The rollout is simulated as going well: every cluster told a version applies it and
// turns healthy at once, soaks and minSuccessTime pass as the decision's rechecks advance the clock.
package planner
