// Package rolloutview turns the hub objects of one add-on (its ClusterManagementAddOn, its
// ManagedClusterAddOns, the clusters its placements select, the config objects' base names) into
// what `addonops status` shows: per placement a progress count, what kind of change it rolls out
// (install, upgrade or rollback), the desired / last applied / last known good config versions,
// the canary state, the state of each of its clusters and the clusters that failed with their
// causes, plus one verdict for the whole rollout; per cluster its configs (by object name, with
// the version ids of internal/history), state, reason, since when and when it last completed
// (list.go: RenderClusters); and every add-on of a hub in one line each (Summarize, RenderList).
// It is pure (objects in, view out); the command reads the hub and prints.
//
// The verdicts (health.go) are the rules of the Argo CD health scripts and Flux health
// expressions in health/, on the one classification of internal/addonstatus (ClassOf), so
// `addonops status --watch`, Argo CD and Flux agree on when a rollout succeeded, failed or is
// suspended.
package rolloutview

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/maintwindow"
	"github.com/addonops/addonops/internal/rolloutrules"
	"github.com/addonops/addonops/internal/spechash"
)

// BaseNameAnnotation holds a hashed config's name before config-hash suffixed it. It mirrors
// functions/config-hash AnnotationBaseName, which lives in a main package and cannot be imported.
const BaseNameAnnotation = configref.BaseNameAnnotation

// Phase is where the whole rollout stands.
type Phase string

const (
	PhaseSucceeded   Phase = "Succeeded"
	PhaseFailed      Phase = "Failed"
	PhaseProgressing Phase = "Progressing"
	// PhaseSuspended: a person paused the rollout (a placement's reason is Paused and none is
	// Degraded or Progressing); it goes on when resumed, so --watch keeps waiting.
	PhaseSuspended Phase = "Suspended"
)

// Input is what the view is built from.
type Input struct {
	CMA *addonv1alpha1.ClusterManagementAddOn
	// MCAs are the add-on's ManagedClusterAddOns (named like the CMA, any namespace).
	MCAs []*addonv1alpha1.ManagedClusterAddOn
	// Clusters maps "<namespace>/<placement>" to the clusters the placement selects. A placement
	// missing here has unknown clusters (its decisions could not be read).
	Clusters map[string][]string
	// BaseName returns the addonops.io/base-name annotation of the config a reference points at,
	// if the config exists and has one. Nil: no lookups.
	BaseName func(configref.Ref) (string, bool)
	// Now is the clock for "timed out" and ages.
	Now time.Time
}

// View is the add-on's rollout as shown.
type View struct {
	Addon           string `json:"addon"`
	InstallStrategy string `json:"installStrategy"`
	// ManagedBy says who rolls the add-on out: addonstatus.ManagedByAddonops or
	// ManagedByAddonManager (see addonstatus.SelfManaged), and Note, for an add-on addonops does
	// not manage, how to change that.
	ManagedBy  string      `json:"managedBy"`
	Note       string      `json:"note,omitempty"`
	Phase      Phase       `json:"phase"`
	Health     Verdict     `json:"health"`
	Placements []Placement `json:"placements,omitempty"`
	// DeployerWait, when set, names the clusters whose ManagedClusterAddOn says it waits for the
	// add-on's deployer (addonstatus.WaitingForDeployer): told to run its configs long ago, and no
	// deployer has reported ManifestApplied; the add-on manager that should deploy it may be
	// missing.
	DeployerWait *DeployerWait `json:"deployerWait,omitempty"`
}

// DeployerWait is the add-on's clusters that wait for a deployer, by name, with what the
// controller says about them.
type DeployerWait struct {
	Clusters []string `json:"clusters"`
	Message  string   `json:"message"`
}

// deployerWaitOf finds the MCAs of addon that wait for a deployer.
func deployerWaitOf(addon string, mcas []*addonv1alpha1.ManagedClusterAddOn) *DeployerWait {
	var clusters []string
	for _, m := range mcas {
		if m.Name == addon && addonstatus.WaitingForDeployer(m) {
			clusters = append(clusters, m.Namespace)
		}
	}
	if len(clusters) == 0 {
		return nil
	}
	slices.Sort(clusters)
	return &DeployerWait{Clusters: clusters, Message: addonstatus.MessageWaitingForDeployer}
}

// Placement is one install placement's rollout.
type Placement struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Health    Verdict `json:"health"`
	// Reason and Message are the progression's Progressing condition, as the controller wrote them.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Change is the kind of change the placement rolls out, from Reason: "install", "upgrade" or
	// "rollback" (a revert to a version the add-on already ran successfully); empty for the
	// other reasons (waiting for a canary, a missing placement or config, ...).
	Change string `json:"change,omitempty"`
	// Since is when that condition last changed status.
	Since *metav1.Time `json:"since,omitempty"`
	// DesiredVersion, LastAppliedVersion and LastKnownGoodVersion identify the placement's config
	// versions as `addonops history` and the day-2 annotations name them (history.VersionID of
	// the progression's desired, last applied and last known good configs; empty for none).
	DesiredVersion       string   `json:"desiredVersion,omitempty"`
	LastAppliedVersion   string   `json:"lastAppliedVersion,omitempty"`
	LastKnownGoodVersion string   `json:"lastKnownGoodVersion,omitempty"`
	Progress             Progress `json:"progress"`
	Canary               *Canary  `json:"canary,omitempty"`
	// Window is where the placement's maintenance windows stand now (nil: the add-on has none
	// for it).
	Window  *Window   `json:"window,omitempty"`
	Configs []Configs `json:"configs,omitempty"`
	// Clusters is the state of each cluster the placement selects, in name order (empty when its
	// decisions could not be read).
	Clusters []Cluster `json:"clusters,omitempty"`
	// Owned are the selected clusters this placement rolls out, in name order: a cluster two
	// placements select is rolled out by one of them, by the controller's rule
	// (canary.AssignOwners: the later one, but never a gated placement over its canary).
	Owned []string `json:"owned,omitempty"`
	// Behind says why the controller's report on this placement is about an earlier spec (its
	// reason and counts are then the last change's); empty when it reports on the spec as it
	// stands (Behind).
	Behind string `json:"behind,omitempty"`
	// FailedClusters are the placement's clusters whose rollout failed or ran past its
	// progressDeadline, or whose add-on cannot be configured, with the reason and its cause.
	FailedClusters []ClusterProblem `json:"failedClusters,omitempty"`
}

// Cluster states.
const (
	StateDone           = "done"
	StateInProgress     = "inProgress"
	StateFailed         = "failed"
	StateTimedOut       = "timedOut"
	StateWaiting        = "waiting"        // waiting for its turn in the rollout
	StateUnconfigurable = "unconfigurable" // Configured=False: a config of its own cannot be used
	StateNoAddon        = "noAddon"        // no ManagedClusterAddOn on the cluster (yet)
)

// Cluster is one cluster's part in a placement's rollout: its state for counting (one of the
// State constants), its ManagedClusterAddOn's Progressing reason and message (InstallSucceed,
// RollingBack, RollbackFailed, ...; for a cluster waiting for its turn or unconfigurable its
// Configured reason and message), and the add-on's health as the checks judge it.
type Cluster struct {
	Cluster string `json:"cluster"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Health  Health `json:"health,omitempty"`
	// Desired and Running are the configs its ManagedClusterAddOn is told to run and last applied
	// (status.configReferences[].desiredConfig and lastAppliedConfig), with their version ids
	// (history.VersionID; empty when there are no such configs).
	Desired        []ConfigName `json:"desired,omitempty"`
	DesiredVersion string       `json:"desiredVersion,omitempty"`
	Running        []ConfigName `json:"running,omitempty"`
	RunningVersion string       `json:"runningVersion,omitempty"`
	// Since is when the condition that gave Reason last changed status (Progressing; Configured
	// for a cluster waiting for its turn or unconfigurable).
	Since *metav1.Time `json:"since,omitempty"`
	// Completed is when it last reached a success reason (InstallSucceed, UpgradeSucceed,
	// RollbackSucceeded, Completed): the transition time of a Progressing=False condition with
	// one; unknown (nil) while a change is under way or failed.
	Completed *metav1.Time `json:"completed,omitempty"`
}

// ConfigName is a config object as kubectl names it.
type ConfigName struct {
	// Resource is "<plural>.<group>" ("<plural>" for the core group).
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	SpecHash  string `json:"specHash,omitempty"`
}

// String is "<resource> <namespace>/<name>" (or "<resource> <name>"), as kubectl takes it.
func (c ConfigName) String() string {
	if c.Namespace == "" {
		return c.Resource + " " + c.Name
	}
	return c.Resource + " " + c.Namespace + "/" + c.Name
}

// Key names the placement "<namespace>/<name>".
func (p Placement) Key() string { return p.Namespace + "/" + p.Name }

// Progress counts a placement's clusters.
type Progress struct {
	Total      int `json:"total"`
	Done       int `json:"done"`
	InProgress int `json:"inProgress"`
	Failed     int `json:"failed"`
	TimedOut   int `json:"timedOut"`
	// Unconfigurable counts clusters whose add-on cannot be configured (a config of its own is of
	// an unsupported type or cannot be read).
	Unconfigurable int `json:"unconfigurable,omitempty"`
	// Source says where the counts come from: "controller" (the progression's message) or
	// "clusters" (counted here from the MCAs; timeouts are then estimated from progressDeadline).
	Source string `json:"source"`
}

// Canary is a placement's part in a canary rollout (annotation addonops.io/canary-placements).
type Canary struct {
	// Canary is the placement this one waits for (set on gated placements).
	Canary string `json:"canary,omitempty"`
	// CanaryFor lists the placements that wait for this one (set on canary placements).
	CanaryFor []string `json:"canaryFor,omitempty"`
	// State says where the gate stands.
	State string `json:"state"`
}

// Window is where a placement's maintenance windows (annotation addonops.io/maintenance-windows)
// stand at the view's moment, for a change that is not a rollback.
type Window struct {
	// State is "open", "closed" or "invalid" (the annotation does not parse: no batch starts).
	State string `json:"state"`
	// Why names the window that closes the placement, or the annotation's error.
	Why string `json:"why,omitempty"`
	// Opens is when the next window opens, in the zone of the window that closes it (RFC 3339);
	// OpensNote says so in words ("the next window opens at ...", or that none opens within a
	// year).
	Opens     *metav1.Time `json:"opens,omitempty"`
	OpensNote string       `json:"opensNote,omitempty"`
}

// Window states.
const (
	WindowOpen    = "open"
	WindowClosed  = "closed"
	WindowInvalid = "invalid"
)

// windowOf is where placement k's maintenance windows stand at now.
func windowOf(k canary.PlacementKey, windows maintwindow.Windows, err error, present bool, now time.Time) *Window {
	switch {
	case !present:
		return nil
	case err != nil:
		return &Window{State: WindowInvalid, Why: err.Error()}
	}
	ws := windows.For(k, false)
	if len(ws) == 0 {
		return nil
	}
	closed, c := ws.Closed(now)
	if !closed {
		return &Window{State: WindowOpen}
	}
	opens := metav1.NewTime(c.Opens)
	return &Window{State: WindowClosed, Why: c.Why, Opens: &opens, OpensNote: c.When()}
}

// Configs are the versions of one config slot (one group/resource, i-th config) of a placement.
type Configs struct {
	Resource      string   `json:"resource"`
	Desired       *Version `json:"desired,omitempty"`
	LastApplied   *Version `json:"lastApplied,omitempty"`
	LastKnownGood *Version `json:"lastKnownGood,omitempty"`
}

// Version is one config version: its object and spec hash, and the name people know it by.
type Version struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// BaseName is the name before config-hash added its suffix (annotation addonops.io/base-name,
	// else derived from a suffix that matches the spec hash, else the name).
	BaseName string `json:"baseName"`
	SpecHash string `json:"specHash"`
	Short    string `json:"shortHash"`
}

// String is "<base name>@<short hash>".
func (v *Version) String() string {
	if v == nil {
		return "-"
	}
	if v.Short == "" {
		return v.BaseName + "@(no hash)"
	}
	return v.BaseName + "@" + v.Short
}

// ClusterProblem is a cluster whose rollout failed or timed out.
type ClusterProblem struct {
	Cluster string `json:"cluster"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ManagedBy tells who rolls cma out, by the rule of addonops' controller (addonstatus.SelfManaged).
func ManagedBy(cma *addonv1alpha1.ClusterManagementAddOn) string {
	if addonstatus.SelfManaged(cma) {
		return addonstatus.ManagedByAddonops
	}
	return addonstatus.ManagedByAddonManager
}

// UnmanagedNote explains, for an add-on addonops' controller does not take by default, who rolls
// it out and how to hand it to addonops. The command cannot see the controller's flags, so it says
// that --addons=all would change the answer.
func UnmanagedNote(addon string) string {
	return fmt.Sprintf("not managed by addonops: its ClusterManagementAddOn is not annotated %s (or says %q), so OCM's addon-manager rolls it out, unless addonops-controller runs with --addons=all (this command cannot see the controller's flags). For addonops to manage it: kubectl annotate clustermanagementaddon %s %s=%s --overwrite (OCM's addon-manager then leaves it alone), or run addonops-controller with --addons=all.",
		addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue,
		addon, addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleSelfManageAnnotationValue)
}

// Build makes the view.
func Build(in Input) View {
	cma := in.CMA
	v := View{Addon: cma.Name, InstallStrategy: cmp.Or(cma.Spec.InstallStrategy.Type, "Manual"), ManagedBy: ManagedBy(cma), Health: AddonHealth(cma)}
	if v.ManagedBy != addonstatus.ManagedByAddonops {
		v.Note = UnmanagedNote(cma.Name)
	}
	v.DeployerWait = deployerWaitOf(cma.Name, in.MCAs)
	switch v.Health.Health {
	case Healthy:
		v.Phase = PhaseSucceeded
	case Degraded:
		v.Phase = PhaseFailed
	case Suspended:
		v.Phase = PhaseSuspended
	default:
		v.Phase = PhaseProgressing
	}
	if cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
		return v
	}
	canaries, canaryErr := canary.Parse(cma.Annotations)
	windows, windowErr := maintwindow.Parse(cma.Annotations)
	_, hasWindows := cma.Annotations[maintwindow.Annotation]
	mcas := map[string]*addonv1alpha1.ManagedClusterAddOn{}
	for _, m := range in.MCAs {
		if m.Name == cma.Name {
			mcas[m.Namespace] = m
		}
	}
	defaults := DefaultConfigs(cma)
	owners := ownersOf(cma.Spec.InstallStrategy.Placements, in.Clusters, canaries)
	for i := range cma.Spec.InstallStrategy.Placements {
		ps := &cma.Spec.InstallStrategy.Placements[i]
		p := Placement{Namespace: ps.Namespace, Name: ps.Name, Health: PlacementHealth(cma, ps, defaults)}
		p.Behind, _ = Behind(cma, ps, defaults)
		ip := Progression(cma, ps.Namespace, ps.Name)
		var cond *metav1.Condition
		if ip != nil {
			cond = meta.FindStatusCondition(ip.Conditions, addonstatus.ConditionProgressing)
			p.Configs = configs(ip, in.BaseName)
			p.DesiredVersion, p.LastAppliedVersion, p.LastKnownGoodVersion = progressionVersions(ip)
		}
		if cond != nil {
			p.Reason, p.Message = cond.Reason, cond.Message
			if k, ok := addonstatus.KindOfReason(cond.Reason); ok {
				p.Change = k.Noun()
			}
			since := cond.LastTransitionTime
			p.Since = &since
		}
		clusters, known := in.Clusters[p.Key()]
		deadline := progressDeadline(ps.RolloutStrategy)
		if known {
			p.Clusters = clusterStates(clusters, mcas, deadline, in.Now)
			for _, c := range clusters {
				if owners[c] == p.Key() {
					p.Owned = append(p.Owned, c)
				}
			}
			slices.Sort(p.Owned)
		}
		p.FailedClusters = failedClusters(clusters, mcas, deadline, in.Now)
		if counts, ok := parseCounts(p.Message); ok && cond != nil {
			p.Progress = counts
		} else if known {
			p.Progress = countClusters(clusters, mcas, deadline, in.Now)
		}
		p.Canary = canaryOf(p, ip, canaries, canaryErr, cma)
		p.Window = windowOf(canary.PlacementKey{Namespace: ps.Namespace, Name: ps.Name}, windows, windowErr, hasWindows, in.Now)
		v.Placements = append(v.Placements, p)
	}
	return v
}

// ownersOf names the install placement ("<namespace>/<name>") that rolls out each cluster of
// clusters (by placement), by the controller's rule (canary.AssignOwners); a placement whose
// clusters are unknown selects none.
func ownersOf(placements []addonv1alpha1.PlacementStrategy, clusters map[string][]string, canaries map[canary.PlacementKey]canary.PlacementKey) map[string]string {
	var sels []canary.Selection
	for _, p := range placements {
		k := canary.PlacementKey{Namespace: p.Namespace, Name: p.Name}
		cs, known := clusters[k.String()]
		if !known {
			continue
		}
		sel := canary.Selection{Placement: k, Clusters: sets.New(cs...)}
		if c, ok := canaries[k]; ok {
			sel.Canary = &c
		}
		sels = append(sels, sel)
	}
	out := map[string]string{}
	for c, i := range canary.AssignOwners(sels) {
		out[c] = sels[i].Placement.String()
	}
	return out
}

// configs lays out a progression's config references.
func configs(ip *addonv1alpha1.InstallProgression, baseName func(configref.Ref) (string, bool)) []Configs {
	var out []Configs
	for _, r := range ip.ConfigReferences {
		gr := configref.GroupResource{Group: r.Group, Resource: r.Resource}
		out = append(out, Configs{
			Resource:      gr.String(),
			Desired:       version(gr, r.DesiredConfig, baseName),
			LastApplied:   version(gr, r.LastAppliedConfig, baseName),
			LastKnownGood: version(gr, r.LastKnownGoodConfig, baseName),
		})
	}
	return out
}

// progressionVersions are the version ids of a progression's desired, last applied and last known
// good configs.
func progressionVersions(ip *addonv1alpha1.InstallProgression) (desired, applied, lkg string) {
	var d, a, l []history.Config
	for _, r := range ip.ConfigReferences {
		add := func(into *[]history.Config, h *addonv1alpha1.ConfigSpecHash) {
			if h != nil {
				*into = append(*into, history.Config{Group: r.Group, Resource: r.Resource, Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash})
			}
		}
		add(&d, r.DesiredConfig)
		add(&a, r.LastAppliedConfig)
		add(&l, r.LastKnownGoodConfig)
	}
	return versionID(d), versionID(a), versionID(l)
}

// versionID is history.VersionID, or "" for no configs.
func versionID(configs []history.Config) string {
	if len(configs) == 0 {
		return ""
	}
	return history.VersionID(configs)
}

// mcaConfigs lays out what an MCA is told to run and what it last applied, with version ids.
func mcaConfigs(m *addonv1alpha1.ManagedClusterAddOn) (desired []ConfigName, desiredID string, running []ConfigName, runningID string) {
	var d, a []history.Config
	for _, r := range m.Status.ConfigReferences {
		gr := configref.GroupResource{Group: r.Group, Resource: r.Resource}.String()
		if h := r.DesiredConfig; h != nil && h.Name != "" {
			desired = append(desired, ConfigName{Resource: gr, Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash})
			d = append(d, history.Config{Group: r.Group, Resource: r.Resource, Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash})
		}
		if h := r.LastAppliedConfig; h != nil && h.Name != "" {
			running = append(running, ConfigName{Resource: gr, Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash})
			a = append(a, history.Config{Group: r.Group, Resource: r.Resource, Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash})
		}
	}
	return desired, versionID(d), running, versionID(a)
}

func version(gr configref.GroupResource, h *addonv1alpha1.ConfigSpecHash, baseName func(configref.Ref) (string, bool)) *Version {
	if h == nil {
		return nil
	}
	v := &Version{Namespace: h.Namespace, Name: h.Name, SpecHash: h.SpecHash, Short: spechash.Short(h.SpecHash), BaseName: h.Name}
	if baseName != nil {
		if b, ok := baseName(configref.Ref{GroupResource: gr, Namespace: h.Namespace, Name: h.Name}); ok && b != "" {
			v.BaseName = b
			return v
		}
	}
	// A config pruned from the hub (an old version) can still be named: config-hash derives the
	// suffix from this very spec hash.
	if suffix, err := spechash.Suffix(h.SpecHash); err == nil {
		if base, ok := strings.CutSuffix(h.Name, "-"+suffix); ok && base != "" {
			v.BaseName = base
		}
	}
	return v
}

// countsRE match the messages the controller (rolloutplan) writes on install progressions:
// "... 2/4 clusters done, 1 in progress, 0 failed, 1 timed out[, 1 cannot be configured]" and "4/4
// upgrade completed with no errors." (install, upgrade or rollback); ocmRE matches OCM's own "selected clusters 4. configured addons 2/4 progressing..., 0
// failed 1 timeout.". The controller exports no structured counts; the captured-status tests
// in health/ fail if its wording changes.
var (
	countsRE   = regexp.MustCompile(`(\d+)/(\d+) clusters done, (\d+) in progress, (\d+) failed, (\d+) timed out(?:, (\d+) cannot be configured)?`)
	completeRE = regexp.MustCompile(`^(\d+)/(\d+) (?:install|upgrade|rollback) completed with no errors`)
	ocmRE      = regexp.MustCompile(`configured addons (\d+)/(\d+) (progressing\.\.\.|completed with no errors), (\d+) failed (\d+) timeout`)
)

func parseCounts(msg string) (Progress, bool) {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := countsRE.FindStringSubmatch(msg); m != nil {
		return Progress{Done: atoi(m[1]), Total: atoi(m[2]), InProgress: atoi(m[3]), Failed: atoi(m[4]), TimedOut: atoi(m[5]), Unconfigurable: atoi(m[6]), Source: "controller"}, true
	}
	if m := completeRE.FindStringSubmatch(msg); m != nil {
		return Progress{Done: atoi(m[1]), Total: atoi(m[2]), Source: "controller"}, true
	}
	if m := ocmRE.FindStringSubmatch(msg); m != nil {
		p := Progress{Total: atoi(m[2]), Failed: atoi(m[4]), TimedOut: atoi(m[5]), Source: "controller"}
		if m[3] == "progressing..." {
			// OCM counts "progressing + done" together.
			p.InProgress = atoi(m[1])
		} else {
			p.Done = atoi(m[1])
		}
		return p, true
	}
	return Progress{}, false
}

// progressDeadline reads the placement's progressDeadline; 0 means none.
func progressDeadline(s clusterv1alpha1.RolloutStrategy) time.Duration {
	d, err := time.ParseDuration(rolloutrules.ConfigOf(s).ProgressDeadline)
	if err != nil || d < 0 {
		return 0 // "", "None" or invalid: no deadline (the controller reports an invalid one)
	}
	return d
}

// clusterState classifies an MCA for counting (a State constant) and returns the condition that
// explains it: the Configured condition of an unconfigurable MCA, else its Progressing condition
// (nil when it has none).
func clusterState(m *addonv1alpha1.ManagedClusterAddOn, deadline time.Duration, now time.Time) (state string, c *metav1.Condition) {
	if u := Unconfigurable(m); u != nil {
		return StateUnconfigurable, u
	}
	c = meta.FindStatusCondition(m.Status.Conditions, addonstatus.ConditionProgressing)
	switch {
	case c != nil && clusterFailureReasons[c.Reason]:
		return StateFailed, c
	case c != nil && c.Status == metav1.ConditionTrue:
		if deadline > 0 && now.Sub(c.LastTransitionTime.Time) > deadline {
			return StateTimedOut, c
		}
		return StateInProgress, c
	case addonstatus.Applied(m) && !meta.IsStatusConditionFalse(m.Status.Conditions, addonstatus.ConditionConfigured):
		return StateDone, c
	}
	return StateWaiting, c
}

// clusterStates lists every cluster of a placement with its state, sorted by name.
func clusterStates(clusters []string, mcas map[string]*addonv1alpha1.ManagedClusterAddOn, deadline time.Duration, now time.Time) []Cluster {
	out := make([]Cluster, 0, len(clusters))
	for _, cl := range clusters {
		m := mcas[cl]
		if m == nil {
			out = append(out, Cluster{Cluster: cl, State: StateNoAddon, Message: "no ManagedClusterAddOn on this cluster yet"})
			continue
		}
		s, c := clusterState(m, deadline, now)
		st := Cluster{Cluster: cl, State: s, Health: ClusterHealth(m).Health}
		st.Desired, st.DesiredVersion, st.Running, st.RunningVersion = mcaConfigs(m)
		if p := firstCondition(m.Status.Conditions, addonstatus.ConditionProgressing); p != nil && p.Status == metav1.ConditionFalse && successReasons.Has(p.Reason) {
			at := p.LastTransitionTime
			st.Completed = &at
		}
		if s == StateWaiting {
			// The Progressing condition is about the version it runs; it waits for the new one.
			if cf := firstCondition(m.Status.Conditions, addonstatus.ConditionConfigured); cf != nil && cf.Status == metav1.ConditionFalse {
				c = cf
			}
		}
		if c != nil {
			st.Reason, st.Message = c.Reason, c.Message
			if !c.LastTransitionTime.IsZero() {
				since := c.LastTransitionTime
				st.Since = &since
			}
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Cluster) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out
}

func countClusters(clusters []string, mcas map[string]*addonv1alpha1.ManagedClusterAddOn, deadline time.Duration, now time.Time) Progress {
	p := Progress{Total: len(clusters), Source: "clusters"}
	for _, cl := range clusters {
		m := mcas[cl]
		if m == nil {
			continue
		}
		switch s, _ := clusterState(m, deadline, now); s {
		case StateDone:
			p.Done++
		case StateInProgress:
			p.InProgress++
		case StateFailed:
			p.Failed++
		case StateTimedOut:
			p.TimedOut++
		case StateUnconfigurable:
			p.Unconfigurable++
		}
	}
	return p
}

func failedClusters(clusters []string, mcas map[string]*addonv1alpha1.ManagedClusterAddOn, deadline time.Duration, now time.Time) []ClusterProblem {
	var out []ClusterProblem
	for _, cl := range clusters {
		m := mcas[cl]
		if m == nil {
			continue
		}
		switch s, c := clusterState(m, deadline, now); s {
		case StateFailed, StateUnconfigurable:
			out = append(out, ClusterProblem{Cluster: cl, Reason: c.Reason, Message: c.Message})
		case StateTimedOut:
			out = append(out, ClusterProblem{Cluster: cl, Reason: "TimedOut", Message: fmt.Sprintf(
				"%s for %s, longer than progressDeadline %s: %s", c.Reason, now.Sub(c.LastTransitionTime.Time).Truncate(time.Second), deadline, c.Message)})
		}
	}
	slices.SortFunc(out, func(a, b ClusterProblem) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out
}

// canaryOf describes p's part in canary rollouts.
func canaryOf(p Placement, ip *addonv1alpha1.InstallProgression, canaries map[canary.PlacementKey]canary.PlacementKey, canaryErr error, cma *addonv1alpha1.ClusterManagementAddOn) *Canary {
	if canaryErr != nil {
		if _, ok := cma.Annotations[canary.Annotation]; ok {
			return &Canary{State: "invalid annotation " + canary.Annotation + ": " + canaryErr.Error()}
		}
		return nil
	}
	key := canary.PlacementKey{Namespace: p.Namespace, Name: p.Name}
	var c *Canary
	if canary, ok := canaries[key]; ok {
		c = &Canary{Canary: canary.String()}
		switch {
		case p.Reason == addonstatus.ReasonWaitingForCanary && p.Health.Health == Degraded:
			c.State = "blocked: the desired configs cannot pass canary " + canary.String() + " without a person's help (see the reason)"
		case p.Reason == addonstatus.ReasonWaitingForCanary:
			c.State = "waiting for canary " + canary.String() + " to apply the desired configs on every cluster"
		case ip != nil && lkgIsDesired(ip):
			c.State = "canary " + canary.String() + " passed the desired configs"
		case ip != nil:
			c.State = "rolling out the last known good configs; the desired ones wait for canary " + canary.String()
		default:
			c.State = "no status yet"
		}
	}
	var gated []string
	for g, canary := range canaries {
		if canary == key {
			gated = append(gated, g.String())
		}
	}
	if len(gated) > 0 {
		slices.Sort(gated)
		if c == nil {
			c = &Canary{}
		}
		c.CanaryFor = gated
		if c.State == "" {
			if p.Health.Health == Healthy {
				c.State = "canary passed: every cluster applied the desired configs"
			} else {
				c.State = "canary in progress: the placements it gates wait for it"
			}
		}
	}
	return c
}

func lkgIsDesired(ip *addonv1alpha1.InstallProgression) bool {
	for _, r := range ip.ConfigReferences {
		if r.DesiredConfig == nil || r.LastKnownGoodConfig == nil || *r.DesiredConfig != *r.LastKnownGoodConfig {
			return false
		}
	}
	return len(ip.ConfigReferences) > 0
}

// Done reports whether the rollout finished (succeeded or failed), for --watch. A suspended
// rollout has not: it goes on when resumed.
func (v View) Done() bool { return v.Phase == PhaseSucceeded || v.Phase == PhaseFailed }
