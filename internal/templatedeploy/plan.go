package templatedeploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/addonwork"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/manifesthead"
	"github.com/addonops/addonops/internal/render"
)

// Condition reasons and messages, OCM's where OCM has them (addon-framework agentdeploy:
// ManifestApplied, pre-delete hooks).
const (
	ConditionManifestApplied      = addonv1alpha1.ManagedClusterAddOnManifestApplied
	ConditionHookManifestComplete = addonv1alpha1.ManagedClusterAddOnHookManifestCompleted

	ReasonApplied          = addonv1alpha1.AddonManifestAppliedReasonManifestsApplied     // AddonManifestApplied
	ReasonAppliedFailed    = addonv1alpha1.AddonManifestAppliedReasonManifestsApplyFailed // AddonManifestAppliedFailed
	ReasonWorkApplyFailed  = addonv1alpha1.AddonManifestAppliedReasonWorkApplyFailed      // ManifestWorkApplyFailed
	ReasonHookCompleted    = "HookManifestIsCompleted"
	ReasonHookNotCompleted = "HookManifestIsNotCompleted"

	MessageApplied       = "manifests of addon are applied successfully"
	MessageAppliedFailed = "failed to apply the manifests of addon"
	MessageNothingToDo   = "no manifest need to apply"

	// FinalizerPreDelete holds a ManagedClusterAddOn whose template has pre-delete hooks until
	// they ran.
	FinalizerPreDelete = addonv1alpha1.AddonPreDeleteHookFinalizer
	// finalizerPreDeleteDeprecated is the old name OCM removes.
	finalizerPreDeleteDeprecated = addonv1alpha1.AddonDeprecatedPreDeleteHookFinalizer
)

// Input is what one ManagedClusterAddOn's deployment depends on.
type Input struct {
	MCA *addonv1alpha1.ManagedClusterAddOn
	// Cluster is the ManagedCluster, nil when it does not exist.
	Cluster *clusterv1.ManagedCluster
	// Desired are the template and deployment configs the MCA was told to run, as the hub holds
	// them now.
	Desired hubcache.Desired
	// Works are the ManifestWorks in the MCA's namespace labelled with the add-on's name.
	Works []*workv1.ManifestWork
	// ManifestLimit is the manifests size limit of a work (addonwork.Options.ManifestLimit).
	ManifestLimit int
}

// Plan is what to do for one ManagedClusterAddOn.
type Plan struct {
	// Skip, when set, says why the add-on's works are left as they are; nothing else is set then,
	// except Conditions on a render error.
	Skip string
	// Create, Update and Delete are ManifestWork writes. Updates carry the existing object's
	// resourceVersion.
	Create, Update, Delete []*workv1.ManifestWork
	// AddFinalizers and RemoveFinalizers change the MCA's finalizers.
	AddFinalizers, RemoveFinalizers []string
	// Conditions are set on the MCA status.
	Conditions []metav1.Condition
	// TrackApplied asks for the ManifestApplied condition from the deploy works once written
	// (ManifestApplied).
	TrackApplied bool
	// Warnings are the renderer's warnings, for events.
	Warnings []string
}

// Decide plans the deployment of one ManagedClusterAddOn (addon-framework agentdeploy for a
// template add-on with ConfigCheckEnabled):
//
//   - a cluster deploys only when its MCA is Configured=True (its rollout turn came) and every
//     desired config exists with the desired spec hash; otherwise its works stay as they are
//     (frozen), never deleted. OCM renders whatever the template holds now, so an in-place edit
//     reaches clusters outside their rollout turn; here it waits for the rollout;
//   - desired configs the controller never decided for the MCA (hubcache.Desired.Refused: a
//     cluster's agent wrote them into its status) are never rendered: ManifestApplied=False,
//     reason ConfigsRefused, works untouched, and no pre-delete hook runs from them;
//   - a render or build error becomes ManifestApplied=False with the error, works untouched;
//   - deploy works are written only when they differ from what exists;
//   - a template with pre-delete hooks puts a finalizer on the MCA; on deletion the hook work is
//     applied, and once every hook completed (status feedback) the add-on's works are deleted and
//     the finalizer removed.
func Decide(in Input) Plan {
	mca := in.MCA
	if mca.DeletionTimestamp != nil {
		return decideDeletion(in)
	}
	if in.Cluster == nil {
		return Plan{Skip: fmt.Sprintf("ManagedCluster %s not found", mca.Namespace)}
	}
	if in.Desired.Refused != "" {
		return Plan{Skip: in.Desired.Refused, Conditions: []metav1.Condition{{Type: ConditionManifestApplied, Status: metav1.ConditionFalse,
			Reason: ReasonConfigsRefused, Message: in.Desired.Refused}}}
	}
	if in.Desired.Template == nil {
		return Plan{Skip: "not a template add-on: no AddOnTemplate among its desired configs"}
	}
	if !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured) {
		return Plan{Skip: "waiting for its rollout turn (Configured is not True): works frozen"}
	}
	if missing := missingConfigs(in.Desired); missing != "" {
		return Plan{Conditions: []metav1.Condition{applyFailed("failed to get manifest from agent interface: " + missing)}}
	}
	if !in.Desired.Current() {
		return Plan{Skip: "waiting for the rollout: " + in.Desired.Problem()}
	}
	works, warnings, err := build(in)
	if err != nil {
		return Plan{Conditions: []metav1.Condition{applyFailed(err.Error())}}
	}
	p := Plan{TrackApplied: true, Warnings: warnings}
	p.planDeploy(in, works)
	if works.PreDelete != nil {
		p.AddFinalizers = []string{FinalizerPreDelete}
		p.RemoveFinalizers = []string{finalizerPreDeleteDeprecated}
	} else {
		p.RemoveFinalizers = []string{FinalizerPreDelete, finalizerPreDeleteDeprecated}
	}
	p.dropNoopFinalizers(mca)
	return p
}

func decideDeletion(in Input) Plan {
	mca := in.MCA
	if !slices.Contains(mca.Finalizers, FinalizerPreDelete) && !slices.Contains(mca.Finalizers, finalizerPreDeleteDeprecated) {
		return Plan{Skip: "being deleted without pre-delete hooks"}
	}
	hookFinalizers := []string{FinalizerPreDelete, finalizerPreDeleteDeprecated}
	if in.Desired.Refused != "" {
		// A hook from configs a cluster named is never run: the cluster skips its own hook at most.
		return Plan{RemoveFinalizers: hookFinalizers, Warnings: []string{"pre-delete hook skipped: " + in.Desired.Refused}}
	}
	if in.Cluster == nil || in.Desired.Template == nil || in.Desired.Template.Object == nil {
		// Nothing to run the hook from (OCM: the hook builder returns nil and the finalizer goes).
		return Plan{RemoveFinalizers: hookFinalizers, Warnings: []string{"pre-delete hook skipped: " + cmpOr(
			missingConfigs(in.Desired), fmt.Sprintf("ManagedCluster %s not found", mca.Namespace))}}
	}
	// The hook comes from the configs the cluster was told to run, even when its rollout turn for
	// a newer version has not come or a config was edited since: running the hook of a close
	// version beats skipping it, which is what OCM does for a cluster waiting in a rollout.
	works, warnings, err := build(in)
	if err != nil {
		return Plan{RemoveFinalizers: hookFinalizers, Warnings: []string{"pre-delete hook skipped: " + err.Error()}}
	}
	if works.PreDelete == nil {
		return Plan{RemoveFinalizers: hookFinalizers, Warnings: warnings}
	}
	p := Plan{Warnings: warnings}
	// While the hook runs the deploy works are kept up to date, as in OCM, but only when the
	// cluster may deploy at all.
	deploy := meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionConfigured) && in.Desired.Current()
	if deploy {
		p.planDeploy(in, works)
		p.TrackApplied = true
	}
	hook := works.PreDelete
	existing := find(in.Works, hook.Name)
	switch {
	case existing == nil:
		p.Create = append(p.Create, hook)
	case NeedsUpdate(existing, hook):
		p.Update = append(p.Update, updated(existing, hook))
	case HookCompleted(existing):
		// Done: the add-on's works go (garbage collection would take those in the MCA's namespace
		// too, but not on a hub without it), then the finalizer.
		p = Plan{Warnings: warnings}
		for _, w := range in.Works {
			if ownWork(mca.Name, w) {
				p.Delete = append(p.Delete, w)
			}
		}
		p.Conditions = []metav1.Condition{{Type: ConditionHookManifestComplete, Status: metav1.ConditionTrue,
			Reason: ReasonHookCompleted, Message: fmt.Sprintf("hook manifestWork %s is completed.", hook.Name)}}
		p.RemoveFinalizers = hookFinalizers
		return p
	}
	p.Conditions = append(p.Conditions, metav1.Condition{Type: ConditionHookManifestComplete, Status: metav1.ConditionFalse,
		Reason: ReasonHookNotCompleted, Message: fmt.Sprintf("hook manifestWork %s is not completed.", hook.Name)})
	return p
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// missingConfigs names desired configs that do not exist, "" when all do.
func missingConfigs(d hubcache.Desired) string {
	var out []string
	if d.Template == nil {
		return "no AddOnTemplate among the desired configs"
	}
	if d.Template.Object == nil {
		out = append(out, d.Template.Ref.String()+" not found")
	}
	for _, a := range d.DeploymentConfigs {
		if a.Object == nil {
			out = append(out, a.Ref.String()+" not found")
		}
	}
	return strings.Join(out, "; ")
}

// build renders the template for the cluster and turns the objects into works.
func build(in Input) (*addonwork.Works, []string, error) {
	mca := in.MCA
	tpl, adcs, err := in.Desired.Typed()
	if err != nil {
		return nil, nil, fmt.Errorf("failed to get manifest from agent interface: %w", err)
	}
	cluster := render.Cluster{Name: mca.Namespace, DeploymentConfigs: adcs}
	if in.Cluster != nil {
		cluster.ImageRegistries = in.Cluster.Annotations[render.ImageRegistriesAnnotation]
	}
	renderer, err := in.Desired.Renderer()
	var res *render.Result
	if err == nil {
		res, err = renderer.Render(cluster)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("failed to render AddOnTemplate %s for cluster %s: %w", tpl.Name, mca.Namespace, err)
	}
	var existing []workv1.ManifestWork
	for _, w := range in.Works {
		if isDeployWork(mca.Name, w.Name) {
			existing = append(existing, *w)
		}
	}
	works, err := addonwork.Build(res.Objects, addonwork.Options{
		AddonName:        mca.Name,
		ClusterName:      mca.Namespace,
		Owner:            Owner(mca),
		ConfigReferences: addonwork.ConfigReferencesFromV1alpha1(mca.Status.ConfigReferences),
		ManifestConfigs:  tpl.Spec.AgentSpec.ManifestConfigs,
		Existing:         existing,
		ManifestLimit:    in.ManifestLimit,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to build manifestwork: %w", err)
	}
	return works, res.Warnings, nil
}

// planDeploy plans the deploy works: create the missing, update the different, delete those no
// longer needed. A template with nothing but hooks needs no deploy work at all.
func (p *Plan) planDeploy(in Input, works *addonwork.Works) {
	want := map[string]bool{}
	for _, w := range works.Deploy {
		want[w.Name] = true
		existing := find(in.Works, w.Name)
		switch {
		case existing == nil:
			p.Create = append(p.Create, w)
		case NeedsUpdate(existing, w):
			p.Update = append(p.Update, updated(existing, w))
		}
	}
	for _, w := range in.Works {
		if isDeployWork(in.MCA.Name, w.Name) && !want[w.Name] {
			p.Delete = append(p.Delete, w)
		}
	}
}

func (p *Plan) dropNoopFinalizers(mca *addonv1alpha1.ManagedClusterAddOn) {
	var add, remove []string
	for _, f := range p.AddFinalizers {
		if !slices.Contains(mca.Finalizers, f) {
			add = append(add, f)
		}
	}
	for _, f := range p.RemoveFinalizers {
		if slices.Contains(mca.Finalizers, f) {
			remove = append(remove, f)
		}
	}
	p.AddFinalizers, p.RemoveFinalizers = add, remove
}

// Owner is the controller reference of the add-on's works in its namespace. The version is the one
// every OCM hub serves (v1alpha1): a reference to a version the API server does not serve makes the
// garbage collector treat the owner as gone.
func Owner(mca *addonv1alpha1.ManagedClusterAddOn) *metav1.OwnerReference {
	t := true
	return &metav1.OwnerReference{APIVersion: addonv1alpha1.SchemeGroupVersion.String(), Kind: "ManagedClusterAddOn",
		Name: mca.Name, UID: mca.UID, Controller: &t, BlockOwnerDeletion: &t}
}

func isDeployWork(addon, name string) bool {
	_, ok := addonwork.DeployWorkIndex(addon, name)
	return ok
}

// ownWork reports whether w is one of the works this deployer writes for the add-on: a deploy work
// or the pre-delete hook work, not a hosted work of another namespace.
func ownWork(addon string, w *workv1.ManifestWork) bool {
	if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; hosted {
		return false
	}
	return isDeployWork(addon, w.Name) || w.Name == addonwork.PreDeleteWorkName(addon)
}

// Orphans are the works the deployer wrote for an add-on whose ManagedClusterAddOn is gone: owned
// by a ManagedClusterAddOn of the add-on's name. Garbage collection deletes them on a hub that runs
// it; this covers hubs that do not, and works left when the MCA went while we were not running.
func Orphans(addon string, works []*workv1.ManifestWork) []*workv1.ManifestWork {
	var out []*workv1.ManifestWork
	for _, w := range works {
		if !ownWork(addon, w) {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(w); ref != nil && ref.Kind == "ManagedClusterAddOn" && ref.Name == addon &&
			strings.HasPrefix(ref.APIVersion, addonv1alpha1.GroupName+"/") {
			out = append(out, w)
		}
	}
	return out
}

func find(works []*workv1.ManifestWork, name string) *workv1.ManifestWork {
	for _, w := range works {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// updated is existing with desired's labels, annotations, owner references and spec: the whole
// of each is owned by the deployer, as with OCM's applier (foreign labels and annotations go).
func updated(existing, desired *workv1.ManifestWork) *workv1.ManifestWork {
	// No status: the ManifestWork CRD has a status subresource, so an update of the work keeps the
	// status the API server has whatever the request says, and sending the cached one (the work
	// agent's conditions and feedback, a third of the work) only gives the API server more to
	// decode.
	w := &workv1.ManifestWork{TypeMeta: existing.TypeMeta, ObjectMeta: *existing.ObjectMeta.DeepCopy()}
	w.Labels = desired.Labels
	w.Annotations = desired.Annotations
	w.OwnerReferences = desired.OwnerReferences
	w.Spec = *desired.Spec.DeepCopy()
	return w
}

// NeedsUpdate reports whether existing differs from desired in what the deployer owns: labels,
// annotations, owner references and spec. Fields the ManifestWork CRD defaults count as equal to
// their default, and manifests compare as JSON values, so a work read back from the API server
// equals the work it was written from.
func NeedsUpdate(existing, desired *workv1.ManifestWork) bool {
	if !maps.Equal(existing.Labels, desired.Labels) || !maps.Equal(existing.Annotations, desired.Annotations) {
		return true
	}
	if !equality.Semantic.DeepEqual(existing.OwnerReferences, desired.OwnerReferences) {
		return true
	}
	ma, mb := existing.Spec.Workload.Manifests, desired.Spec.Workload.Manifests
	if len(ma) != len(mb) {
		return true
	}
	for i := range ma {
		if !sameManifest(ma[i], mb[i]) {
			return true
		}
	}
	sa, sb := existing.Spec, desired.Spec // copies: the works keep their manifests
	sa.Workload.Manifests, sb.Workload.Manifests = nil, nil
	return !equality.Semantic.DeepEqual(normalize(sa), normalize(sb))
}

// normalize fills in the defaults of the ManifestWork CRD (open-cluster-management.io/api v1.3.0),
// so a spec compares equal whether or not the API server defaulted it (older CRDs lack some).
func normalize(in workv1.ManifestWorkSpec) workv1.ManifestWorkSpec {
	s := *in.DeepCopy()
	if s.DeleteOption != nil && s.DeleteOption.PropagationPolicy == "" {
		s.DeleteOption.PropagationPolicy = workv1.DeletePropagationPolicyTypeForeground
	}
	for i := range s.ManifestConfigs {
		mc := &s.ManifestConfigs[i]
		if mc.FeedbackScrapeType == "" {
			mc.FeedbackScrapeType = workv1.FeedbackPollType
		}
		if us := mc.UpdateStrategy; us != nil {
			if us.Type == "" {
				us.Type = workv1.UpdateStrategyTypeUpdate
			}
			if ssa := us.ServerSideApply; ssa != nil {
				if ssa.FieldManager == "" {
					ssa.FieldManager = "work-agent"
				}
				for j := range ssa.IgnoreFields {
					if ssa.IgnoreFields[j].Condition == "" {
						ssa.IgnoreFields[j].Condition = workv1.IgnoreFieldsConditionOnSpokePresent
					}
				}
			}
		}
	}
	return s
}

// sameManifest compares manifests as JSON values, ignoring metadata.creationTimestamp and
// spec.template.metadata.creationTimestamp as OCM's applier does (typed round trips add them). A
// manifest of a cached work is a stand-in (package manifesthead, hubcache): its digest is compared
// with the other's.
func sameManifest(a, b workv1.Manifest) bool {
	if ra := bytes.TrimSpace(a.Raw); len(ra) > 0 && bytes.Equal(ra, bytes.TrimSpace(b.Raw)) {
		// The same bytes, as almost always: both are encoding/json's output with sorted keys (the
		// written one ends with the newline of a json.Encoder).
		return true
	}
	da, standInA := manifesthead.StandInDigest(a.Raw)
	db, standInB := manifesthead.StandInDigest(b.Raw)
	if standInA || standInB {
		var err error
		if !standInA {
			da, err = digestOf(a)
		}
		if !standInB {
			db, err = digestOf(b)
		}
		return err == nil && da == db
	}
	x, errA := manifestValue(a)
	y, errB := manifestValue(b)
	if errA != nil || errB != nil {
		return false
	}
	return equality.Semantic.DeepEqual(x, y)
}

// digestOf is manifesthead.Digest of a manifest that is not a stand-in.
func digestOf(m workv1.Manifest) (string, error) {
	raw, err := manifestJSON(m)
	if err != nil {
		return "", err
	}
	return manifesthead.Digest(raw)
}

// manifestValue is a manifest as a JSON value without the fields the comparison ignores
// (manifesthead.DropIgnored, which Digest leaves out too).
func manifestValue(m workv1.Manifest) (map[string]any, error) {
	raw, err := manifestJSON(m)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	manifesthead.DropIgnored(v)
	return v, nil
}

// manifestJSON is a manifest's JSON: its raw bytes, or its object encoded.
func manifestJSON(m workv1.Manifest) ([]byte, error) {
	if len(m.Raw) == 0 && m.Object != nil {
		return json.Marshal(m.Object)
	}
	return m.Raw, nil
}

// HookCompleted reports whether a pre-delete hook work finished: Available at its generation and
// every hook done according to its status feedback (Job: JobComplete "True"; Pod: PodPhase
// "Succeeded"), OCM's rule plus the generation check, so a hook work just updated is not taken for
// done on the strength of its previous version.
func HookCompleted(w *workv1.ManifestWork) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
		return false
	}
	if len(w.Spec.ManifestConfigs) == 0 {
		return false
	}
	for _, mc := range w.Spec.ManifestConfigs {
		var name, want string
		switch mc.ResourceIdentifier.Resource {
		case "jobs":
			name, want = "JobComplete", "True"
		case "pods":
			name, want = "PodPhase", "Succeeded"
		default:
			return false
		}
		v, ok := FeedbackValue(w, mc.ResourceIdentifier, name)
		if !ok || v.String == nil || *v.String != want {
			return false
		}
	}
	return true
}

// FeedbackValue finds the named status feedback value of a resource in a work's status.
func FeedbackValue(w *workv1.ManifestWork, id workv1.ResourceIdentifier, name string) (workv1.FieldValue, bool) {
	for _, m := range w.Status.ResourceStatus.Manifests {
		rm := m.ResourceMeta
		if rm.Group != id.Group || rm.Resource != id.Resource || rm.Namespace != id.Namespace || rm.Name != id.Name {
			continue
		}
		for _, v := range m.StatusFeedbacks.Values {
			if v.Name == name {
				return v.Value, true
			}
		}
	}
	return workv1.FieldValue{}, false
}

// ReasonConfigsRefused is ManifestApplied's reason while the MCA's status names desired configs the
// controller never decided for it (hubcache.Desired.Refused).
const ReasonConfigsRefused = "ConfigsRefused"

func applyFailed(msg string) metav1.Condition {
	// An API error can quote much (a refused work's fields): cut as the hub cache cuts it.
	return metav1.Condition{Type: ConditionManifestApplied, Status: metav1.ConditionFalse, Reason: ReasonWorkApplyFailed, Message: addonstatus.BoundMessage(msg)}
}

// ApplyFailed is the ManifestApplied condition after a failed ManifestWork write.
func ApplyFailed(err error) metav1.Condition {
	return applyFailed("failed to apply manifestWork: " + err.Error())
}

// SetManifestApplied sets the ManifestApplied condition from the add-on's deploy works after they
// were written (as addon-framework's agentdeploy does): True when every work reports Applied=True
// at its generation, False when one reports Applied=False at its generation; while some have not
// reported on their generation yet, an existing False is removed and an existing True kept. No
// deploy work (a template of hooks only) is True, "no manifest need to apply". OCM lets the last
// work applied decide, so a failed work can hide behind an applied one; here any failure shows.
func SetManifestApplied(conds *[]metav1.Condition, deploy []*workv1.ManifestWork) {
	if len(deploy) == 0 {
		meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied, Message: MessageNothingToDo})
		return
	}
	failed, pending := false, false
	for _, w := range deploy {
		c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
		switch {
		case c == nil || c.ObservedGeneration != w.Generation:
			pending = true
		case c.Status == metav1.ConditionFalse:
			failed = true
		case c.Status != metav1.ConditionTrue:
			pending = true
		}
	}
	switch {
	case failed:
		meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionManifestApplied, Status: metav1.ConditionFalse, Reason: ReasonAppliedFailed, Message: MessageAppliedFailed})
	case pending:
		if c := meta.FindStatusCondition(*conds, ConditionManifestApplied); c != nil && c.Status != metav1.ConditionTrue {
			meta.RemoveStatusCondition(conds, ConditionManifestApplied)
		}
	default:
		meta.SetStatusCondition(conds, metav1.Condition{Type: ConditionManifestApplied, Status: metav1.ConditionTrue, Reason: ReasonApplied, Message: MessageApplied})
	}
}

// DeployWorks picks the add-on's deploy works from works.
func DeployWorks(addon string, works []*workv1.ManifestWork) []*workv1.ManifestWork {
	var out []*workv1.ManifestWork
	for _, w := range works {
		if isDeployWork(addon, w.Name) {
			if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; !hosted {
				out = append(out, w)
			}
		}
	}
	return out
}
