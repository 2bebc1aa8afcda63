package refdocs

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// Where a condition or reason appears.
const (
	onProgression = "install progression `Progressing`"
	onMCA         = "MCA `Progressing`"
	onConfigured  = "MCA `Configured`"
	onSoak        = "MCA `HealthSoak`"
	onEvent       = "Warning event on the CMA"
)

// conditionDoc describes a condition type of internal/addonstatus.
type conditionDoc struct {
	Const, Value string
	On, Writers  string
	Meaning      string
}

var conditionDocs = []conditionDoc{
	{"ConditionProgressing", addonstatus.ConditionProgressing,
		"a ClusterManagementAddOn's `status.installProgressions[].conditions` (one per install placement) and a ManagedClusterAddOn's `status.conditions`",
		"the controller (an install progression: the controller alone writes the CMA status; an MCA: the controller, and OCM's addon-manager on add-ons the controller does not manage)",
		"Where the rollout stands: its reason is one of the reasons below, and on an install progression its status says whether time alone will finish it (`True`) or not (`False`). The [classes](#classes) are read from it."},
	{"ConditionConfigured", addonstatus.ConditionConfigured,
		"a ManagedClusterAddOn",
		"the controller, exactly as OCM's addon-configuration controller writes it",
		"Whether the cluster may run its desired configs now (`True`, `ConfigurationsConfigured`) or waits for its turn, a pause or a fix (`False`): add-on deployers that honour it keep a waiting cluster's works as they are."},
	{"ConditionAvailable", addonstatus.ConditionAvailable,
		"a ManagedClusterAddOn",
		"OCM's health prober (from the cluster's agent or its works' status feedback), or the controller under `--deploy-templates` from the agent Deployments' ready replicas",
		"Whether the add-on is healthy on that cluster. The controller believes it about that cluster only: a cluster is done only once it has been `True` for the health soak after the works ran the desired configs."},
	{"ConditionManifestApplied", addonstatus.ConditionManifestApplied,
		"a ManagedClusterAddOn",
		"the add-on's deployer: OCM's addon-manager, the add-on's own manager, or the controller under `--deploy-templates`",
		"Whether the deployer wrote the cluster's ManifestWorks for the desired configs. A cluster told to run its configs that sees none for `--deployer-wait` gets the `WaitingForDeployer` message and event."},
	{"ConditionHealthSoak", addonstatus.ConditionHealthSoak,
		"a ManagedClusterAddOn",
		"the controller only",
		"addonops' own condition: whether, for the MCA's current desired configs, the add-on has been seen healthy with every work ready, continuously since its `lastTransitionTime`. A cluster is done once that lasted the add-on's health soak ([`addonops.io/health-soak`](annotations.md#addonopsiohealth-soak)). Reset with every new attempt."},
}

// reasonDoc describes a reason.
type reasonDoc struct {
	// Const is the internal/addonstatus constant ("" for a reason of OCM's that addonops reads).
	Const, Value string
	On           []string
	// Statuses the Progressing condition of an install progression has with this reason (for
	// the class); none: the reason is not an install progression's.
	Statuses []metav1.ConditionStatus
	Meaning  string
	// Action: what a person does about it ("" when nothing is needed).
	Action string
}

var (
	condTrue  = metav1.ConditionTrue
	condFalse = metav1.ConditionFalse
)

const actionFailed = "`addonops status ADDON` names the failed clusters and why (a ManifestWork not applied, an agent not ready); fix the config in Git and let the rollout go on, `addonops retry ADDON`, or revert to the last known good version (`addonops abort ADDON`)."

var reasonDocs = []reasonDoc{
	{"ReasonInstalling", addonstatus.ReasonInstalling, []string{onProgression, onMCA}, []metav1.ConditionStatus{condTrue},
		"The add-on's first install on the cluster (or the placement's clusters) is under way: the works are being applied and the add-on has not been healthy for the soak yet.", ""},
	{"ReasonUpgrading", addonstatus.ReasonUpgrading, []string{onProgression, onMCA}, []metav1.ConditionStatus{condTrue},
		"A move to a config version the add-on never completed is under way.", ""},
	{"ReasonRollingBack", addonstatus.ReasonRollingBack, []string{onProgression, onMCA}, []metav1.ConditionStatus{condTrue},
		"A move back to a version the controller's own records (the version history, the install progression's last applied or last known good configs) list as completed is under way; it skips the canary.", ""},
	{"ReasonInstallSucceed", addonstatus.ReasonInstallSucceed, []string{onProgression, onMCA}, []metav1.ConditionStatus{condFalse},
		"The install completed: every cluster ran the configs and was healthy for the soak.", ""},
	{"ReasonUpgradeSucceed", addonstatus.ReasonUpgradeSucceed, []string{onProgression, onMCA}, []metav1.ConditionStatus{condFalse},
		"The upgrade completed; the version becomes the placement's last known good.", ""},
	{"ReasonRollbackSucceeded", addonstatus.ReasonRollbackSucceeded, []string{onProgression, onMCA}, []metav1.ConditionStatus{condFalse},
		"The rollback completed.", ""},
	{"", addonv1alpha1.ProgressingReasonCompleted, []string{onProgression, onMCA}, []metav1.ConditionStatus{condFalse},
		"OCM's own success reason, written by OCM's addon-manager (an add-on addonops does not manage, or before a move to addonops). addonops reads it as success and never writes it.", ""},
	{"ReasonInstallFailed", addonstatus.ReasonInstallFailed, []string{onProgression, onMCA}, []metav1.ConditionStatus{condFalse},
		"On an MCA: the cluster's install failed (a work not applied, the add-on not healthy before the placement's `progressDeadline`, or its batch's [verification](annotations.md#addonopsioverification) failed: the message names the batch, the placement, the template and the run's message). On an install progression: the rollout stopped on `maxFailures`.", actionFailed},
	{"ReasonUpgradeFailed", addonstatus.ReasonUpgradeFailed, []string{onProgression, onMCA}, []metav1.ConditionStatus{condFalse},
		"As InstallFailed, for an upgrade. With [`addonops.io/auto-abort`](annotations.md#addonopsioauto-abort) the controller aborts it by itself.", actionFailed},
	{"ReasonRollbackFailed", addonstatus.ReasonRollbackFailed, []string{onProgression, onMCA}, []metav1.ConditionStatus{condFalse},
		"As InstallFailed, for a rollback.", actionFailed},
	{"ReasonWaitingForCanary", addonstatus.ReasonWaitingForCanary, []string{onProgression}, []metav1.ConditionStatus{condTrue, condFalse},
		"A placement gated by a canary placement ([`addonops.io/canary-placements`](annotations.md#addonopsiocanary-placements)) waits for the canary to complete the desired version. `True` while the canary is still rolling out; `False` when the canary cannot pass without help (missing, empty, a canary cluster without an MCA that no install placement creates, a canary that is itself Degraded) or the placement's own rollout of its last known good configs stopped on failures.",
		"With `False`: the message names the problem; fix the canary placement, or `addonops promote ADDON --placement NS/NAME` to pass the gate for this version."},
	{"ReasonConfigured", addonstatus.ReasonConfigured, []string{onConfigured}, nil,
		"`Configured=True`: the cluster runs its turn's desired configs.", ""},
	{"ReasonNotConfigured", addonstatus.ReasonNotConfigured, []string{onConfigured}, nil,
		"`Configured=False`: the cluster's desired configs changed and its turn has not come (strategy pacing, a canary gate, a pause).", ""},
	{"ReasonConfigurationUnsupported", addonstatus.ReasonConfigurationUnsupported, []string{onConfigured, onMCA}, nil,
		"OCM's reason: the MCA's `spec.configs` names a config type the add-on does not support (not in the CMA's `spec.supportedConfigs`); the MCA cannot be configured.",
		"Add the type to the ClusterManagementAddOn's `spec.supportedConfigs` or remove it from the ManagedClusterAddOn's `spec.configs`."},
	{"ReasonConfigurationNotFound", addonstatus.ReasonConfigurationNotFound, []string{onProgression, onConfigured}, []metav1.ConditionStatus{condFalse},
		"A config the add-on, its placement or the MCA references does not exist on the hub; the message names it. The placement's clusters keep their configs.",
		"Apply the config (a sync that has not run yet, a typo in a name), or fix the reference."},
	{"ReasonConfigurationForbidden", addonstatus.ReasonConfigurationForbidden, []string{onProgression, onConfigured, onEvent}, []metav1.ConditionStatus{condFalse},
		"The controller may not list or watch a config kind add-ons reference (RBAC); the message names verb, group and resource. The metric `addonops_config_kind_forbidden` is 1 meanwhile.",
		"Grant list and watch with a ClusterRole labelled [`addonops.io/aggregate-to-controller`](annotations.md#addonopsioaggregate-to-controller)."},
	{"ReasonWaitingForDeployer", addonstatus.ReasonWaitingForDeployer, []string{onEvent}, nil,
		"A cluster was told to run its configs `--deployer-wait` ago (2 minutes by default) and no deployer has reported `ManifestApplied` at all; its MCA's Progressing message ends with the same question. Without a deployer the rollout waits for ever.",
		"Run an add-on manager for the add-on: OCM's addon-manager, the add-on's own manager, or for template add-ons on a hub without one `addonops-controller --deploy-templates`."},
	{"ReasonNotificationFailed", addonstatus.ReasonNotificationFailed, []string{onEvent}, nil,
		"A notification of a rollout moment ([notifications](../guides/notifications.md)) was not delivered: the message names the trigger, placement, version and service, and why (the service failed or gave no answer within the send timeout, the send queue was full, the trigger is not defined, or the notification ConfigMap or Secret cannot be read). The rollout goes on regardless; `addonops_notifications_total` counts it by result.",
		"Fix the service's configuration or the receiver; a moment is not sent again."},
	{"ReasonWorksNotReady", addonstatus.ReasonWorksNotReady, []string{onSoak}, nil,
		"`HealthSoak=False`: the works do not run the desired configs yet, or no longer; health counts only from then on.", ""},
	{"ReasonNotHealthy", addonstatus.ReasonNotHealthy, []string{onSoak}, nil,
		"`HealthSoak=False`: the works are ready and the add-on is not healthy (`Available` not `True`).", ""},
	{"ReasonSoaking", addonstatus.ReasonSoaking, []string{onSoak}, nil,
		"`HealthSoak=True`: ready and healthy since `lastTransitionTime`; the soak is not over yet. Kept in the controller's memory and written with the cluster's outcome, or once it lasted `--interim-hold`.", ""},
	{"ReasonSoaked", addonstatus.ReasonSoaked, []string{onSoak}, nil,
		"`HealthSoak=True`: ready and healthy for the whole soak; the cluster is done.", ""},
	{"ReasonPlacementNotFound", addonstatus.ReasonPlacementNotFound, []string{onProgression}, []metav1.ConditionStatus{condTrue, condFalse},
		"A Placement the add-on's install strategy names does not exist. Within `--placement-grace` (30 s) of the moment it was first found missing it is `True` (a GitOps sync may apply the Placement after the add-on); after it, `False`, with a Warning event. The placement's MCAs are kept.",
		"Apply the Placement, or remove it from the install strategy."},
	{"ReasonPlacementDecisionInvalid", addonstatus.ReasonPlacementDecisionInvalid, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The Placement's PlacementDecisions cannot be read as OCM's placement controller writes them; the message says how.",
		"Look at the PlacementDecisions of the Placement and OCM's placement controller."},
	{"ReasonInvalidRolloutStrategy", addonstatus.ReasonInvalidRolloutStrategy, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The placement's rollout strategy cannot be used (OCM's rollout library refuses it, or the controller finds it invalid); the message says why. Nothing moves on the placement.",
		"Fix the strategy in Git; the `rollout-strategy` function checks it at build time."},
	{"ReasonInvalidCanaryPlacements", addonstatus.ReasonInvalidCanaryPlacements, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The [`addonops.io/canary-placements`](annotations.md#addonopsiocanary-placements) annotation does not parse or names a placement that is no install placement.",
		"Fix the annotation in Git; the `rollout-strategy` function checks it at build time."},
	{"ReasonUndecodable", addonstatus.ReasonUndecodable, []string{onProgression, onEvent}, []metav1.ConditionStatus{condFalse},
		"An object the placement depends on (its ClusterManagementAddOn outside a rollout strategy, its Placement, an MCA) holds a value the controller's Go types cannot read, though the API server accepted it; the message names the object and the error. Its clusters keep their configs.",
		"Fix the object the message names."},
	{"ReasonManual", addonstatus.ReasonManual, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The install strategy is Manual: the progression is kept as history and no placement is rolled out.", ""},
	{"ReasonClustersNotConfigurable", addonstatus.ReasonClustersNotConfigurable, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The placement's rollout cannot go on by itself: no cluster is in progress, none failed, and every cluster not done has an MCA that cannot be configured (`Configured=False` with ConfigurationUnsupported, ConfigurationNotFound or ConfigurationForbidden). The message counts and names them with the cause.",
		"Fix the cause the message names on those MCAs."},
	{"ReasonWaitingForWindow", addonstatus.ReasonWaitingForWindow, []string{onProgression}, []metav1.ConditionStatus{condTrue},
		"The placement's [maintenance windows](annotations.md#addonopsiomaintenance-windows) are closed: no cluster starts a new version, clusters in flight finish. The message names the window and when the next one opens (the controller decides again at that moment). Events `WaitingForWindow` when the wait starts and `WindowOpened` when it ends.",
		"Nothing, or `addonops override-window ADDON --placement NS/NAME` to let this version through now."},
	{"ReasonInvalidMaintenanceWindows", addonstatus.ReasonInvalidMaintenanceWindows, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The [`addonops.io/maintenance-windows`](annotations.md#addonopsiomaintenance-windows) annotation does not parse or names a placement the add-on does not install: every placement is held (a typo in a freeze lets nothing through), with one Warning event.",
		"Fix the annotation in Git; the message says what is wrong. The `rollout-strategy` function refuses the same values at build time."},
	{"ReasonVerifying", addonstatus.ReasonVerifying, []string{onProgression}, []metav1.ConditionStatus{condTrue},
		"A batch finished and its [verification](annotations.md#addonopsioverification) runs: no new cluster starts until it passes. The message names the batch, its clusters and the template. Event `VerificationStarted`, then `VerificationPassed`, `VerificationFailed` or `VerificationInconclusive`.",
		""},
	{"ReasonVerificationInconclusive", addonstatus.ReasonVerificationInconclusive, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"A batch's [verification](annotations.md#addonopsioverification), or a continuous verification run, could not tell whether the version is good (a metric inconclusive, or in error: Prometheus unreachable, a webhook timing out, a template that cannot be read): no new cluster starts, clusters in flight finish, no further continuous run starts. The message names the batch (or the continuous run), the template and why.",
		"`addonops promote ADDON --placement NS/NAME` to pass it (every inconclusive run of that version), `addonops retry ADDON --placement NS/NAME` to verify the batch (or run the continuous template) again once its cause is fixed, or `addonops abort ADDON --placement NS/NAME` to revert the version."},
	{"ReasonInvalidVerification", addonstatus.ReasonInvalidVerification, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The [`addonops.io/verification`](annotations.md#addonopsioverification) annotation does not parse or names a placement the add-on does not install: every placement is held (a typo in a gate lets nothing through), with one Warning event.",
		"Fix the annotation in Git; the message says what is wrong."},
	{"ReasonPaused", addonstatus.ReasonPaused, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"A person paused the placement ([`addonops.io/pause`](annotations.md#addonopsiopause)): no new cluster starts, clusters in flight finish. The event `Resumed` follows when it leaves Paused.",
		"`addonops resume ADDON --placement NS/NAME` when ready."},
	{"ReasonAborting", addonstatus.ReasonAborting, []string{onProgression}, []metav1.ConditionStatus{condTrue},
		"An abort ([`addonops.io/abort`](annotations.md#addonopsioabort) or the automatic one) is returning the clusters that moved to the aborted version to the last known good one, paced by `maxConcurrency`.", ""},
	{"ReasonAborted", addonstatus.ReasonAborted, []string{onProgression}, []metav1.ConditionStatus{condFalse},
		"The rollout was aborted and its clusters are back; it stays so until the placement's desired configs change.",
		"Commit a fix or a revert in Git."},
}

// classDoc describes a class of internal/addonstatus.
type classDoc struct {
	Const, Value, Meaning, ArgoCD, Flux string
}

var classDocs = []classDoc{
	{"ClassHealthy", addonstatus.ClassHealthy, "the rollout completed", "Healthy", "Current"},
	{"ClassProgressing", addonstatus.ClassProgressing, "time alone will finish it", "Progressing", "InProgress"},
	{"ClassSuspended", addonstatus.ClassSuspended, "a person paused it; a resume continues it", "Suspended", "InProgress (not Ready, not failed)"},
	{"ClassDegraded", addonstatus.ClassDegraded, "it cannot go on by itself: a person must act", "Degraded", "Failed"},
}

// checkConsts compares a table's constant names and values with the constants of pkg the source
// has under prefixes.
func checkConsts(src *Source, pkg, table string, prefixes []string, have map[string]string) []string {
	var problems []string
	code := src.ConstNames(pkg, prefixes...)
	for name, val := range code {
		v, ok := have[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s.%s has no entry in internal/refdocs %s: describe it", pkg, name, table))
		case val != "" && v != val:
			problems = append(problems, fmt.Sprintf("internal/refdocs %s: the entry %s has the value %q, the code %q", table, name, v, val))
		}
	}
	for name := range have {
		if _, ok := code[name]; !ok {
			problems = append(problems, fmt.Sprintf("internal/refdocs %s describes %s.%s, which the code no longer has: remove it", table, pkg, name))
		}
	}
	return problems
}

// ConditionsPage generates docs/reference/conditions.md from internal/addonstatus (the reasons'
// kinds and classes by its own functions) and the tables above, which must describe every
// Reason, Condition and Class constant of that package, and the conditions of --deploy-templates
// (deployDocs, which must describe every Condition and Reason constant of deployPackages).
func ConditionsPage(src *Source, path string) (Page, error) {
	const pkg = "internal/addonstatus"
	consts := func(f func(yield func(string, string) bool)) map[string]string {
		m := map[string]string{}
		f(func(k, v string) bool { m[k] = v; return true })
		return m
	}
	var problems []string
	problems = append(problems, checkConsts(src, pkg, "conditionDocs", []string{"Condition"}, consts(func(y func(string, string) bool) {
		for _, d := range conditionDocs {
			y(d.Const, d.Value)
		}
	}))...)
	problems = append(problems, checkConsts(src, pkg, "reasonDocs", []string{"Reason"}, consts(func(y func(string, string) bool) {
		for _, d := range reasonDocs {
			if d.Const != "" {
				y(d.Const, d.Value)
			}
		}
	}))...)
	problems = append(problems, checkConsts(src, pkg, "classDocs", []string{"Class"}, consts(func(y func(string, string) bool) {
		for _, d := range classDocs {
			y(d.Const, d.Value)
		}
	}))...)
	problems = append(problems, checkDeployDocs(src)...)
	for _, r := range addonstatus.WaitingReasons.UnsortedList() {
		if !slices.ContainsFunc(reasonDocs, func(d reasonDoc) bool { return d.Value == r }) {
			problems = append(problems, fmt.Sprintf("addonstatus.WaitingReasons has %s, which internal/refdocs reasonDocs does not describe", r))
		}
	}
	for _, r := range addonstatus.SuccessReasons.UnsortedList() {
		if !slices.ContainsFunc(reasonDocs, func(d reasonDoc) bool { return d.Value == r }) {
			problems = append(problems, fmt.Sprintf("addonstatus.SuccessReasons has %s, which internal/refdocs reasonDocs does not describe", r))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return Page{}, fmt.Errorf("the conditions reference:\n  %s", strings.Join(problems, "\n  "))
	}

	var b strings.Builder
	b.WriteString(generatedBy("internal/addonstatus and internal/refdocs"))
	b.WriteString("# Conditions and reasons\n\n")
	b.WriteString("The status vocabulary addonops writes and reads (package `internal/addonstatus`), shared by the controller, " +
		"`addonops status`, the demo and the Argo CD and Flux health checks in `health/`.\n\n")
	b.WriteString("**Who writes them, and what the controller believes.** An install progression " +
		"(`status.installProgressions[]` of a ClusterManagementAddOn, one per install placement) is written by the controller alone: " +
		"it is the controller's record of what it decided. A ManagedClusterAddOn's status is written by the controller **and** by the " +
		"cluster's own agents (OCM lets them write the whole status): the controller believes it only about that cluster (its own progress " +
		"and health), never about which version is known good or what another cluster gets ([trust model](../trust-model.md)).\n\n")

	b.WriteString("## Classes\n\nEvery install progression's `Progressing` condition falls in one class (`addonstatus.ClassOf`): `True` is Progressing " +
		"(time alone will finish the rollout); `False` is Healthy for a success reason, Suspended for `Paused`, Progressing for `Manual` " +
		"and Degraded for every other reason, including ones this page does not know yet. `addonops status`, the Argo CD health " +
		"scripts and the Flux health expressions read it the same way, so Degraded always means a person must act.\n\n")
	b.WriteString("| class | meaning | Argo CD | Flux |\n|---|---|---|---|\n")
	for _, c := range classDocs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code(c.Value), c.Meaning, c.ArgoCD, c.Flux)
	}

	b.WriteString("\n## Condition types\n\n")
	for _, c := range conditionDocs {
		fmt.Fprintf(&b, "### %s\n\n%s\n\n- **On**: %s.\n- **Written by**: %s.\n- **In the code**: %s.\n\n", c.Value, c.Meaning, c.On, c.Writers, code("addonstatus."+c.Const))
	}

	b.WriteString("## Reasons\n\n")
	b.WriteString("Class is the install progression's class with that reason (`addonstatus.ClassOf`, by the condition's status); " +
		"a waiting reason (`addonstatus.WaitingReasons`) also raises a Warning event when a placement enters it.\n\n")
	b.WriteString("| reason | on | class | kind |\n|---|---|---|---|\n")
	for _, r := range reasonDocs {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s | %s |\n", code(r.Value), anchor(r.Value), strings.Join(r.On, "; "), classes(r), kindOf(r.Value))
	}
	b.WriteString("\n")
	for _, r := range reasonDocs {
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", r.Value, r.Meaning)
		fmt.Fprintf(&b, "- **On**: %s.\n", strings.Join(r.On, "; "))
		if len(r.Statuses) > 0 {
			fmt.Fprintf(&b, "- **Class**: %s.\n", classes(r))
			var ex []string
			for _, s := range r.Statuses {
				ex = append(ex, code(fmt.Sprintf(`{type: Progressing, status: "%s", reason: %s}`, s, r.Value)))
			}
			fmt.Fprintf(&b, "- **Example**: %s.\n", strings.Join(ex, ", "))
		}
		if k := kindOf(r.Value); k != "" {
			fmt.Fprintf(&b, "- **Kind of change**: %s.\n", k)
		}
		if addonstatus.WaitingReasons.Has(r.Value) {
			b.WriteString("- **Waiting reason**: a Warning event on the ClusterManagementAddOn when a placement enters it.\n")
		}
		if r.Action != "" {
			fmt.Fprintf(&b, "- **What to do**: %s\n", r.Action)
		}
		where := code("addonstatus." + r.Const)
		if r.Const == "" {
			where = "OCM's `addonv1alpha1.ProgressingReasonCompleted`"
		}
		fmt.Fprintf(&b, "- **In the code**: %s.\n\n", where)
	}
	writeDeployConditions(&b)
	return Page{Path: path, Content: []byte(strings.TrimRight(b.String(), "\n") + "\n")}, nil
}

// classes is a reason's class by status ("Progressing (True), Degraded (False)"), computed with
// addonstatus.ClassOf; "—" for a reason no install progression has.
func classes(r reasonDoc) string {
	if len(r.Statuses) == 0 {
		return "—"
	}
	var out []string
	for _, s := range r.Statuses {
		c := addonstatus.ClassOf(s, r.Value)
		if len(r.Statuses) > 1 {
			c += " (" + string(s) + ")"
		}
		out = append(out, c)
	}
	return strings.Join(out, ", ")
}

// kindOf names the kind of change a Progressing reason belongs to (addonstatus.KindOfReason).
func kindOf(reason string) string {
	k, ok := addonstatus.KindOfReason(reason)
	if !ok {
		return ""
	}
	return capitalize(k.Noun())
}
