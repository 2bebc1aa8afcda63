// Package controller is addonops' hub controller: it installs ManagedClusterAddOns from placements,
// rolls new config versions out across clusters with OCM's rollout strategies and canary
// placements, tracks the add-on's ManifestWorks and reports progress in the add-on's status.
//
// This package wires the rollout half: the reconcilers of package addonrollout, each running on the
// process's one hub cache (package hubcache, shared with the template reconcilers of packages
// templatedeploy and registration under --deploy-templates), all seeing the add-ons through
// addonrollout.View:
//   - install (key: CMA name): creates and deletes MCAs (decision: rolloutplan.DecideInstall);
//   - rollout (key: CMA name): desired configs of every MCA, batches, CMA status and the add-on's
//     version history (decision: package rolloutplan);
//   - progress (key: MCA namespace/name): lastAppliedConfig, Progressing and HealthSoak from works
//     (rolloutplan's MCA status rules), and Available as the health prober of template add-ons
//     under --deploy-templates (rolloutplan.Available); interim states are held in memory
//     (addonrollout.Held) and written with the next settled one, so a cluster's change costs two
//     status writes;
//   - configgc: the garbage collection of superseded config versions, a loop.
//
// Writes to an MCA's status carry the resourceVersion they were computed from, and every writer
// (rollout, progress, and the template reconcilers through package statuswrite) changes only the
// fields it owns, so none overwrites another's with a stale copy: a conflict is retried on the
// newer object.
//
// All state lives in status and the version history ConfigMaps, so a restarted controller
// continues where the last one stopped.
//
// The safety rules — when a cluster is done (works applied with the desired configs, ManifestApplied,
// healthy), what fails it and counts toward maxFailures, when a change is a rollback (which never
// waits for a canary and is paced by maxConcurrency), how a canary placement is judged, and what
// Manual leaves alone — are written down in package rolloutplan's documentation and implemented
// there; docs/design/lifecycle.md summarises the design they follow.
package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonrollout"
	installer "github.com/addonops/addonops/internal/addonrollout"
	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/notify"
	"github.com/addonops/addonops/internal/rolloutmetrics"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/rolloutrules"
	"github.com/addonops/addonops/internal/templatedeploy"
	"github.com/addonops/addonops/internal/verifyrun"
)

// Add-on selection modes (--addons).
const (
	// AddonsSelf manages the CMAs annotated addon.open-cluster-management.io/lifecycle with any
	// value but "addon-manager": exactly the CMAs OCM's addon-manager leaves alone (it manages
	// those without the annotation or with "addon-manager"). addon-framework v1.3.0 rewrites "self"
	// to "", which OCM v1.3.0 still treats as self-managed, so "" is ours too.
	AddonsSelf = hubcache.AddonsSelf
	// AddonsAll manages every CMA: a hub without OCM's addon-manager.
	AddonsAll = hubcache.AddonsAll
)

// Options configure the controller. Zero values get defaults.
type Options struct {
	// Addons selects the CMAs to manage: AddonsSelf (default) or AddonsAll.
	Addons string
	// Workers is the number of progress workers (per-MCA reconciles); install and rollout get
	// fewer, as they work per add-on. Default 4.
	Workers int
	// Resync is the informers' resync period: every object is reconciled again this often. Default
	// 10m.
	Resync time.Duration
	// Coalesce delays rollout decisions triggered by MCA, work and config events so a burst of
	// events makes one decision. Default 250ms.
	Coalesce time.Duration
	// WriteParallelism bounds concurrent MCA writes of one decision. Default 16.
	WriteParallelism int
	// ConfigGC configures the garbage collection of superseded config versions
	// (addonrollout.Collector).
	ConfigGC ConfigGCOptions
	// DeployTemplates, when set, runs the template reconcilers (package templatedeploy) on the
	// controller's cache: --deploy-templates.
	DeployTemplates *templatedeploy.Options
	// Only, when set, restricts the controller to these add-on names: tests run several
	// controllers on one hub, each on its own add-on.
	Only []string
	// HistoryNamespace is where the add-ons' version histories are kept (package history): one
	// ConfigMap per add-on. Empty turns the history off (a revert is then a rollback only while
	// the install progressions or the clusters still remember the version).
	HistoryNamespace string
	// HistoryLimit is how many versions per placement the history keeps. Default
	// history.DefaultLimit.
	HistoryLimit int
	// DeployerWait is how long a cluster told to run its configs may go without any
	// ManifestApplied (no add-on manager deploys the add-on) before its MCA's Progressing
	// message, its placement's progression and a Warning event on the CMA say so
	// (--deployer-wait). Default rolloutplan.DefaultDeployerWait, 2m.
	DeployerWait time.Duration
	// PlacementGrace is how long a Placement the add-on names may be missing before its placement
	// is Degraded (PlacementNotFound); within it the placement is Progressing: a GitOps sync may
	// apply the Placement after the add-on (--placement-grace). Default
	// rolloutplan.DefaultPlacementGrace, 30s.
	PlacementGrace time.Duration
	// InterimHold is how long an MCA's interim status (a health soak under way, health not known
	// yet for a new generation) stays unwritten unless a settled change comes first
	// (addonrollout.Options.InterimHold). Default rolloutplan.DefaultInterimHold, 15s; negative
	// writes every change at once.
	InterimHold time.Duration
	// Notifications, when set, sends notifications of the rollouts' moments (package notify),
	// configured by the ConfigMap and Secret in Notifications.Namespace (--notifications).
	Notifications *notify.Options
}

// ConfigGCOptions configure the garbage collection of superseded config versions.
type ConfigGCOptions struct {
	// Disabled turns it off (--config-gc=false).
	Disabled bool
	// Keep is how many unused versions per base name are kept, newest first (--config-gc-keep).
	// Negative means the default, 1.
	Keep int
	// MinAge is how old a version must be before it is deleted (--config-gc-min-age). Zero means
	// the default, 10m; negative means no minimum.
	MinAge time.Duration
	// DryRun only reports what would be deleted (events, logs, metric), deleting nothing.
	DryRun bool
	// Interval is how often it runs. Default 1m.
	Interval time.Duration
}

// Complete validates o and fills in the defaults.
func (o *Options) Complete() error {
	switch o.Addons {
	case "":
		o.Addons = AddonsSelf
	case AddonsSelf, AddonsAll:
	default:
		return fmt.Errorf("--addons=%q: want %q (CMAs annotated %s, not %q) or %q (every CMA)", o.Addons, AddonsSelf,
			addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue, AddonsAll)
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Resync <= 0 {
		o.Resync = 10 * time.Minute
	}
	if o.Coalesce <= 0 {
		o.Coalesce = 250 * time.Millisecond
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = history.DefaultLimit
	}
	if o.DeployerWait <= 0 {
		o.DeployerWait = rolloutplan.DefaultDeployerWait
	}
	if o.PlacementGrace <= 0 {
		o.PlacementGrace = rolloutplan.DefaultPlacementGrace
	}
	if o.WriteParallelism <= 0 {
		o.WriteParallelism = 16
	}
	if o.ConfigGC.Keep < 0 {
		o.ConfigGC.Keep = 1
	}
	switch {
	case o.ConfigGC.MinAge == 0:
		o.ConfigGC.MinAge = 10 * time.Minute
	case o.ConfigGC.MinAge < 0:
		o.ConfigGC.MinAge = 0
	}
	if o.ConfigGC.Interval <= 0 {
		o.ConfigGC.Interval = time.Minute
	}
	return nil
}

// Controller is the hub controller: the hub cache and the reconcilers on it.
type Controller struct {
	opts Options
	hub  *hubcache.Cache
	view *addonrollout.View
	// recorder records events on the objects the controller cannot decode.
	recorder record.EventRecorder
}

// New builds a controller talking to the hub cfg points at: its hub cache and reconcilers (and
// with Options.DeployTemplates the template reconcilers), run by Run.
func New(cfg *rest.Config, opts Options) (*Controller, error) {
	if err := opts.Complete(); err != nil {
		return nil, err
	}
	if cfg.UserAgent == "" {
		// The field manager of every update the controller makes: an embedding that sets none (the
		// tests, the demo) is named in managedFields as the binary is, not as client-go's default.
		cfg = rest.CopyConfig(cfg)
		cfg.UserAgent = "addonops-controller"
	}
	hub, err := hubcache.New(cfg, hubcache.Options{Addons: opts.Addons, Only: opts.Only, Resync: opts.Resync,
		DeployTemplates: opts.DeployTemplates != nil, HistoryNamespace: opts.HistoryNamespace})
	if err != nil {
		return nil, err
	}
	// Changes that may wait for another write of their MCA wait as long as an interim status does.
	hub.MCAWriter.Hold = opts.InterimHold
	if hub.MCAWriter.Hold == 0 {
		hub.MCAWriter.Hold = rolloutplan.DefaultInterimHold
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(addonv1alpha1.Install(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	events := record.NewBroadcaster()
	recorder := events.NewRecorder(scheme, corev1.EventSource{Component: "addonops-controller"})
	if err := hub.AddEvents(events); err != nil {
		return nil, err
	}
	c := &Controller{opts: opts, hub: hub, recorder: recorder,
		view: addonrollout.NewView(hub, recorder, opts.Coalesce, opts.WriteParallelism)}

	installs := installer.NewInstall(c.view)
	var notifier *notify.Notifier
	if opts.Notifications != nil {
		if notifier, err = notify.New(hub.Clients.Kube, recorder, *opts.Notifications); err != nil {
			return nil, err
		}
		if err := hub.AddLoop(notifier.Run); err != nil {
			return nil, err
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client that reads verification templates: %w", err)
	}
	var roller *addonrollout.Rollout
	verifier := verifyrun.New(verifyrun.Options{Templates: templateReader(dyn), Done: func(addon string) { roller.Enqueue(addon) }})
	roller = addonrollout.NewRollout(c.view, addonrollout.RolloutOptions{HistoryNamespace: opts.HistoryNamespace, HistoryLimit: opts.HistoryLimit, DeployerWait: opts.DeployerWait, PlacementGrace: opts.PlacementGrace,
		Notifier: notifier, Verifier: verifier})
	if err := hub.AddLoop(verifier.Loop); err != nil {
		return nil, err
	}
	tracker := addonrollout.NewProgress(c.view, addonrollout.ProgressOptions{DeployerWait: opts.DeployerWait, ProbeHealth: opts.DeployTemplates != nil,
		InterimHold: opts.InterimHold})
	hub.OnUndecodable(c.undecodableEvent)
	hub.OnTrimmed(c.trimmedEvent)
	hub.Configs.OnChange(roller.EnqueueAll)
	hub.Configs.OnAccess(roller.ConfigAccess)
	for _, r := range []hubcache.Reconciler{
		{Name: "install", Workers: 2, Sync: installs.Sync, Watch: installs.Watch},
		{Name: "rollout", Workers: 2, Sync: roller.Sync, Watch: roller.Watch},
		{Name: "progress", Workers: opts.Workers, Sync: tracker.Sync, Watch: tracker.Watch},
	} {
		if err := hub.Add(r); err != nil {
			return nil, err
		}
	}
	if !opts.ConfigGC.Disabled {
		gc := addonrollout.NewCollector(c.view, addonrollout.CollectorOptions{Keep: opts.ConfigGC.Keep, MinAge: opts.ConfigGC.MinAge,
			DryRun: opts.ConfigGC.DryRun, Interval: opts.ConfigGC.Interval})
		if err := hub.AddLoop(gc.Run); err != nil {
			return nil, err
		}
	}
	if t := opts.DeployTemplates; t != nil {
		topts := *t
		if topts.Workers <= 0 {
			topts.Workers = opts.Workers
		}
		if err := templatedeploy.Register(hub, topts); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run runs the hub cache and every reconciler on it until ctx is done.
func (c *Controller) Run(ctx context.Context) error { return c.hub.Run(ctx) }

// Start runs the controller until ctx is done: it makes the controller a manager.Runnable, the
// one runnable of the process that holds a cache.
func (c *Controller) Start(ctx context.Context) error { return c.Run(ctx) }

// NeedLeaderElection tells the manager to run the controller only on the leader replica: two
// controllers writing the same statuses would fight.
func (c *Controller) NeedLeaderElection() bool { return true }

// Synced reports whether Run has started and every informer cache has synced: the controller's
// decisions rest on complete caches from then on (readiness).
func (c *Controller) Synced() bool { return c.hub.Synced() }

// EventReasonConfigurationForbidden is the reason of the Warning event on a CMA whose configs the
// controller may not read (hubcache.ForbiddenError).
const EventReasonConfigurationForbidden = addonstatus.ReasonConfigurationForbidden

// MetricsSnapshot is what the scrape-time metrics report (rolloutmetrics.Snapshot): for every
// managed add-on and install placement, the clusters the placement selects by the state of their
// MCA (rolloutmetrics.StateOf; a cluster in two placements counts in both), the placement's
// maxConcurrency and its clusters in flight past its progressDeadline; and every watched config
// kind, forbidden or not. It returns nothing until the caches have synced (a replica that is not
// the leader never syncs them).
func (c *Controller) MetricsSnapshot() rolloutmetrics.Snapshot {
	var out rolloutmetrics.Snapshot
	if !c.Synced() {
		return out
	}
	now := time.Now()
	cmas, _ := c.hub.CMAs.List(labels.Everything())
	for _, cma := range cmas {
		if !c.view.Managed(cma) {
			continue
		}
		mcas := map[string]*addonv1alpha1.ManagedClusterAddOn{}
		for _, m := range c.view.AddonMCAs(cma.Name) {
			mcas[m.Namespace] = m
		}
		for _, p := range cma.Spec.InstallStrategy.Placements {
			key := p.Namespace + "/" + p.Name
			sel := labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.Name})
			decisions, _ := c.hub.Decisions.PlacementDecisions(p.Namespace).List(sel)
			// "None" and an invalid value (reported on the progression) are no deadline.
			deadline, err := time.ParseDuration(rolloutrules.ConfigOf(p.RolloutStrategy).ProgressDeadline)
			if err != nil {
				deadline = 0
			}
			seen := map[string]bool{}
			counts := map[string]int{}
			pastDeadline := 0
			for _, d := range decisions {
				for _, cd := range d.Status.Decisions {
					if cd.ClusterName == "" || seen[cd.ClusterName] {
						continue
					}
					seen[cd.ClusterName] = true
					mca := mcas[cd.ClusterName]
					counts[rolloutmetrics.StateOf(mca)]++
					if rolloutmetrics.PastDeadline(mca, deadline, now) {
						pastDeadline++
					}
				}
			}
			for state, n := range counts {
				out.Clusters = append(out.Clusters, rolloutmetrics.ClusterCount{Addon: cma.Name, Placement: key, State: state, Count: n})
			}
			placement, _ := c.hub.Placements.Placements(p.Namespace).Get(p.Name)
			out.Placements = append(out.Placements, rolloutmetrics.PlacementGauges{Addon: cma.Name, Placement: key,
				MaxConcurrency: rolloutplan.MaxConcurrency(p.RolloutStrategy, placement, len(seen)), PastDeadline: pastDeadline})
		}
	}
	for _, k := range c.hub.Configs.Kinds() {
		out.ConfigKinds = append(out.ConfigKinds, rolloutmetrics.ConfigKind{Group: k.Group, Resource: k.Resource, Forbidden: k.Forbidden != nil})
	}
	return out
}
