// Package simagent simulates, against a real hub API server, the two OCM components that act on a
// ManagedClusterAddOn after the hub controller: the add-on manager that renders ManifestWorks and
// the work agent that applies them on the managed cluster. Integration tests, benchmarks and the
// demo use it to drive add-ons through install, upgrade, failure and timeout without real clusters.
//
// The add-on manager behaves like addon-framework's agentdeploy for an add-on with
// ConfigCheckEnabled (template add-ons): it renders only while the MCA is Configured=True, so a
// cluster waiting for its rollout turn keeps its works frozen; it writes one work
// addon-<name>-deploy-0 in the cluster namespace, labelled open-cluster-management.io/addon-name,
// owned by the MCA, annotated with open-cluster-management.io/config-spec-hash built from the MCA's
// desired configs (the exact JSON addon-framework writes), whose manifest changes with the configs
// so each new version bumps the work's generation; it deletes the work when the MCA goes away.
//
// After applying a work it reports the MCA's ManifestApplied=True, as addon-framework does (or
// ManifestApplied=False without touching the work for a render error).
//
// The work agent reports, after a configurable delay, Applied and Available conditions with
// observedGeneration = generation: both True (success), both False (failure) or nothing (never),
// chosen per cluster and per config version by Options.Outcome. Before that, the add-on manager's
// health prober writes the MCA's Available condition from the same outcome (True, or False for a
// failure and for an unhealthy agent), so the add-on's health never lags behind its work. With
// WorkAgentOnly, the agent reports instead the status feedback a real work agent returns for
// Deployments and DaemonSets (ready replicas), from which the real prober computes health.
package simagent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonwork"
	"github.com/addonops/addonops/internal/manifesthead"
	"github.com/addonops/addonops/internal/statuswrite"
)

// Outcome is what the simulated work agent reports for a work.
type Outcome int

const (
	// Succeed: Applied=True and Available=True at the work's generation.
	Succeed Outcome = iota
	// Fail: Applied=False and Available=False at the work's generation.
	Fail
	// Never: no condition at all, as an agent that never got the work.
	Never
	// Unhealthy: the work is Applied and Available (its objects exist) but the add-on's agent never
	// becomes ready: the health prober reports Available=False (with WorkAgentOnly, the reported
	// status feedback has no ready replica).
	Unhealthy
	// RenderError: the add-on manager cannot render the desired configs: the work is left as it is
	// and the MCA gets ManifestApplied=False (WorkAgentOnly: not simulated, the deployer is real).
	RenderError
)

// ConfigSpecHashAnnotation is the work annotation naming the config versions a work was rendered
// from (workv1.ManifestConfigSpecHashAnnotationKey).
const ConfigSpecHashAnnotation = workv1.ManifestConfigSpecHashAnnotationKey

// Options tune the simulation.
type Options struct {
	// Addons restricts the simulation to these add-on names; empty means every add-on.
	Addons []string
	// Outcome chooses the work agent's report for the work of an add-on on a cluster, given the
	// config versions the work carries (the parsed config-spec-hash annotation: key
	// "<resource>[.<group>]/<namespace>/<name>", value spec hash). Nil: always Succeed. It is called
	// for every new work generation, so a test may change its answers while running.
	Outcome func(cluster, addon string, configs map[string]string) Outcome
	// Delay is how long the work agent takes to report a new work generation. Default 0.
	Delay time.Duration
	// Workers is the number of concurrent workers of each simulated component. Default 8.
	Workers int
	// WorkAgentOnly simulates only the work agent: someone else (the controller with
	// --deploy-templates) writes the works, and the simulation only reports on them.
	WorkAgentOnly bool
}

// Stats count the simulation's writes.
type Stats struct {
	WorksCreated, WorksUpdated, WorksDeleted, WorkStatusUpdates int64
	// MCAStatusUpdates are the add-on manager's ManifestApplied and the health prober's Available.
	MCAStatusUpdates int64
}

// Agent is the simulation.
type Agent struct {
	opts  Options
	addon addonclient.Interface
	work  workclient.Interface

	addonFactory addoninformers.SharedInformerFactory
	workFactory  workinformers.SharedInformerFactory
	mcas         cache.Indexer
	works        cache.Indexer

	deployQ workqueue.TypedRateLimitingInterface[string] // MCA keys
	agentQ  workqueue.TypedRateLimitingInterface[string] // work keys

	created, updated, deleted, statuses, mcaStatuses atomic.Int64
}

// New builds a simulation against the hub cfg points at. Raise cfg's QPS for many clusters.
func New(cfg *rest.Config, opts Options) (*Agent, error) {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	addon, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the add-on client: %w", err)
	}
	work, err := workclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the work client: %w", err)
	}
	a := &Agent{
		opts: opts, addon: addon, work: work,
		deployQ: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "simagent-deploy"}),
		agentQ: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "simagent-work"}),
	}
	strip := func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}
	a.addonFactory = addoninformers.NewSharedInformerFactoryWithOptions(addon, 0, addoninformers.WithTransform(strip))
	req, err := labels.NewRequirement(addonv1alpha1.AddonLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	a.workFactory = workinformers.NewSharedInformerFactoryWithOptions(work, 0, workinformers.WithTransform(strip),
		workinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = req.String() }))

	workInf := a.workFactory.Work().V1().ManifestWorks().Informer()
	a.works = workInf.GetIndexer()
	// The add-on manager and health prober read MCAs; a work agent alone does not, and on a real
	// fleet it runs on the managed clusters: in a benchmark its watch of every MCA would take CPU
	// and an API server watch from the hub it measures.
	if !opts.WorkAgentOnly {
		mcaInf := a.addonFactory.Addon().V1alpha1().ManagedClusterAddOns().Informer()
		a.mcas = mcaInf.GetIndexer()
		mcaKey := func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				a.deployQ.Add(key)
			}
		}
		if _, err := mcaInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: mcaKey, UpdateFunc: func(_, cur any) { mcaKey(cur) }, DeleteFunc: mcaKey,
		}); err != nil {
			return nil, err
		}
	}
	workKey := func(obj any) {
		w, ok := obj.(*workv1.ManifestWork)
		if !ok {
			return
		}
		if ready(w) {
			return
		}
		// The MCA may need its work back (deleted by someone), and the agent reports after Delay.
		if !a.opts.WorkAgentOnly {
			a.deployQ.Add(w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey])
		}
		a.agentQ.AddAfter(w.Namespace+"/"+w.Name, a.opts.Delay)
	}
	if _, err := workInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: workKey, UpdateFunc: func(_, cur any) { workKey(cur) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if w, ok := obj.(*workv1.ManifestWork); ok {
				a.deployQ.Add(w.Namespace + "/" + w.Labels[addonv1alpha1.AddonLabelKey])
			}
		},
	}); err != nil {
		return nil, err
	}
	return a, nil
}

// ready reports whether the agent already reported on the work's current generation.
func ready(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return c != nil && c.ObservedGeneration == w.Generation
}

// Recheck makes the work agent look again at every work it has not reported on for its current
// generation, for tests that change Options.Outcome's answers (a Never that becomes Succeed).
func (a *Agent) Recheck() {
	for _, obj := range a.works.List() {
		if w, ok := obj.(*workv1.ManifestWork); ok && !ready(w) {
			a.agentQ.Add(w.Namespace + "/" + w.Name)
		}
	}
}

// Stats returns the writes so far.
func (a *Agent) Stats() Stats {
	return Stats{WorksCreated: a.created.Load(), WorksUpdated: a.updated.Load(), WorksDeleted: a.deleted.Load(), WorkStatusUpdates: a.statuses.Load(),
		MCAStatusUpdates: a.mcaStatuses.Load()}
}

// Run runs the simulation until ctx is done. It returns once its caches synced and workers started
// only through Start; Run blocks.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Start starts the simulation in the background and returns once its caches have synced; it stops
// when ctx is done.
func (a *Agent) Start(ctx context.Context) error {
	a.addonFactory.Start(ctx.Done())
	a.workFactory.Start(ctx.Done())
	for _, synced := range []map[reflect.Type]bool{a.addonFactory.WaitForCacheSync(ctx.Done()), a.workFactory.WaitForCacheSync(ctx.Done())} {
		for typ, ok := range synced {
			if !ok {
				return fmt.Errorf("simagent: cache of %v did not sync: %w", typ, ctx.Err())
			}
		}
	}
	var wg sync.WaitGroup
	for range a.opts.Workers {
		wg.Go(func() { loop(ctx, a.deployQ, a.deploy) })
		wg.Go(func() { loop(ctx, a.agentQ, a.report) })
	}
	go func() {
		<-ctx.Done()
		a.deployQ.ShutDown()
		a.agentQ.ShutDown()
		wg.Wait()
		a.addonFactory.Shutdown()
		a.workFactory.Shutdown()
	}()
	return nil
}

func loop(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		if err := sync(ctx, key); err != nil && ctx.Err() == nil {
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

func (a *Agent) simulates(addon string) bool {
	if len(a.opts.Addons) == 0 {
		return true
	}
	for _, n := range a.opts.Addons {
		if n == addon {
			return true
		}
	}
	return false
}

// workName is addon-framework's name for an add-on's first deploy work.
func workName(addon string) string { return addonwork.DeployWorkName(addon, 0) }

// deploy is the add-on manager: it keeps the MCA's work in line with the MCA's desired configs.
func (a *Agent) deploy(ctx context.Context, key string) error {
	if a.opts.WorkAgentOnly {
		return nil
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || !a.simulates(name) {
		return nil
	}
	obj, exists, err := a.mcas.GetByKey(key)
	if err != nil {
		return err
	}
	works := a.work.WorkV1().ManifestWorks(ns)
	if !exists || obj.(*addonv1alpha1.ManagedClusterAddOn).DeletionTimestamp != nil {
		// No garbage collector runs on a test hub: remove what the MCA owned.
		if _, has, _ := a.works.GetByKey(ns + "/" + workName(name)); has {
			if err := works.Delete(ctx, workName(name), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting work %s/%s: %w", ns, workName(name), err)
			}
			a.deleted.Add(1)
		}
		return nil
	}
	mca := obj.(*addonv1alpha1.ManagedClusterAddOn)
	if !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured) {
		return nil // frozen until the MCA's rollout turn comes (ConfigCheckEnabled)
	}
	if a.outcome(ns, name, addonwork.ConfigSpecHashes(addonwork.ConfigReferencesFromV1alpha1(mca.Status.ConfigReferences))) == RenderError {
		return a.setCondition(ctx, mca, metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnManifestApplied, Status: metav1.ConditionFalse,
			Reason: "ManifestWorkApplyFailed", Message: "failed to get manifest from agent interface: render error (simulated)"})
	}
	want, err := renderWork(mca)
	if err != nil {
		return err
	}
	applied := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnManifestApplied, Status: metav1.ConditionTrue,
		Reason: "AddonManifestApplied", Message: "manifests of addon are applied successfully"}
	cached, has, err := a.works.GetByKey(ns + "/" + want.Name)
	if err != nil {
		return err
	}
	if !has {
		if _, err := works.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // the informer will show it and requeue
			}
			return fmt.Errorf("creating work %s/%s: %w", ns, want.Name, err)
		}
		a.created.Add(1)
		return a.setCondition(ctx, mca, applied)
	}
	cur := cached.(*workv1.ManifestWork)
	if maps.Equal(cur.Annotations, want.Annotations) && equality.Semantic.DeepEqual(cur.Spec, want.Spec) {
		return a.setCondition(ctx, mca, applied)
	}
	updated := cur.DeepCopy()
	updated.Annotations = want.Annotations
	updated.Spec = want.Spec
	if _, err := works.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating work %s/%s: %w", ns, want.Name, err)
	}
	a.updated.Add(1)
	return a.setCondition(ctx, mca, applied)
}

// outcome asks Options.Outcome.
func (a *Agent) outcome(cluster, addon string, configs map[string]string) Outcome {
	if a.opts.Outcome == nil {
		return Succeed
	}
	return a.opts.Outcome(cluster, addon, configs)
}

// setCondition sets a condition of the MCA's status, as addon-framework's deployer and health
// prober do (meta.SetStatusCondition: the transition time moves only when the status flips),
// writing only when it changes.
func (a *Agent) setCondition(ctx context.Context, mca *addonv1alpha1.ManagedClusterAddOn, c metav1.Condition) error {
	if old := meta.FindStatusCondition(mca.Status.Conditions, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return nil
	}
	_, err := statuswrite.Status(ctx, a.addon, mca, func(m *addonv1alpha1.ManagedClusterAddOn) {
		meta.SetStatusCondition(&m.Status.Conditions, c)
	})
	if err == nil {
		a.mcaStatuses.Add(1)
	}
	return err
}

// renderWork is the work the add-on manager wants for mca: a ConfigMap that names the config
// versions, so a new version changes the spec and the work's generation.
func renderWork(mca *addonv1alpha1.ManagedClusterAddOn) (*workv1.ManifestWork, error) {
	hashes := addonwork.ConfigSpecHashes(addonwork.ConfigReferencesFromV1alpha1(mca.Status.ConfigReferences))
	var annotations map[string]string
	data := map[string]string{"addon": mca.Name}
	if len(hashes) > 0 {
		b, err := json.Marshal(hashes)
		if err != nil {
			return nil, fmt.Errorf("encoding config spec hashes: %w", err)
		}
		annotations = map[string]string{ConfigSpecHashAnnotation: string(b)}
		data["configs"] = string(b)
	}
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": mca.Name + "-agent", "namespace": "open-cluster-management-agent-addon"},
		"data":     data,
	}
	raw, err := json.Marshal(cm)
	if err != nil {
		return nil, fmt.Errorf("encoding the manifest: %w", err)
	}
	controller := true
	return &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{
			Name: workName(mca.Name), Namespace: mca.Namespace,
			Labels:      map[string]string{addonv1alpha1.AddonLabelKey: mca.Name},
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: addonv1alpha1.SchemeGroupVersion.String(), Kind: "ManagedClusterAddOn",
				Name: mca.Name, UID: mca.UID, Controller: &controller,
			}},
		},
		Spec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}, nil
}

// report is the work agent: it reports the outcome for the work's current generation.
func (a *Agent) report(ctx context.Context, key string) error {
	obj, exists, err := a.works.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	w := obj.(*workv1.ManifestWork)
	addon := w.Labels[addonv1alpha1.AddonLabelKey]
	if !a.simulates(addon) || ready(w) {
		return nil
	}
	var configs map[string]string
	if raw, ok := w.Annotations[ConfigSpecHashAnnotation]; ok {
		if err := json.Unmarshal([]byte(raw), &configs); err != nil {
			return fmt.Errorf("work %s: annotation %s: %w", key, ConfigSpecHashAnnotation, err)
		}
	}
	outcome := a.outcome(w.Namespace, addon, configs)
	if outcome == Never || outcome == RenderError {
		return nil
	}
	status, reason, msg := metav1.ConditionTrue, "AppliedManifestWorkComplete", "Apply manifest work complete (simulated)"
	avReason, avMsg := "ResourcesAvailable", "All resources are available (simulated)"
	health := metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionTrue,
		Reason: addonv1alpha1.AddonAvailableReasonProbeAvailable, Message: addon + " add-on is available."}
	switch outcome {
	case Fail:
		status, reason, msg = metav1.ConditionFalse, "AppliedManifestWorkFailed", "Failed to apply manifest work (simulated)"
		avReason, avMsg = "ResourcesNotAvailable", "Resources are not available (simulated)"
		health = metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionFalse,
			Reason: addonv1alpha1.AddonAvailableReasonWorkNotApply, Message: avMsg}
	case Unhealthy:
		health = metav1.Condition{Type: addonv1alpha1.ManagedClusterAddOnConditionAvailable, Status: metav1.ConditionFalse,
			Reason: addonv1alpha1.AddonAvailableReasonProbeUnavailable, Message: "Probe addon unavailable with err the agent has no ready replica (simulated)"}
	}
	if !a.opts.WorkAgentOnly {
		// The health prober, before the work shows its new status, so health never lags behind.
		if obj, exists, err := a.mcas.GetByKey(w.Namespace + "/" + addon); err == nil && exists {
			if err := a.setCondition(ctx, obj.(*addonv1alpha1.ManagedClusterAddOn), health); err != nil {
				return err
			}
		}
	}
	updated := w.DeepCopy()
	if a.opts.WorkAgentOnly {
		updated.Status.ResourceStatus.Manifests = feedback(w, outcome == Unhealthy)
	}
	meta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: status, Reason: reason, Message: msg, ObservedGeneration: w.Generation})
	meta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{Type: workv1.WorkAvailable, Status: status, Reason: avReason, Message: avMsg, ObservedGeneration: w.Generation})
	if _, err := a.work.WorkV1().ManifestWorks(w.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reporting work %s: %w", key, err)
	}
	a.statuses.Add(1)
	return nil
}

// feedback is the status feedback a work agent returns for the Deployments and DaemonSets of w
// (WellKnownStatus): every replica ready, or none when unhealthy; and, where the work's
// manifestConfigs ask for them by name (addonwork.RolloutFeedback), a workload that rolled out
// its current spec: observed generation = generation (the work's, which changes whenever the
// workload may), every pod updated.
func feedback(w *workv1.ManifestWork, unhealthy bool) []workv1.ManifestCondition {
	var out []workv1.ManifestCondition
	for i, m := range w.Spec.Workload.Manifests {
		obj, err := manifesthead.Read(m.Raw)
		if err != nil {
			continue
		}
		var values []workv1.FeedbackValue
		num := func(name string, v int64) {
			values = append(values, workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: &v}})
		}
		resource := ""
		var rollout map[string]int64
		switch obj.Kind {
		case "Deployment":
			resource = "deployments"
			replicas := int64(1)
			if r, ok := obj.Replicas.(int64); ok {
				replicas = r
			}
			ready := replicas
			if unhealthy {
				ready = 0
			}
			num("Replicas", replicas)
			num("ReadyReplicas", ready)
			num("AvailableReplicas", ready)
			rollout = map[string]int64{addonwork.FeedbackUpdatedReplicas: replicas}
		case "DaemonSet":
			resource = "daemonsets"
			ready := int64(1)
			if unhealthy {
				ready = 0
			}
			num("DesiredNumberScheduled", 1)
			num("NumberReady", ready)
			num("NumberAvailable", ready)
			rollout = map[string]int64{addonwork.FeedbackUpdatedNumberScheduled: 1}
		default:
			continue
		}
		rollout[addonwork.FeedbackGeneration] = w.Generation
		rollout[addonwork.FeedbackObservedGeneration] = w.Generation
		for _, name := range jsonPathNames(w, resource, obj.Namespace, obj.Name) {
			if v, ok := rollout[name]; ok {
				num(name, v)
			}
		}
		out = append(out, workv1.ManifestCondition{
			ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: "apps", Version: "v1", Kind: obj.Kind, Resource: resource,
				Name: obj.Name, Namespace: obj.Namespace},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
			Conditions:      []metav1.Condition{},
		})
	}
	return out
}

// jsonPathNames lists the names of the JSONPaths feedback rules w's manifestConfigs give a workload.
func jsonPathNames(w *workv1.ManifestWork, resource, namespace, name string) []string {
	var out []string
	for _, mc := range w.Spec.ManifestConfigs {
		id := mc.ResourceIdentifier
		if id.Group != "apps" || id.Resource != resource || id.Namespace != namespace || id.Name != name {
			continue
		}
		for _, r := range mc.FeedbackRules {
			if r.Type == workv1.JSONPathsType {
				for _, p := range r.JsonPaths {
					out = append(out, p.Name)
				}
			}
		}
	}
	return out
}
