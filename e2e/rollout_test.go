package e2e

// Progressing reasons of the add-on lifecycle design
// (docs/design/lifecycle.md#progressing-reasons): the addonops controller writes these on MCAs and
// on the ClusterManagementAddOn's install progressions.
const (
	installing        = "Installing"
	installSucceed    = "InstallSucceed"
	upgrading         = "Upgrading"
	upgradeSucceed    = "UpgradeSucceed"
	waitingForCanary  = "WaitingForCanary"
	rollingBack       = "RollingBack"
	rollbackSucceeded = "RollbackSucceeded"
)

var seedReasons = []string{installing, installSucceed, "InstallFailed", upgrading, upgradeSucceed, "UpgradeFailed", waitingForCanary,
	rollingBack, rollbackSucceeded, "RollbackFailed"}
