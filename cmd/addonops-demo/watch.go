package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/rolloutwatch"
)

// hubView follows each add-on the demo shows as `addonops status --watch` does
// (internal/rolloutwatch: informer caches of its ClusterManagementAddOn, ManagedClusterAddOns and
// placement decisions) and builds rolloutview's view from them: polling thousands of MCAs twice a
// second would cost the hub more than the rollout itself.
type hubView struct {
	ctx     context.Context
	hub     rolloutwatch.Hub
	watches map[string]*rolloutwatch.Watch // by add-on
	// baseNames are the config-hash base names of the configs the demo applied.
	baseNames map[configref.Ref]string
	// notFound is when the controller last reported each install placement
	// ("<addon> <namespace>/<name>") PlacementNotFound: with an engine, a commit that adds a
	// Placement may meet that moment (see placementNotFoundSince).
	notFoundMu sync.Mutex
	notFound   map[string]time.Time
}

// newHubView follows add-ons until ctx ends.
func newHubView(ctx context.Context, cfg *rest.Config) (*hubView, error) {
	h := &hubView{
		ctx:       ctx,
		watches:   map[string]*rolloutwatch.Watch{},
		baseNames: map[configref.Ref]string{},
		notFound:  map[string]time.Time{},
	}
	// The demo knows the base names of the configs it applied: no request to read them back.
	hub, err := rolloutwatch.NewHub(cfg, func(_ context.Context, r configref.Ref) (string, bool) {
		b, ok := h.baseNames[r]
		return b, ok
	})
	if err != nil {
		return nil, err
	}
	h.hub = hub
	return h, nil
}

// noteNotFound notes the install placements a ClusterManagementAddOn reports PlacementNotFound.
func (h *hubView) noteNotFound(cma *addonv1alpha1.ClusterManagementAddOn) {
	now := time.Now()
	for _, ip := range cma.Status.InstallProgressions {
		for _, c := range ip.Conditions {
			if c.Type == addonstatus.ConditionProgressing && c.Reason == addonstatus.ReasonPlacementNotFound {
				h.notFoundMu.Lock()
				h.notFound[cma.Name+" "+ip.Namespace+"/"+ip.Name] = now
				h.notFoundMu.Unlock()
			}
		}
	}
}

// placementNotFoundSince lists the install placements ("<addon> <namespace>/<name>") the
// controller reported PlacementNotFound since t.
func (h *hubView) placementNotFoundSince(t time.Time) []string {
	h.notFoundMu.Lock()
	defer h.notFoundMu.Unlock()
	var out []string
	for k, at := range h.notFound {
		if !at.Before(t) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// watch returns the watch of addon, started (and its caches listed) on first use.
func (h *hubView) watch(addon string) (*rolloutwatch.Watch, error) {
	if w, ok := h.watches[addon]; ok {
		return w, nil
	}
	w, err := rolloutwatch.Start(h.ctx, h.hub, addon)
	if err != nil {
		return nil, fmt.Errorf("following add-on %s: %w", addon, err)
	}
	if err := w.OnClusterManagementAddOn(h.noteNotFound); err != nil {
		return nil, err
	}
	h.watches[addon] = w
	return w, nil
}

// shutdown waits for the informers' goroutines once ctx has ended.
func (h *hubView) shutdown() {
	for _, w := range h.watches {
		w.Wait()
	}
}

// noteBaseNames remembers the addonops.io/base-name of the configs in objs.
func (h *hubView) noteBaseNames(st step) {
	kinds := configref.NewKinds()
	for _, o := range st.Objects {
		base := o.GetAnnotations()[rolloutview.BaseNameAnnotation]
		if base == "" {
			continue
		}
		gvk := o.GroupVersionKind()
		k, ok := kinds.Lookup(gvk.Group, gvk.Kind)
		if !ok {
			continue
		}
		h.baseNames[configref.Ref{GroupResource: k.GroupResource(), Namespace: o.GetNamespace(), Name: o.GetName()}] = base
	}
}

// snapshot is one add-on as the caches hold it, with its view.
type snapshot struct {
	View rolloutview.View
	MCAs []*addonv1alpha1.ManagedClusterAddOn
	// Clusters are the clusters each install placement decided, by "<namespace>/<name>".
	Clusters map[string][]string
}

// snapshot reads add-on addon from the caches; ok is false while the cache does not hold the CMA
// at generation minGen or later (the demo just applied it), or has not listed the decisions of
// one of its install placements yet. The error says why the add-on cannot be followed.
func (h *hubView) snapshot(addon string, minGen int64, now time.Time) (s snapshot, ok bool, err error) {
	w, err := h.watch(addon)
	if err != nil {
		if h.ctx.Err() != nil {
			return snapshot{}, false, nil // interrupted: the demo stops
		}
		return snapshot{}, false, err
	}
	in, err := w.Input()
	if apierrors.IsNotFound(err) || err == nil && in.CMA.Generation < minGen {
		return snapshot{}, false, nil
	}
	if err != nil {
		return snapshot{}, false, fmt.Errorf("reading add-on %s from the caches: %w", addon, err)
	}
	for _, p := range in.CMA.Spec.InstallStrategy.Placements {
		if _, listed := in.Clusters[p.Namespace+"/"+p.Name]; !listed {
			return snapshot{}, false, nil
		}
	}
	s = snapshot{MCAs: in.MCAs, Clusters: in.Clusters}
	in.Now = now
	s.View = rolloutview.Build(in)
	return s, true, nil
}

// stepClusters counts the distinct clusters the snapshots' placements decided, and those of them
// that run one of the configs named (their ManagedClusterAddOn's AddOnDeploymentConfig is both
// desired and last applied, and it did not fail). A cluster selected by two placements (a canary
// cluster) counts once.
func stepClusters(snaps []snapshot, configs []string, failed []string) (total, running int) {
	seen := map[string]bool{}
	for _, s := range snaps {
		for _, cs := range s.Clusters {
			for _, c := range cs {
				if !seen[c] {
					seen[c] = true
					total++
				}
			}
		}
	}
	for _, s := range snaps {
		for _, m := range s.MCAs {
			if !seen[m.Namespace] || slices.Contains(failed, m.Namespace) {
				continue
			}
			for _, r := range m.Status.ConfigReferences {
				if r.Resource != "addondeploymentconfigs" || r.DesiredConfig == nil || r.LastAppliedConfig == nil {
					continue
				}
				if *r.DesiredConfig == *r.LastAppliedConfig && slices.Contains(configs, r.DesiredConfig.Name) {
					running++
					break
				}
			}
		}
	}
	return total, running
}

// verdict says whether a step's rollouts ended, and how.
type verdict struct {
	Ended  bool
	Failed bool
	// Notes explain a failure beyond the placements' own messages (a placement held by a failed
	// canary).
	Notes []string
}

// judge decides from the views of a step's add-ons whether the step ended. A placement ended when
// rolloutview's verdict (the same rules as the Argo CD and Flux health checks) is Healthy
// (succeeded) or Degraded (failed: clusters failed, maxFailures breached, a missing placement or
// config), or when it waits for a canary placement that is Degraded: the gate then holds it
// forever, by design, until a new config version comes.
func judge(views []rolloutview.View) verdict {
	if len(views) == 0 {
		return verdict{}
	}
	v := verdict{Ended: true}
	for _, view := range views {
		if len(view.Placements) == 0 && view.Health.Health != rolloutview.Healthy {
			v.Ended = false
		}
		health := map[string]rolloutview.Health{}
		for _, p := range view.Placements {
			health[p.Key()] = p.Health.Health
		}
		for _, p := range view.Placements {
			switch p.Health.Health {
			case rolloutview.Healthy:
			case rolloutview.Degraded:
				v.Failed = true
			default:
				if p.Reason == addonstatus.ReasonWaitingForCanary && p.Canary != nil && p.Canary.Canary != "" &&
					health[p.Canary.Canary] == rolloutview.Degraded {
					v.Failed = true
					v.Notes = append(v.Notes, fmt.Sprintf("%s is held by its canary %s, which failed", p.Key(), p.Canary.Canary))
					continue
				}
				v.Ended = false
			}
		}
	}
	slices.Sort(v.Notes)
	return v
}

// failedClusters lists the clusters the views report failed or timed out, sorted, without
// duplicates.
func failedClusters(views []rolloutview.View) []string {
	var out []string
	for _, v := range views {
		for _, p := range v.Placements {
			for _, f := range p.FailedClusters {
				out = append(out, f.Cluster)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// failureReasons summarizes why clusters failed: "cluster-05: UpgradeFailed: ..." for the first few.
func failureReasons(views []rolloutview.View, most int) []string {
	var out []string
	for _, v := range views {
		for _, p := range v.Placements {
			for _, f := range p.FailedClusters {
				out = append(out, fmt.Sprintf("%s: %s: %s", f.Cluster, f.Reason, strings.TrimSpace(f.Message)))
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > most {
		out = append(out[:most], fmt.Sprintf("... and %d more", len(out)-most))
	}
	return out
}

// placement is placement key of the snapshot's view, nil when the add-on has none such.
func (s snapshot) placement(key string) *rolloutview.Placement {
	for i := range s.View.Placements {
		if s.View.Placements[i].Key() == key {
			return &s.View.Placements[i]
		}
	}
	return nil
}

// owned lists the clusters placement key rolls out (the view's Owned: the controller's rule).
func (s snapshot) owned(key string) []string {
	if p := s.placement(key); p != nil {
		return p.Owned
	}
	return nil
}
