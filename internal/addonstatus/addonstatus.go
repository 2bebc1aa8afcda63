// Package addonstatus is the status vocabulary addonops writes and reads: the condition types,
// reasons and messages of ManagedClusterAddOns and install progressions, the kinds of change and
// the classes of reasons (busy, done, failed, waiting), shared by the controller, the status
// command, the demo and the Argo CD and Flux health checks. It sits below controller/ and
// internal/rolloutview so that whoever reads status does not depend on the controller.
package addonstatus

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// Progressing reasons of an MCA and of a CMA install progression, in the words of the add-on
// lifecycle design (seed 000, and seed 001 story 3 for rollbacks). OCM's current code writes
// Progressing/Completed instead; the seed's reasons tell install from upgrade from rollback and
// success from failure, which is what users asked for.
const (
	ReasonInstalling        = "Installing"
	ReasonUpgrading         = "Upgrading"
	ReasonRollingBack       = "RollingBack"
	ReasonInstallSucceed    = "InstallSucceed"
	ReasonUpgradeSucceed    = "UpgradeSucceed"
	ReasonRollbackSucceeded = "RollbackSucceeded"
	ReasonInstallFailed     = "InstallFailed"
	ReasonUpgradeFailed     = "UpgradeFailed"
	ReasonRollbackFailed    = "RollbackFailed"
	ReasonWaitingForCanary  = addonv1alpha1.ProgressingReasonWaitingForCanary
)

// Configured condition strings, exactly as OCM's addon-configuration controller writes them
// (reference §4.5): add-on deployers that honour Configured keep a waiting cluster frozen. The two
// Configured=False reasons of an MCA that cannot be configured at all are this controller's
// (OCM reports ConfigurationUnsupported on Progressing; a deployer only looks at Configured).
const (
	ConditionConfigured            = addonv1alpha1.ManagedClusterAddOnConditionConfigured
	ConditionProgressing           = addonv1alpha1.ManagedClusterAddOnConditionProgressing
	ConditionAvailable             = addonv1alpha1.ManagedClusterAddOnConditionAvailable
	ConditionManifestApplied       = addonv1alpha1.ManagedClusterAddOnManifestApplied
	ReasonConfigured               = "ConfigurationsConfigured"
	MessageConfigured              = "Configurations configured"
	ReasonNotConfigured            = "ConfigurationsNotConfigured"
	MessageNotConfigured           = "Configurations updated and not configured yet"
	ReasonConfigurationUnsupported = addonv1alpha1.ProgressingReasonConfigurationUnsupported
	ReasonConfigurationNotFound    = "ConfigurationNotFound"
	// ReasonConfigurationForbidden: a config cannot be read because the controller may not list or
	// watch its kind (RBAC); the message names verb, group and resource.
	ReasonConfigurationForbidden = "ConfigurationForbidden"
	MessageInstallSucceed        = "install completed with no errors."
	MessageUpgradeSucceed        = "upgrade completed with no errors."
	MessageRollbackSucceeded     = "rollback completed with no errors."
	MessageInstalling            = "installing... waiting for the add-on's ManifestWorks to be applied and available with the desired configs"
	MessageUpgrading             = "upgrading... waiting for the add-on's ManifestWorks to be applied and available with the desired configs"
	MessageRollingBack           = "rolling back... waiting for the add-on's ManifestWorks to be applied and available with the desired configs"
)

// Kind is what moving an MCA to new configs is: its first install, an upgrade to a version it
// never ran, or a rollback to a version the add-on already ran successfully.
type Kind int

const (
	Install Kind = iota
	Upgrade
	Rollback
)

var kindReasons = [...]struct{ busy, done, failed, busyMsg, doneMsg, noun string }{
	Install:  {ReasonInstalling, ReasonInstallSucceed, ReasonInstallFailed, MessageInstalling, MessageInstallSucceed, "install"},
	Upgrade:  {ReasonUpgrading, ReasonUpgradeSucceed, ReasonUpgradeFailed, MessageUpgrading, MessageUpgradeSucceed, "upgrade"},
	Rollback: {ReasonRollingBack, ReasonRollbackSucceeded, ReasonRollbackFailed, MessageRollingBack, MessageRollbackSucceeded, "rollback"},
}

// BusyReason, DoneReason and FailedReason are the Progressing reasons of a change of kind k.
func (k Kind) BusyReason() string   { return kindReasons[k].busy }
func (k Kind) DoneReason() string   { return kindReasons[k].done }
func (k Kind) FailedReason() string { return kindReasons[k].failed }

// BusyMessage and DoneMessage are an MCA's Progressing messages while a change of kind k is under
// way and once it is done.
func (k Kind) BusyMessage() string { return kindReasons[k].busyMsg }
func (k Kind) DoneMessage() string { return kindReasons[k].doneMsg }

// Noun names the change in messages: install, upgrade, rollback.
func (k Kind) Noun() string { return kindReasons[k].noun }

// KindOfReason tells the kind of change a Progressing reason belongs to.
func KindOfReason(reason string) (Kind, bool) {
	for k, r := range kindReasons {
		if reason == r.busy || reason == r.done || reason == r.failed {
			return Kind(k), true
		}
	}
	return 0, false
}

// IsBusyReason, IsDoneReason and IsFailedReason classify a Progressing reason.
func IsBusyReason(reason string) bool {
	return reasonIs(reason, func(k Kind) string { return k.BusyReason() })
}
func IsDoneReason(reason string) bool {
	return reasonIs(reason, func(k Kind) string { return k.DoneReason() })
}
func IsFailedReason(reason string) bool {
	return reasonIs(reason, func(k Kind) string { return k.FailedReason() })
}

func reasonIs(reason string, of func(Kind) string) bool {
	for k := range kindReasons {
		if of(Kind(k)) == reason {
			return true
		}
	}
	return false
}

// Reasons of an install progression's Progressing condition besides the seed's (above): they
// say why a placement waits and name what is missing.
const (
	ReasonPlacementNotFound        = "PlacementNotFound"
	ReasonPlacementDecisionInvalid = "PlacementDecisionInvalid"
	ReasonInvalidRolloutStrategy   = "InvalidRolloutStrategy"
	ReasonInvalidCanaryPlacements  = "InvalidCanaryPlacements"
	// ReasonUndecodable: an object the placement depends on (its ClusterManagementAddOn outside a
	// rollout strategy, or its Placement) holds a value the controller's Go types cannot (the API
	// server accepted it: its schema does not check it); the message names the object and the
	// error. On an MCA that does not decode, it is what its placement's message says.
	ReasonUndecodable = "Undecodable"
	// ReasonManual: the install strategy is Manual; the progression is kept as history and no
	// placement is rolled out.
	ReasonManual = "Manual"
)

// WaitingReasons are the progression reasons that mean "this placement is blocked by a problem a
// person must fix"; the reconciler raises a warning event when a progression enters one.
var WaitingReasons = sets.New(ReasonPlacementNotFound, ReasonPlacementDecisionInvalid,
	ReasonConfigurationNotFound, ReasonConfigurationForbidden, ReasonInvalidRolloutStrategy, ReasonInvalidCanaryPlacements,
	ReasonUndecodable)

// Applied reports whether the MCA runs what it was told to: every desired config is also its
// lastAppliedConfig and no change is under way or failed (the Progressing reason is not a busy or
// failed one). A change restarts Progressing before anything is checked, so a lastAppliedConfig
// carried over to a new desired config (a rollback to the version a cluster last applied) never
// counts until its works were checked again. An add-on without configs has nothing to compare, so
// for it the Progressing condition alone decides.
func Applied(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	c := meta.FindStatusCondition(mca.Status.Conditions, ConditionProgressing)
	refs := mca.Status.ConfigReferences
	if len(refs) == 0 {
		return c != nil && IsDoneReason(c.Reason)
	}
	if c != nil && (IsBusyReason(c.Reason) || IsFailedReason(c.Reason)) {
		return false
	}
	for _, r := range refs {
		if r.DesiredConfig == nil || r.LastAppliedConfig == nil || *r.DesiredConfig != *r.LastAppliedConfig {
			return false
		}
	}
	return true
}
