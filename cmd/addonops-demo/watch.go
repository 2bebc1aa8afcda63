package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/rolloutview"
)

// hubView keeps informer caches of what the live progress shows (add-ons, their
// ManagedClusterAddOns, placement decisions) and builds rolloutview's view from them: polling
// thousands of MCAs twice a second would cost the hub more than the rollout itself.
type hubView struct {
	addonFactory   addoninformers.SharedInformerFactory
	clusterFactory clusterinformers.SharedInformerFactory
	cmas           cache.Indexer
	mcas           cache.Indexer
	decisions      cache.Indexer
	// baseNames are the config-hash base names of the configs the demo applied.
	baseNames map[configref.Ref]string
	// notFound is when the controller last reported each install placement
	// ("<addon> <namespace>/<name>") PlacementNotFound: with an engine, a commit that adds a
	// Placement may meet that moment (see placementNotFoundSince).
	notFoundMu sync.Mutex
	notFound   map[string]time.Time
}

const (
	indexByName      = "name"      // MCAs by name (the add-on)
	indexByPlacement = "placement" // decisions by <namespace>/<placement label>
)

func newHubView(cfg *rest.Config) (*hubView, error) {
	addon, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the add-on client: %w", err)
	}
	cluster, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the cluster client: %w", err)
	}
	strip := func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}
	h := &hubView{
		addonFactory:   addoninformers.NewSharedInformerFactoryWithOptions(addon, 0, addoninformers.WithTransform(strip)),
		clusterFactory: clusterinformers.NewSharedInformerFactoryWithOptions(cluster, 0, clusterinformers.WithTransform(strip)),
		baseNames:      map[configref.Ref]string{},
		notFound:       map[string]time.Time{},
	}
	cmaInf := h.addonFactory.Addon().V1alpha1().ClusterManagementAddOns().Informer()
	mcaInf := h.addonFactory.Addon().V1alpha1().ManagedClusterAddOns().Informer()
	decInf := h.clusterFactory.Cluster().V1beta1().PlacementDecisions().Informer()
	if err := mcaInf.AddIndexers(cache.Indexers{indexByName: func(obj any) ([]string, error) {
		return []string{obj.(*addonv1alpha1.ManagedClusterAddOn).Name}, nil
	}}); err != nil {
		return nil, err
	}
	if err := decInf.AddIndexers(cache.Indexers{indexByPlacement: func(obj any) ([]string, error) {
		d := obj.(*clusterv1beta1.PlacementDecision)
		return []string{d.Namespace + "/" + d.Labels[clusterv1beta1.PlacementLabel]}, nil
	}}); err != nil {
		return nil, err
	}
	h.cmas, h.mcas, h.decisions = cmaInf.GetIndexer(), mcaInf.GetIndexer(), decInf.GetIndexer()
	if _, err := cmaInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.noteNotFound(obj) },
		UpdateFunc: func(_, obj any) { h.noteNotFound(obj) },
	}); err != nil {
		return nil, err
	}
	return h, nil
}

// noteNotFound notes the install placements a ClusterManagementAddOn reports PlacementNotFound.
func (h *hubView) noteNotFound(obj any) {
	cma, ok := obj.(*addonv1alpha1.ClusterManagementAddOn)
	if !ok {
		return
	}
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

// start runs the informers until ctx ends and waits for their caches.
func (h *hubView) start(ctx context.Context) error {
	h.addonFactory.Start(ctx.Done())
	h.clusterFactory.Start(ctx.Done())
	for _, synced := range []map[reflect.Type]bool{h.addonFactory.WaitForCacheSync(ctx.Done()), h.clusterFactory.WaitForCacheSync(ctx.Done())} {
		for typ, ok := range synced {
			if !ok {
				return fmt.Errorf("the cache of %v did not sync: %w", typ, ctx.Err())
			}
		}
	}
	return nil
}

// shutdown waits for the informers' goroutines once ctx has ended.
func (h *hubView) shutdown() {
	h.addonFactory.Shutdown()
	h.clusterFactory.Shutdown()
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
	// Stale are the placements the controller has not caught up with: no progression yet, or one
	// that predates the applied spec (a config the CMA now names is not its desired config), so
	// its reason and counts are about the last step.
	Stale map[string]bool
	// Order lists the install placements in the order of the add-on's spec: a cluster two of them
	// decide belongs to the one listed last.
	Order []string
}

// snapshot reads add-on addon from the caches; ok is false while the cache does not hold the CMA
// at generation minGen or later (the demo just applied it).
func (h *hubView) snapshot(addon string, minGen int64, now time.Time) (s snapshot, ok bool) {
	obj, exists, err := h.cmas.GetByKey(addon)
	if err != nil || !exists {
		return snapshot{}, false
	}
	cma := obj.(*addonv1alpha1.ClusterManagementAddOn)
	if cma.Generation < minGen {
		return snapshot{}, false
	}
	s = snapshot{Clusters: map[string][]string{}, Stale: map[string]bool{}}
	mcas, _ := h.mcas.ByIndex(indexByName, addon)
	for _, m := range mcas {
		s.MCAs = append(s.MCAs, m.(*addonv1alpha1.ManagedClusterAddOn))
	}
	defaults := rolloutview.DefaultConfigs(cma)
	for i := range cma.Spec.InstallStrategy.Placements {
		p := &cma.Spec.InstallStrategy.Placements[i]
		key := p.Namespace + "/" + p.Name
		decisions, _ := h.decisions.ByIndex(indexByPlacement, key)
		clusters := []string{}
		for _, d := range decisions {
			for _, c := range d.(*clusterv1beta1.PlacementDecision).Status.Decisions {
				clusters = append(clusters, c.ClusterName)
			}
		}
		s.Clusters[key] = clusters
		s.Order = append(s.Order, key)
		ip := rolloutview.Progression(cma, p.Namespace, p.Name)
		if ip == nil {
			s.Stale[key] = true
		} else if _, unseen := rolloutview.UnseenConfig(p, ip, defaults); unseen {
			s.Stale[key] = true
		}
	}
	s.View = rolloutview.Build(rolloutview.Input{CMA: cma, MCAs: s.MCAs, Clusters: s.Clusters, Now: now,
		BaseName: func(r configref.Ref) (string, bool) {
			b, ok := h.baseNames[r]
			return b, ok
		}})
	return s, true
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

// owned lists the clusters placement key rolls out to: those it decides that no placement listed
// after it decides (the controller gives a cluster to the last placement that selects it), sorted.
func (s snapshot) owned(key string) []string {
	later := map[string]bool{}
	found := false
	for _, k := range s.Order {
		if k == key {
			found = true
			continue
		}
		if found {
			for _, c := range s.Clusters[k] {
				later[c] = true
			}
		}
	}
	var out []string
	for _, c := range s.Clusters[key] {
		if !later[c] {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
