package addonrollout

// Objects the API server accepted but OCM's Go types cannot hold (package hubcache decodes every
// object on its own and caches a placeholder, the Go type with the metadata only, for such an
// object): what the controller does with them and how it says so.
//
//   - A ClusterManagementAddOn: nothing is installed, removed or rolled out for it; the rollout
//     reconciler writes one install progression per spec.installStrategy.placements entry (read
//     from the object as the API server returned it) with Progressing=False, reason
//     InvalidRolloutStrategy when the field is in a rollout strategy (found by package
//     rolloutrules, the rollout-strategy function's rules), else Undecodable, and a message naming
//     the field, the value and the fix; one Warning event when that message appears.
//   - Any other kind: a Warning event on the object and an error log, once per version and problem.
//     An MCA is a cluster that cannot be configured (never written, never counted done, named in its
//     placement's progression); a Placement's clusters keep their configs; a PlacementDecision makes
//     its placement's clusters unknown (MCAs are kept, nothing moves); a ManifestWork holds its MCA's
//     progress where it is; a ManagedCluster is read for its metadata only.

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/rolloutrules"
)

var cmaGVR = addonv1alpha1.SchemeGroupVersion.WithResource("clustermanagementaddons")

// beforeRollout is the rollout reconciler's first step for a managed CMA: a CMA that does not decode
// is reported (done), and a decodable one gets what rolloutplan needs to know beyond the Go types.
// When the cache has seen a newer spec than the CMA at hand, the decision waits a moment (done,
// with a retry).
func (c *Rollout) beforeRollout(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn) (raw rolloutplan.Raw, done bool, after time.Duration, err error) {
	if derr := c.Hub.DecodeError(cma); derr != nil {
		return nil, true, 0, c.reportUndecodableCMA(ctx, cma, derr)
	}
	strategies, ok := c.Hub.RolloutStrategies(cma)
	if !ok {
		// The cache is about to show another generation of the spec: its written rollout strategies
		// are not this CMA's.
		return nil, true, notSyncedRetry, nil
	}
	return rawView{hub: c.Hub, strategies: strategies}, false, 0, nil
}

// rawView is rolloutplan.Raw on the hub cache.
type rawView struct {
	hub        *hubcache.Cache
	strategies []map[string]any
}

func (r rawView) Undecodable(obj metav1.Object) string {
	if e := r.hub.DecodeError(obj); e != nil {
		return e.Error()
	}
	return ""
}

func (r rawView) RolloutStrategy(i int) (map[string]any, bool) {
	if i < 0 || i >= len(r.strategies) {
		return nil, false
	}
	return r.strategies[i], true
}

// undecodableCMA says why a CMA does not decode: the reason of its progressions and what to fix.
// The rollout strategies are checked with package rolloutrules; when their problems are all there
// is (the object decodes without those strategies), the reason is InvalidRolloutStrategy and the
// message names the fields; otherwise Undecodable with the converter's error.
func undecodableCMA(derr *hubcache.DecodeError) (reason, problem string) {
	placements, _, _ := unstructured.NestedSlice(derr.Object.Object, "spec", "installStrategy", "placements")
	var probs []string
	stripped := derr.Object.DeepCopy()
	strippedPlacements, _, _ := unstructured.NestedSlice(stripped.Object, "spec", "installStrategy", "placements")
	for i, p := range placements {
		m, _ := p.(map[string]any)
		rs, ok := m["rolloutStrategy"].(map[string]any)
		if !ok {
			continue
		}
		found := rolloutrules.Check(fmt.Sprintf("spec.installStrategy.placements[%d].rolloutStrategy", i), rs)
		for _, pr := range found {
			probs = append(probs, pr.String())
		}
		if len(found) > 0 {
			delete(strippedPlacements[i].(map[string]any), "rolloutStrategy")
		}
	}
	if len(probs) > 0 {
		_ = unstructured.SetNestedSlice(stripped.Object, strippedPlacements, "spec", "installStrategy", "placements")
		if hubcache.Decode(stripped, &addonv1alpha1.ClusterManagementAddOn{}) == nil {
			return addonstatus.ReasonInvalidRolloutStrategy, strings.Join(probs, "; ")
		}
		return addonstatus.ReasonUndecodable, fmt.Sprintf("%v (also: %s)", derr.Err, strings.Join(probs, "; "))
	}
	return addonstatus.ReasonUndecodable, derr.Err.Error()
}

// undecodableCMAMessage is the progression message of placement key of a CMA that does not decode.
func undecodableCMAMessage(cma string, key rolloutplan.PlacementKey, problem string) string {
	return fmt.Sprintf("placement %s: ClusterManagementAddOn %s cannot be read: %s; fix the field (the API server accepts the value, but OCM's Go types cannot hold it, so no OCM client can read this add-on): until then nothing of it is installed, removed or rolled out",
		key, cma, problem)
}

// undecodableCMAStatus is the status of a CMA that does not decode (obj: the object as the API
// server returned it) at now: one install progression per spec.installStrategy.placements entry,
// keeping what the written status (old, as far as it decodes; else written anew) says of that
// placement, with Progressing=False for reason and problem. placements is how many entries the
// spec has, changed whether any progression's Progressing reason or message is new (the Warning
// event goes with it).
func undecodableCMAStatus(cma string, obj map[string]any, reason, problem string, now metav1.Time) (old, status addonv1alpha1.ClusterManagementAddOnStatus, placements int, changed bool) {
	if st, ok := obj["status"].(map[string]any); ok {
		var decoded addonv1alpha1.ClusterManagementAddOn
		if hubcache.Decode(&unstructured.Unstructured{Object: map[string]any{"status": st}}, &decoded) == nil {
			old = decoded.Status // else written anew
		}
	}
	status = addonv1alpha1.ClusterManagementAddOnStatus{DefaultConfigReferences: old.DefaultConfigReferences}
	specPlacements, _, _ := unstructured.NestedSlice(obj, "spec", "installStrategy", "placements")
	for _, p := range specPlacements {
		m, _ := p.(map[string]any)
		ns, _ := m["namespace"].(string)
		name, _ := m["name"].(string)
		key := rolloutplan.PlacementKey{Namespace: ns, Name: name}
		ip := addonv1alpha1.InstallProgression{PlacementRef: addonv1alpha1.PlacementRef{Namespace: ns, Name: name}}
		for _, o := range old.InstallProgressions {
			if o.Namespace == ns && o.Name == name {
				ip = *o.DeepCopy()
			}
		}
		cond := metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reason,
			Message: undecodableCMAMessage(cma, key, problem)}
		if prev := rolloutplan.ProgressingOf(&ip); prev == nil || prev.Reason != cond.Reason || prev.Message != cond.Message {
			changed = true
		}
		rolloutplan.SetCondition(&ip.Conditions, cond, now, false)
		status.InstallProgressions = append(status.InstallProgressions, ip)
	}
	return old, status, len(specPlacements), changed
}

// reportUndecodableCMA writes the install progressions of a CMA that does not decode (see the top of
// this file) through the dynamic client: the typed one cannot read the object back. The
// progressions keep their config references (last known good, last applied), so the rollout picks
// up where it stood once the CMA is fixed. The Warning event goes with a new message.
func (c *Rollout) reportUndecodableCMA(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, derr *hubcache.DecodeError) error {
	reason, problem := undecodableCMA(derr)
	old, status, placements, changed := undecodableCMAStatus(cma.Name, derr.Object.Object, reason, problem, rolloutplan.Now(time.Now()))
	msg := fmt.Sprintf("ClusterManagementAddOn %s cannot be read: %s; fix the field (the API server accepts the value, but OCM's Go types cannot hold it): until then nothing of this add-on is installed, removed or rolled out",
		cma.Name, problem)
	if placements == 0 {
		// No progression to say it in: an event, once per process and problem.
		if c.TellOnce(hubcache.KindClusterManagementAddOn+"/"+cma.Name, fmt.Sprintf("%s/%d/%s", cma.UID, cma.Generation, msg)) {
			c.Recorder.Event(cma, corev1.EventTypeWarning, reason, msg)
		}
		return nil
	}
	if equality.Semantic.DeepEqual(old, status) {
		return nil
	}
	u := derr.Object.DeepCopy()
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("writing the status of ClusterManagementAddOn %s: %w", cma.Name, err)
	}
	u.Object["status"] = st
	if _, err := c.Hub.Clients.Dynamic.Resource(cmaGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of ClusterManagementAddOn %s: %w", cma.Name, err)
	}
	if changed {
		klog.FromContext(ctx).Info("Add-on cannot be read; it waits", "reason", reason, "message", msg)
		c.Recorder.Event(cma, corev1.EventTypeWarning, reason, msg)
	}
	return nil
}
