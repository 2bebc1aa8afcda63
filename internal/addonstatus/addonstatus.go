// Package addonstatus is the status vocabulary addonops writes and reads: the condition types,
// reasons and messages of ManagedClusterAddOns and install progressions, the kinds of change and
// the classes of reasons (busy, done, failed, waiting), shared by the controller, the status
// command, the demo and the Argo CD and Flux health checks. It sits below controller/ and
// internal/rolloutview so that whoever reads status does not depend on the controller.
package addonstatus

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
)

// Progressing reasons of an MCA and of a CMA install progression, in the words of the add-on
// lifecycle design (docs/design/lifecycle.md#progressing-reasons, rollbacks included). OCM's current
// code writes Progressing/Completed instead; the design's reasons tell install from upgrade from
// rollback and success from failure, which is what users asked for.
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
// (docs/design/configuration.md#the-configured-condition): add-on deployers that honour Configured
// keep a waiting cluster frozen. The two Configured=False reasons of an MCA that cannot be
// configured at all are this controller's (OCM reports ConfigurationUnsupported on Progressing; a
// deployer only looks at Configured).
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

// MessageWaitingForDeployer ends the Progressing message of an MCA that was told to run its
// configs a while ago (the controller's --deployer-wait, 2 minutes by default) and on which no
// deployer has reported ManifestApplied at all: the works are written by an add-on manager (OCM's
// addon-manager, the add-on's own hub manager, or addonops-controller --deploy-templates for
// template add-ons), and without one the rollout waits for ever. (OCM's addonprogressing says
// "Waiting for ManagedClusterAddOn ManifestApplied condition" at once, with reason
// WaitingForManifestApplied.) ReasonWaitingForDeployer is the Warning event on the CMA when it
// begins.
const (
	MessageWaitingForDeployer = "waiting for the add-on's deployer to report ManifestApplied — is an add-on manager deploying this add-on? " +
		"(OCM's addon-manager or the add-on's own manager; for template add-ons without one, addonops-controller --deploy-templates)"
	ReasonWaitingForDeployer = "WaitingForDeployer"
)

// ReasonNotificationFailed is the Warning event on a CMA whose notification of a rollout moment
// was not delivered (package notify): its service failed or timed out, the send queue was full, or
// the notification configuration cannot be read. The rollout never waits for a notification.
const ReasonNotificationFailed = "NotificationFailed"

// WaitingForDeployer reports whether the MCA's Progressing condition says it waits for a deployer
// (MessageWaitingForDeployer): the controller's verdict, which only it can time.
func WaitingForDeployer(mca *addonv1alpha1.ManagedClusterAddOn) bool {
	c := meta.FindStatusCondition(mca.Status.Conditions, ConditionProgressing)
	return c != nil && c.Status == metav1.ConditionTrue && IsBusyReason(c.Reason) && strings.HasSuffix(c.Message, MessageWaitingForDeployer)
}

// HealthSoak is addonops' own MCA condition: whether, for the MCA's current desired configs, the
// add-on has been seen healthy (Available=True) with every work ready (the desired config hashes,
// Applied and Available at its generation, the deployer's ManifestApplied=True), continuously since
// its lastTransitionTime. A cluster is done only once that has lasted the add-on's health soak
// (rolloutplan.Progress): health the prober reported before the works showed the new version
// describes the old agent, so it never counts. It is reset (False) with every new attempt (new
// desired configs), whenever a work stops being ready, and whenever health is not True.
const (
	ConditionHealthSoak = "HealthSoak"
	// ReasonWorksNotReady (False): the works do not run the desired configs yet, or no longer.
	ReasonWorksNotReady = "WorksNotReady"
	// ReasonNotHealthy (False): the works are ready, the add-on is not healthy (Available not True).
	ReasonNotHealthy = "NotHealthy"
	// ReasonSoaking (True): ready and healthy since lastTransitionTime; the soak is not over yet.
	ReasonSoaking = "Soaking"
	// ReasonSoaked (True): ready and healthy for the whole soak; the cluster is done.
	ReasonSoaked = "Soaked"
	// MessageWorksNotReady is the HealthSoak message of an attempt whose works are not ready.
	MessageWorksNotReady = "waiting for the add-on's ManifestWorks to report the desired configs; health counts only from then on"
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

// Reasons of an install progression's Progressing condition besides the design's (above): they
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
	// ReasonClustersNotConfigurable (Progressing=False): the placement's rollout cannot go on by
	// itself: no cluster is in progress, none failed, and every cluster not done has an MCA that
	// cannot be configured (Configured=False, ConfigurationUnsupported, ConfigurationNotFound or
	// ConfigurationForbidden). The message counts them and names them with the cause.
	ReasonClustersNotConfigurable = "ClustersNotConfigurable"
)

// Day-2 reasons of an install progression (package internal/operations): a person paused or
// aborted the placement's rollout, or the automatic abort policy did.
const (
	// ReasonPaused (Progressing=False): no new cluster starts; clusters in flight finish. Argo CD
	// shows Suspended; Flux: not Ready and not failed.
	ReasonPaused = "Paused"
	// ReasonAborting (Progressing=True): the clusters that moved to the aborted version go back to
	// the last known good one, paced by maxConcurrency.
	ReasonAborting = "Aborting"
	// ReasonAborted (Progressing=False): the rollout was aborted and its clusters are back; Degraded
	// until the placement's desired configs change (a fix or a revert in Git).
	ReasonAborted = "Aborted"
)

// Maintenance window reasons of an install progression (package internal/maintwindow).
const (
	// ReasonWaitingForWindow (Progressing=True): the placement's maintenance windows are closed, so
	// no new cluster starts; clusters in flight finish. Time fixes it: the message says which
	// window and when the next one opens, and the controller decides again then.
	ReasonWaitingForWindow = "WaitingForWindow"
	// ReasonInvalidMaintenanceWindows (Progressing=False, Degraded): the maintenance windows
	// annotation does not parse; no batch starts until it is fixed (fail closed).
	ReasonInvalidMaintenanceWindows = "InvalidMaintenanceWindows"
)

// Verification reasons of an install progression (package internal/verification).
const (
	// ReasonVerifying (Progressing=True): a batch finished and its verification runs; no new
	// cluster starts until it passes.
	ReasonVerifying = "Verifying"
	// ReasonVerificationInconclusive (Progressing=False, Suspended as Paused is: the placement waits
	// for a person, not for time, and nothing failed): a batch's verification could not
	// tell whether the version is good (its metrics were inconclusive, or errored: Prometheus
	// unreachable); no new cluster starts until a person promotes the version (`addonops promote`)
	// or aborts it (`addonops abort`).
	ReasonVerificationInconclusive = "VerificationInconclusive"
	// ReasonInvalidVerification (Progressing=False, Degraded): the verification annotation does not
	// parse or names a placement the add-on does not install; no batch starts until it is fixed
	// (fail closed).
	ReasonInvalidVerification = "InvalidVerification"
)

// WaitingReasons are the progression reasons that mean "this placement is blocked by a problem a
// person must fix"; the reconciler raises a warning event when a progression enters one. (A
// WaitingForCanary with Progressing=False is one too: see the classification below.)
var WaitingReasons = sets.New(ReasonPlacementNotFound, ReasonPlacementDecisionInvalid,
	ReasonConfigurationNotFound, ReasonConfigurationForbidden, ReasonInvalidRolloutStrategy, ReasonInvalidCanaryPlacements,
	ReasonClustersNotConfigurable, ReasonUndecodable, ReasonInvalidMaintenanceWindows, ReasonInvalidVerification)

// Degraded or Progressing: the one rule, decided by the controller and read the same way by
// internal/rolloutview (`addonops status`), the Argo CD health scripts and the Flux health
// expressions in health/ (health/*_test.go checks that they agree). The controller writes an
// install progression's Progressing condition
//
//   - True while time alone will finish the rollout: Installing, Upgrading, RollingBack, Aborting,
//     WaitingForWindow (a maintenance window opens later), and WaitingForCanary for a canary that
//     is still rolling out (Progressing);
//   - False once it cannot go on by itself. Then the reason decides: InstallSucceed,
//     UpgradeSucceed, RollbackSucceeded (and OCM's Completed) are Healthy; Paused is Suspended (a
//     person paused it and a resume continues it); Manual is Progressing (history of the Manual
//     strategy, not yet taken over); every other reason is Degraded: a person must act.
//     InstallFailed, UpgradeFailed, RollbackFailed, Aborted, ClustersNotConfigurable,
//     PlacementNotFound, PlacementDecisionInvalid, ConfigurationNotFound, ConfigurationForbidden,
//     InvalidRolloutStrategy, InvalidCanaryPlacements, InvalidMaintenanceWindows, and WaitingForCanary for a canary that
//     cannot pass without help (missing, empty, a canary cluster without MCA that no install
//     placement will create, a canary cluster getting its configs only from the gated placement,
//     a canary placement that is itself Degraded) or after the gated placement's own rollout of
//     its last known good configs stopped on failures.
//
// So the checks need no list of waiting reasons: the condition's status says whether time will fix
// it, and only the few reasons above are exceptions.

// Health classes of a Progressing condition (Argo CD's words; Flux: Current, InProgress, Failed,
// and InProgress for Suspended).
const (
	ClassHealthy     = "Healthy"
	ClassProgressing = "Progressing"
	ClassSuspended   = "Suspended"
	ClassDegraded    = "Degraded"
)

// SuccessReasons end a rollout well: the design's reasons the controller writes, and OCM's Completed
// (a hub whose own addon-manager wrote the status).
var SuccessReasons = sets.New(ReasonInstallSucceed, ReasonUpgradeSucceed, ReasonRollbackSucceeded, addonv1alpha1.ProgressingReasonCompleted)

// ClassOf classifies an install progression's Progressing condition (see above).
func ClassOf(status metav1.ConditionStatus, reason string) string {
	switch {
	case status != metav1.ConditionFalse:
		return ClassProgressing
	case SuccessReasons.Has(reason):
		return ClassHealthy
	case reason == ReasonPaused, reason == ReasonVerificationInconclusive:
		return ClassSuspended
	case reason == ReasonManual:
		return ClassProgressing
	}
	return ClassDegraded
}

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

// Who rolls an add-on out.
const (
	// ManagedByAddonops: addonops' controller (its default --addons=self).
	ManagedByAddonops = "addonops"
	// ManagedByAddonManager: OCM's addon-manager (unless addonops' controller runs with
	// --addons=all, which only the controller's flags tell).
	ManagedByAddonManager = "addon-manager"
)

// SelfManaged is the rule by which addonops' controller (with its default --addons=self) takes an
// add-on: its ClusterManagementAddOn is annotated addon.open-cluster-management.io/lifecycle with
// any value but "addon-manager" (OCM's addon-manager leaves exactly those alone). The controller
// (internal/hubcache Selects) and `addonops status` use this one function.
func SelfManaged(cma *addonv1alpha1.ClusterManagementAddOn) bool {
	v, ok := cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey]
	return ok && v != addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue
}
