// Template add-on health: Available reports a template add-on's health: the ManagedClusterAddOn
// condition Available from its ManifestWorks' status feedback, as addon-framework's
// WorkloadAvailability health prober does (docs/design/addon-template.md#health), and
// status.healthCheck.mode Customized, which tells the spoke's lease controller to leave Available
// alone. Available is the pure decision and Set applies it to a status; the progress reconciler
// (the Progress reconciler) computes it with the rest of the cluster's progress under
// --deploy-templates and writes them together.
//
// Deliberate differences from OCM, tested:
//
//  1. A workload without status feedback makes the add-on Unknown (NoProbeResult, naming it); OCM
//     skips it as long as another workload reported, so an add-on can be Available while one of its
//     Deployments was never seen.
//  2. A Deployment whose feedback has no ReadyReplicas (the API omits zero) has no ready replica;
//     OCM fails with "readyReplica is not probed".
//  3. A work whose Available condition is not at its current generation makes the add-on Unknown
//     (WorkNotApplied): after a new version was written, the status feedback still describes the
//     old one. OCM takes the old feedback, so a version can look healthy before it ran.
//  4. When the cluster's own Available condition is Unknown the add-on's is Unknown with the
//     cluster's reason and message; OCM leaves that to its registration hub controller, which a hub
//     without OCM does not run.
//  5. A workload that has not rolled out its current spec is not available, however many of its
//     pods are ready: the works ask the work agent for each Deployment's and DaemonSet's
//     generation, observed generation and updated pods (JSONPaths feedback, see
//     addonwork.ManifestConfigs), and the ready pods count only once the workload's controller
//     observed the current generation and no pod of an older template is left. A work agent
//     reports Available for a new work generation, with feedback, as soon as it applied it: the
//     ready replicas it reports then are the old pods'. OCM counts them.
//
// The rollout (rolloutplan.Progress) adds its health soak on top: health counts only once seen after
// the works reported the new generation, and held for the soak. That also covers the moment when
// the agent's feedback was read just before it applied the new spec (the workload still looks
// rolled out at its old generation): its next status sync shows the new generation unobserved.

package rolloutplan

import (
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/addonwork"
	"github.com/addonops/addonops/internal/manifesthead"
)

// Condition strings (addon-framework healthCheckSyncer).
const (
	ConditionAvailable      = addonv1alpha1.ManagedClusterAddOnConditionAvailable
	ReasonWorkNotFound      = addonv1alpha1.AddonAvailableReasonWorkNotFound
	ReasonWorkNotApplied    = addonv1alpha1.AddonAvailableReasonWorkNotApply
	ReasonNoProbeResult     = addonv1alpha1.AddonAvailableReasonNoProbeResult
	ReasonProbeUnavailable  = addonv1alpha1.AddonAvailableReasonProbeUnavailable
	ReasonProbeAvailable    = addonv1alpha1.AddonAvailableReasonProbeAvailable
	MessageWorkNotFound     = "Addon manifestWork is not found"
	MessageWorkNotApplied   = "Addon manifestWork is not applied yet"
	MessageNoProbeResult    = "Probe results are not returned"
	messageProbeUnavailable = "Probe addon unavailable with err "
)

// Probe is a workload whose health counts.
type Probe struct {
	// Resource is "deployments" or "daemonsets" (group apps).
	Resource  string
	Namespace string
	Name      string
}

func (p Probe) String() string {
	kind := "Deployment"
	if p.Resource == "daemonsets" {
		kind = "DaemonSet"
	}
	return kind + " " + p.Namespace + "/" + p.Name
}

// Probes lists the workloads of the works' manifests: every DaemonSet and every Deployment whose
// spec.replicas is not 0 (unset counts as 1), in work and manifest order.
func Probes(works []*workv1.ManifestWork) []Probe {
	var out []Probe
	for _, w := range works {
		for _, m := range w.Spec.Workload.Manifests {
			h, err := manifesthead.Read(m.Raw)
			if err != nil {
				continue
			}
			if h.GroupVersionKind().Group != appsv1.GroupName {
				continue
			}
			switch h.Kind {
			case "Deployment":
				if isZero(h.Replicas) {
					continue
				}
				out = append(out, Probe{Resource: "deployments", Namespace: h.Namespace, Name: h.Name})
			case "DaemonSet":
				out = append(out, Probe{Resource: "daemonsets", Namespace: h.Namespace, Name: h.Name})
			}
		}
	}
	return out
}

func isZero(v any) bool {
	switch n := v.(type) {
	case int64:
		return n == 0
	case float64:
		return n == 0
	case json.Number:
		return n.String() == "0"
	}
	return false
}

// Available is the Available condition of an add-on from its deploy works, or nil to leave the
// condition as it is (the works were not written yet: no ManifestApplied condition).
func Available(mca *addonv1alpha1.ManagedClusterAddOn, cluster *clusterv1.ManagedCluster, deploy []*workv1.ManifestWork) *metav1.Condition {
	if meta.FindStatusCondition(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnManifestApplied) == nil {
		return nil
	}
	cond := func(s metav1.ConditionStatus, reason, msg string) *metav1.Condition {
		// The message may quote a work's or the cluster's (their agents write them): cut as the hub
		// cache cuts what it reads back.
		return &metav1.Condition{Type: ConditionAvailable, Status: s, Reason: reason, Message: addonstatus.BoundMessage(msg)}
	}
	if cluster != nil {
		if c := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); c != nil && c.Status == metav1.ConditionUnknown {
			return cond(metav1.ConditionUnknown, c.Reason, c.Message)
		}
	}
	if len(deploy) == 0 {
		return cond(metav1.ConditionUnknown, ReasonWorkNotFound, MessageWorkNotFound)
	}
	for _, w := range deploy {
		c := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
		switch {
		// A work not yet reported at its generation (a new version being applied) says nothing
		// about the new version: its status feedback is the old version's. Health is unknown until
		// the work agent reported, so a rollout never takes the old version's health for the new one.
		case c == nil || c.ObservedGeneration != w.Generation:
			return cond(metav1.ConditionUnknown, ReasonWorkNotApplied, MessageWorkNotApplied)
		case c.Status == metav1.ConditionFalse:
			return cond(metav1.ConditionFalse, ReasonWorkNotApplied, c.Message)
		}
	}
	probes := Probes(deploy)
	var missing, problems []string
	for _, p := range probes {
		values, ok := feedback(deploy, p)
		if !ok || unobserved(values) {
			missing = append(missing, p.String())
			continue
		}
		if err := check(p, values); err != nil {
			problems = append(problems, err.Error())
		}
	}
	switch {
	case len(problems) > 0:
		return cond(metav1.ConditionFalse, ReasonProbeUnavailable, messageProbeUnavailable+strings.Join(problems, "; "))
	case len(missing) > 0:
		return cond(metav1.ConditionUnknown, ReasonNoProbeResult, MessageNoProbeResult+" for "+strings.Join(missing, ", "))
	}
	return cond(metav1.ConditionTrue, ReasonProbeAvailable, fmt.Sprintf("%s add-on is available.", mca.Name))
}

// feedback collects the status feedback values of a workload; ok is false when there are none
// about its status (its metadata.generation alone says nothing about it).
func feedback(works []*workv1.ManifestWork, p Probe) (map[string]int64, bool) {
	out := map[string]int64{}
	found := false
	for _, w := range works {
		for _, m := range w.Status.ResourceStatus.Manifests {
			rm := m.ResourceMeta
			if rm.Group != appsv1.GroupName || rm.Resource != p.Resource || rm.Namespace != p.Namespace || rm.Name != p.Name {
				continue
			}
			for _, v := range m.StatusFeedbacks.Values {
				found = found || v.Name != addonwork.FeedbackGeneration
				if v.Value.Integer != nil {
					out[v.Name] = *v.Value.Integer
				}
			}
		}
	}
	return out, found
}

// check is the WorkloadAvailability rule: a Deployment needs one ready replica, a DaemonSet all
// its scheduled pods ready. When the work agent reports the rollout feedback addonwork asks for
// (addonwork.RolloutFeedback: Generation is there), the workload must also have rolled out its
// current spec (difference 5): its controller observed its generation, and every pod runs the
// current template (a Deployment has no pod of an older ReplicaSet left, a DaemonSet has updated
// every scheduled pod), so the ready pods counted are the new version's. Missing values the agent
// omits are zero.
func check(p Probe, v map[string]int64) error {
	if err := rolledOut(p, v); err != nil {
		return err
	}
	switch p.Resource {
	case "deployments":
		if ready := v["ReadyReplicas"]; ready < 1 {
			return fmt.Errorf("%s has no ready replica (%d of %d ready)", p, ready, v["Replicas"])
		}
	case "daemonsets":
		ready, okR := v["NumberReady"]
		desired, okD := v["DesiredNumberScheduled"]
		if !okR || !okD {
			return fmt.Errorf("%s reports no NumberReady or DesiredNumberScheduled", p)
		}
		if ready != desired {
			return fmt.Errorf("%s has %d of %d scheduled pods ready", p, ready, desired)
		}
	}
	return nil
}

// unobserved reports whether the rollout feedback says that no controller has looked at the
// workload yet (no status.observedGeneration at all): there is no probe result yet, as for a
// workload without status.
func unobserved(v map[string]int64) bool {
	_, gen := v[addonwork.FeedbackGeneration]
	_, obs := v[addonwork.FeedbackObservedGeneration]
	return gen && !obs
}

// rolledOut checks the rollout feedback of a workload, when the agent reports it.
func rolledOut(p Probe, v map[string]int64) error {
	gen, ok := v[addonwork.FeedbackGeneration]
	if !ok {
		return nil // a work written before the rollout feedback was asked for
	}
	if obs := v[addonwork.FeedbackObservedGeneration]; obs < gen {
		return fmt.Errorf("%s has not rolled out its current spec yet (observed generation %d of %d)", p, obs, gen)
	}
	switch p.Resource {
	case "deployments":
		if updated, total := v[addonwork.FeedbackUpdatedReplicas], v["Replicas"]; updated < total {
			return fmt.Errorf("%s is rolling out its current spec (%d of %d replicas updated)", p, updated, total)
		}
	case "daemonsets":
		if updated, desired := v[addonwork.FeedbackUpdatedNumberScheduled], v["DesiredNumberScheduled"]; updated < desired {
			return fmt.Errorf("%s is rolling out its current spec (%d of %d scheduled pods updated)", p, updated, desired)
		}
	}
	return nil
}

// Set writes the add-on's health, as Available computed it (nil: the works were not written yet),
// into st with status.healthCheck.mode Customized, which tells the spoke's lease controller to
// leave Available alone. Mode Customized without any Available condition is how an add-on without
// health prober (type None) looks, which a rollout takes as healthy: so the mode never goes out
// alone, and health stays Unknown (WorkNotFound) until the works tell. lastTransitionTime is now
// when the status flips, as meta.SetStatusCondition does with the caller's clock (whole seconds,
// as the API stores it, so a time kept in memory compares with written ones).
func Set(st *addonv1alpha1.ManagedClusterAddOnStatus, cond *metav1.Condition, now metav1.Time) {
	st.HealthCheck.Mode = addonv1alpha1.HealthCheckModeCustomized
	c := cond
	if c == nil {
		if meta.FindStatusCondition(st.Conditions, ConditionAvailable) != nil {
			return
		}
		c = &metav1.Condition{Type: ConditionAvailable, Status: metav1.ConditionUnknown, Reason: ReasonWorkNotFound, Message: MessageWorkNotFound}
	}
	next := *c
	next.LastTransitionTime = now
	if cur := meta.FindStatusCondition(st.Conditions, ConditionAvailable); cur != nil && cur.Status == next.Status {
		next.LastTransitionTime = cur.LastTransitionTime
	}
	meta.SetStatusCondition(&st.Conditions, next)
}

// DeployWorks picks the add-on's deploy works ("addon-<name>-deploy-<i>") from works.
func DeployWorks(addon string, works []*workv1.ManifestWork) []*workv1.ManifestWork {
	var out []*workv1.ManifestWork
	for _, w := range works {
		if _, hosted := w.Labels[addonv1alpha1.AddonNamespaceLabelKey]; hosted {
			continue
		}
		if _, ok := addonwork.DeployWorkIndex(addon, w.Name); ok {
			out = append(out, w)
		}
	}
	return out
}
