// Package rolloutmetrics is the controller's Prometheus view of add-on rollouts, served on
// controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry) next to the
// workqueue and REST client metrics:
//
//   - addonops_rollout_clusters{addon,placement,state}: clusters of an install placement by the
//     Progressing reason of their ManagedClusterAddOn (InstallSucceed, Upgrading, UpgradeFailed,
//     WaitingForCanary, ...; NotInstalled when the cluster has no MCA yet, Unknown when its MCA has no
//     Progressing condition). A Collector computes it from the controller's caches at scrape time,
//     so it cannot drift from what the controller sees.
//   - addonops_rollout_max_concurrency{addon,placement}: how many of the placement's clusters its
//     rollout strategy lets be in flight at once (rolloutplan.MaxConcurrency), to compare with the
//     clusters Installing, Upgrading or RollingBack.
//   - addonops_rollout_clusters_past_deadline{addon,placement}: clusters in flight (Installing,
//     Upgrading, RollingBack) for longer than the placement's progressDeadline (0 without one).
//   - addonops_config_kind_forbidden{group,resource}: 1 while the controller may not list or watch
//     a config kind add-ons reference (their rollouts wait), 0 for the other watched kinds.
//   - addonops_rollout_duration_seconds{addon,placement,result}: how long an install progression
//     was busy (Installing, Upgrading, RollingBack) before it reached a final reason (result).
//   - addonops_rollout_failures_total{addon,placement}: progressions that ended failed.
//   - addonops_rollbacks_total{addon,placement}: rollbacks that ended (succeeded or failed).
//
// The first four are computed from the caches at each scrape (Snapshot); the last three are fed by
// ObserveProgressions, which the rollout reconciler calls after it wrote a
// ClusterManagementAddOn's status.
package rolloutmetrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	// Registers controller-runtime's client-go workqueue metrics provider (workqueue_depth,
	// workqueue_adds_total, ... by queue name) in its init: the controller's named queues ("install",
	// "rollout", "progress") report into controller-runtime's registry through it. The manager alone
	// does not import it, and the provider must be set before the first queue is made.
	_ "sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/addonops/addonops/internal/addonstatus"
)

const (
	// StateNotInstalled is the state of a cluster a placement selects that has no MCA (yet).
	StateNotInstalled = "NotInstalled"
	// StateUnknown is the state of an MCA without a Progressing condition.
	StateUnknown = "Unknown"
)

var (
	rolloutDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "addonops_rollout_duration_seconds",
		Help: "Time an add-on install progression spent installing, upgrading or rolling back, by final result (the Progressing reason it ended with).",
		// 10 s to about 11 h: a rollout over thousands of clusters with soak times takes hours.
		Buckets: prometheus.ExponentialBuckets(10, 2, 13),
	}, []string{"addon", "placement", "result"})
	rolloutFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "addonops_rollout_failures_total",
		Help: "Add-on install progressions that ended failed (InstallFailed, UpgradeFailed, RollbackFailed).",
	}, []string{"addon", "placement"})
	rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "addonops_rollbacks_total",
		Help: "Add-on rollbacks that ended (RollingBack to RollbackSucceeded or RollbackFailed).",
	}, []string{"addon", "placement"})
)

func init() {
	crmetrics.Registry.MustRegister(rolloutDuration, rolloutFailures, rollbacks, registered)
}

// registered is the collector of the scrape-time metrics on controller-runtime's registry; it
// reports what every source added with AddSource reports.
var registered = NewCollector(func() Snapshot {
	registeredMu.Lock()
	sources := make([]func() Snapshot, 0, len(registeredSources))
	for _, c := range registeredSources {
		sources = append(sources, c)
	}
	registeredMu.Unlock()
	var out Snapshot
	for _, c := range sources {
		s := c()
		out.Clusters = append(out.Clusters, s.Clusters...)
		out.Placements = append(out.Placements, s.Placements...)
		out.ConfigKinds = append(out.ConfigKinds, s.ConfigKinds...)
	}
	return out
})

var (
	registeredMu      sync.Mutex
	registeredSeq     int
	registeredSources = map[int]func() Snapshot{}
)

// AddSource serves the scrape-time metrics on controller-runtime's registry from snapshot (a
// controller's MetricsSnapshot) until remove is called. Sources must not report the same add-on
// or config kind: a process runs one controller, tests run several, each on its own add-ons (one
// that is not the leader reports nothing).
func AddSource(snapshot func() Snapshot) (remove func()) {
	registeredMu.Lock()
	defer registeredMu.Unlock()
	registeredSeq++
	id := registeredSeq
	registeredSources[id] = snapshot
	return func() {
		registeredMu.Lock()
		defer registeredMu.Unlock()
		delete(registeredSources, id)
	}
}

// ObserveProgressions records the progressions of add-on addon that went from a busy Progressing
// condition (status True; Installing, Upgrading, RollingBack) in old to a final one (status False;
// ...Succeed(ed), ...Failed) in new: the busy time (from the busy condition's lastTransitionTime to
// now), a failure, a rollback. old and new are a CMA's status.installProgressions before and after
// a status write; calling it again with the same pair after a retry would count twice, so call it
// only after a successful write.
func ObserveProgressions(addon string, old, new []addonv1alpha1.InstallProgression, now time.Time) {
	for _, o := range Transitions(old, new, now) {
		rolloutDuration.WithLabelValues(addon, o.Placement, o.Result).Observe(o.Duration.Seconds())
		if o.Failed {
			rolloutFailures.WithLabelValues(addon, o.Placement).Inc()
		}
		if o.Rollback {
			rollbacks.WithLabelValues(addon, o.Placement).Inc()
		}
	}
}

// Transition is one finished busy period of an install progression.
type Transition struct {
	Placement string // namespace/name
	Result    string // the final reason
	Duration  time.Duration
	Failed    bool
	Rollback  bool
}

// Transitions lists the progressions that finished between old and new (see ObserveProgressions).
func Transitions(old, new []addonv1alpha1.InstallProgression, now time.Time) []Transition {
	var out []Transition
	for i := range new {
		n := &new[i]
		cur := progressing(n.Conditions)
		if cur == nil || cur.Status != metav1.ConditionFalse || !(addonstatus.IsDoneReason(cur.Reason) || addonstatus.IsFailedReason(cur.Reason)) {
			continue
		}
		var prev *metav1.Condition
		for j := range old {
			if old[j].Namespace == n.Namespace && old[j].Name == n.Name {
				prev = progressing(old[j].Conditions)
				break
			}
		}
		// A rollout whose last batch was verified ends from Verifying, which keeps the busy
		// period's transition time (Progressing stays True).
		if prev == nil || prev.Status != metav1.ConditionTrue || !(addonstatus.IsBusyReason(prev.Reason) || prev.Reason == addonstatus.ReasonVerifying) {
			continue
		}
		d := now.Sub(prev.LastTransitionTime.Time)
		if d < 0 {
			d = 0
		}
		out = append(out, Transition{
			Placement: n.Namespace + "/" + n.Name,
			Result:    cur.Reason,
			Duration:  d,
			Failed:    addonstatus.IsFailedReason(cur.Reason),
			Rollback:  prev.Reason == addonstatus.ReasonRollingBack,
		})
	}
	return out
}

func progressing(conds []metav1.Condition) *metav1.Condition {
	return meta.FindStatusCondition(conds, addonv1alpha1.ManagedClusterAddOnConditionProgressing)
}

// Snapshot is what the controller's caches say at a scrape. Its size is bounded by add-ons,
// placements and config kinds, never by clusters.
type Snapshot struct {
	Clusters    []ClusterCount
	Placements  []PlacementGauges
	ConfigKinds []ConfigKind
}

// ClusterCount is the number of clusters of one add-on's install placement in one state.
type ClusterCount struct {
	Addon, Placement, State string
	Count                   int
}

// PlacementGauges are one add-on's install placement's concurrency limit and the clusters in
// flight past its progressDeadline.
type PlacementGauges struct {
	Addon, Placement string
	MaxConcurrency   int
	PastDeadline     int
}

// ConfigKind is a config kind the controller watches, and whether it may not list or watch it.
type ConfigKind struct {
	Group, Resource string
	Forbidden       bool
}

// Collector serves the scrape-time metrics from a function that reads them when Prometheus
// scrapes (a controller's caches).
type Collector struct {
	snapshot func() Snapshot
}

var (
	clustersDesc = prometheus.NewDesc("addonops_rollout_clusters",
		"Clusters of an add-on's install placement by the Progressing reason of their ManagedClusterAddOn (NotInstalled: no ManagedClusterAddOn yet; Unknown: no Progressing condition).",
		[]string{"addon", "placement", "state"}, nil)
	maxConcurrencyDesc = prometheus.NewDesc("addonops_rollout_max_concurrency",
		"Clusters of an add-on's install placement its rollout strategy lets be in flight at once (Progressive: maxConcurrency resolved against the selected clusters; All and ProgressivePerGroup: every selected cluster).",
		[]string{"addon", "placement"}, nil)
	pastDeadlineDesc = prometheus.NewDesc("addonops_rollout_clusters_past_deadline",
		"Clusters of an add-on's install placement that have been installing, upgrading or rolling back for longer than the placement's progressDeadline (always 0 without one).",
		[]string{"addon", "placement"}, nil)
	configForbiddenDesc = prometheus.NewDesc("addonops_config_kind_forbidden",
		"1 while the controller may not list or watch a config kind that add-ons reference (their rollouts wait with ConfigurationForbidden), 0 for the other config kinds it watches.",
		[]string{"group", "resource"}, nil)
)

// NewCollector returns a collector calling snapshot at every scrape. snapshot returns nothing
// while the caches have not synced (a replica that is not the leader).
func NewCollector(snapshot func() Snapshot) *Collector {
	return &Collector{snapshot: snapshot}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- clustersDesc
	ch <- maxConcurrencyDesc
	ch <- pastDeadlineDesc
	ch <- configForbiddenDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.snapshot()
	for _, n := range s.Clusters {
		ch <- prometheus.MustNewConstMetric(clustersDesc, prometheus.GaugeValue, float64(n.Count), n.Addon, n.Placement, n.State)
	}
	for _, p := range s.Placements {
		ch <- prometheus.MustNewConstMetric(maxConcurrencyDesc, prometheus.GaugeValue, float64(p.MaxConcurrency), p.Addon, p.Placement)
		ch <- prometheus.MustNewConstMetric(pastDeadlineDesc, prometheus.GaugeValue, float64(p.PastDeadline), p.Addon, p.Placement)
	}
	for _, k := range s.ConfigKinds {
		v := 0.0
		if k.Forbidden {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(configForbiddenDesc, prometheus.GaugeValue, v, k.Group, k.Resource)
	}
}

// PastDeadline reports whether mca has been in flight (Progressing True with a busy reason) for
// longer than deadline at now; a deadline of 0 is none.
func PastDeadline(mca *addonv1alpha1.ManagedClusterAddOn, deadline time.Duration, now time.Time) bool {
	if mca == nil || deadline <= 0 {
		return false
	}
	c := progressing(mca.Status.Conditions)
	return c != nil && c.Status == metav1.ConditionTrue && addonstatus.IsBusyReason(c.Reason) && now.Sub(c.LastTransitionTime.Time) > deadline
}

// StateOf is the state label of a cluster's MCA (nil: the cluster has none).
func StateOf(mca *addonv1alpha1.ManagedClusterAddOn) string {
	if mca == nil {
		return StateNotInstalled
	}
	if c := progressing(mca.Status.Conditions); c != nil && c.Reason != "" {
		return c.Reason
	}
	return StateUnknown
}
