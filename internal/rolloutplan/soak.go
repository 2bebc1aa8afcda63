package rolloutplan

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// HealthSoakAnnotation on a ClusterManagementAddOn sets how long its add-on must stay healthy, after
// a cluster's works reported the desired configs, before the cluster counts as done: a Go duration
// ("30s", "2m"); "0s" turns the soak off (health must still be seen after the works were ready).
const HealthSoakAnnotation = "addonops.io/health-soak"

// DefaultHealthSoak is the health soak of an add-on whose CMA does not set HealthSoakAnnotation,
// or sets it to something that is not a duration. It is short: it has to outlast the moment
// between the work agent reporting a new generation and the health prober noticing that the new
// agent is not ready (OCM's work agent syncs status every 10s by default), not to slow every batch
// of every rollout. A prober that takes longer needs the annotation: a placement's minSuccessTime
// (see RolloutStatus) only waits, it does not watch health.
const DefaultHealthSoak = 10 * time.Second

// Gate is what the clusters of an add-on must show, besides their works, to count as done.
type Gate struct {
	// Checked: the add-on must be healthy (HealthChecked).
	Checked bool
	// Soak is how long it must stay healthy once the works run the desired configs.
	Soak time.Duration
	// Problem, when set, says why the CMA's HealthSoakAnnotation was not used (Soak is then
	// DefaultHealthSoak); it is shown in the Progressing message of every soaking cluster.
	Problem string
	// DeployerWait is how long a cluster told to run its configs may go without any
	// ManifestApplied before its status says no deployer seems to deploy the add-on
	// (WaitingForDeployer); 0 means DefaultDeployerWait. The controller's --deployer-wait.
	DeployerWait time.Duration
}

// GateOf reads an add-on's gate from its CMA: HealthChecked and HealthSoakAnnotation.
func GateOf(cma *addonv1alpha1.ClusterManagementAddOn) Gate {
	g := Gate{Checked: HealthChecked(cma), Soak: DefaultHealthSoak}
	d, set, err := ParseHealthSoak(cma.Annotations)
	switch {
	case err != nil:
		g.Problem = fmt.Sprintf("%v; the default health soak %s applies", err, DefaultHealthSoak)
	case set:
		g.Soak = d
	}
	return g
}

// ParseHealthSoak reads HealthSoakAnnotation: set is false without it; a value that is not a
// non-negative Go duration is an error.
func ParseHealthSoak(annotations map[string]string) (d time.Duration, set bool, err error) {
	raw, ok := annotations[HealthSoakAnnotation]
	if !ok {
		return 0, false, nil
	}
	d, err = time.ParseDuration(strings.TrimSpace(raw))
	switch {
	case err != nil:
		return 0, false, fmt.Errorf("annotation %s: %q is not a Go duration (such as 30s or 2m)", HealthSoakAnnotation, raw)
	case d < 0:
		return 0, false, fmt.Errorf("annotation %s: %q is negative", HealthSoakAnnotation, raw)
	}
	return d, true, nil
}

// soakOf is how long mca's add-on must stay healthy: no time at all when nothing reports its
// health (the check is off, or its prober type is None: no Available condition, see Healthy).
func (g Gate) soakOf(mca *addonv1alpha1.ManagedClusterAddOn) time.Duration {
	if !g.Checked || meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionAvailable) == nil {
		return 0
	}
	return g.Soak
}

// note is the gate's problem as a message suffix.
func (g Gate) note() string {
	if g.Problem == "" {
		return ""
	}
	return " (" + g.Problem + ")"
}

// resetSoak marks the HealthSoak condition not soaking (reason WorksNotReady or NotHealthy), if
// the MCA has one: no condition means the same, and adding one would cost a write for nothing.
func resetSoak(conds *[]metav1.Condition, reason, message string, now metav1.Time) {
	if meta.FindStatusCondition(*conds, addonstatus.ConditionHealthSoak) == nil {
		return
	}
	SetCondition(conds, metav1.Condition{Type: addonstatus.ConditionHealthSoak, Status: metav1.ConditionFalse, Reason: reason, Message: message}, now, false)
}

// restartSoak is the HealthSoak condition of a new attempt (Push): its works have not shown the
// new desired configs yet, so whatever health was seen so far counts for nothing.
func restartSoak(conds *[]metav1.Condition, now metav1.Time) {
	SetCondition(conds, metav1.Condition{Type: addonstatus.ConditionHealthSoak, Status: metav1.ConditionFalse,
		Reason: addonstatus.ReasonWorksNotReady, Message: addonstatus.MessageWorksNotReady}, now, true)
}

// soakStart returns when the add-on was first seen healthy with its works ready, continuously
// since, for the attempt that started at attempt; it records now as that moment when it was not
// soaking (or its record is older than the attempt), and restarts it when the add-on's Available
// condition changed since it started: health went away and came back between two looks, which the
// soak must not paper over. message is the condition's message (it says how long the soak is).
func soakStart(conds *[]metav1.Condition, mca *addonv1alpha1.ManagedClusterAddOn, attempt time.Time, message string, now metav1.Time) time.Time {
	hs := meta.FindStatusCondition(*conds, addonstatus.ConditionHealthSoak)
	av := meta.FindStatusCondition(mca.Status.Conditions, addonstatus.ConditionAvailable)
	if hs != nil && hs.Status == metav1.ConditionTrue && !hs.LastTransitionTime.Time.Before(attempt) &&
		(av == nil || !av.LastTransitionTime.After(hs.LastTransitionTime.Time)) {
		if hs.Reason != addonstatus.ReasonSoaking || hs.Message != message {
			hs.Reason, hs.Message = addonstatus.ReasonSoaking, message
		}
		return hs.LastTransitionTime.Time
	}
	at := now
	if av != nil && av.LastTransitionTime.After(now.Time) {
		// The prober's clock runs ahead of ours: start no earlier than its last change, or the next
		// look would take that change for a new one.
		at = av.LastTransitionTime
	}
	c := metav1.Condition{Type: addonstatus.ConditionHealthSoak, Status: metav1.ConditionTrue, Reason: addonstatus.ReasonSoaking, Message: message, LastTransitionTime: at}
	if hs == nil {
		*conds = append(*conds, c)
	} else {
		*hs = c
	}
	return at.Time
}

// soakEnd is when a soak that began at start (a condition time: whole seconds) is over. The soak
// began somewhere within the second start names, so a soak of more than nothing ends a second
// later than start+soak: it always lasts at least soak.
func soakEnd(start time.Time, soak time.Duration) time.Time {
	if soak <= 0 {
		return start
	}
	return start.Add(soak + time.Second)
}

// soaked marks the HealthSoak condition of a cluster that passed its soak.
func soaked(conds *[]metav1.Condition, soak time.Duration, checked bool) {
	hs := meta.FindStatusCondition(*conds, addonstatus.ConditionHealthSoak)
	if hs == nil {
		return
	}
	hs.Reason = addonstatus.ReasonSoaked
	switch {
	case !checked:
		hs.Message = "the add-on's ManifestWorks report the desired configs; its health is not checked"
	case soak == 0:
		hs.Message = "the add-on was healthy once its ManifestWorks reported the desired configs (no health soak)"
	default:
		hs.Message = fmt.Sprintf("the add-on stayed healthy for %s after its ManifestWorks reported the desired configs", soak)
	}
}

func soakingMessage(soak time.Duration, g Gate) string {
	return fmt.Sprintf("the add-on's ManifestWorks report the desired configs and the add-on is healthy; it must stay healthy for %s (health soak) before the cluster counts as done%s", soak, g.note())
}
