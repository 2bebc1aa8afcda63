package addonrollout

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/history"
)

// EventReasonHistoryInvalid and EventReasonHistoryWriteFailed are the Warning events on a CMA whose
// version history cannot be read or written.
const (
	EventReasonHistoryInvalid     = "VersionHistoryInvalid"
	EventReasonHistoryWriteFailed = "VersionHistoryWriteFailed"
	// EventReasonHistoryNewer is the Warning event on a CMA whose version history a newer
	// controller wrote: it is read, not written.
	EventReasonHistoryNewer = "VersionHistoryNewer"
)

// readHistory returns the add-on's version history from the cache (nil when none is recorded yet
// or history is off). ok is false when the stored record cannot be read or is not this add-on's
// (its ownerReference must name this CMA with its UID, history.CheckOwner: anyone who may create a
// ConfigMap in the controller's namespace could forge one, and one left by a deleted add-on of the
// same name is not the new one's): the decision then goes on without it, nothing overwrites it (a
// person may want to look at it; deleting the ConfigMap starts a new record), and the CMA gets a
// Warning event once per ConfigMap version. A record a newer controller wrote (history.Record.Newer)
// is returned with ok false: read for the decision, not written.
func (c *Rollout) readHistory(cma *addonv1alpha1.ClusterManagementAddOn) (rec *history.Record, ok bool) {
	if c.Hub.Histories == nil {
		return nil, false
	}
	cm, err := c.historyObject(history.ConfigMapName(cma.Name))
	if apierrors.IsNotFound(err) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	rec, err = checkHistory(cm, cma)
	if err != nil {
		if c.TellOnce("history/"+cm.Namespace+"/"+cm.Name, cm.ResourceVersion) {
			c.Recorder.Event(cma, corev1.EventTypeWarning, EventReasonHistoryInvalid, fmt.Sprintf(
				"the version history in ConfigMap %s/%s cannot be read, so a revert to a version only it remembers is not recognised as a rollback: %v; fix or delete the ConfigMap (a new record starts)", cm.Namespace, cm.Name, err))
		}
		return nil, false
	}
	if rec.Newer != "" {
		// Read for the decisions, never written: Encode would drop what the newer controller
		// recorded (its fields come back once it runs again).
		if c.TellOnce("history/"+cm.Namespace+"/"+cm.Name, cm.ResourceVersion) {
			c.Recorder.Event(cma, corev1.EventTypeWarning, EventReasonHistoryNewer, fmt.Sprintf(
				"the version history in ConfigMap %s/%s was written by a newer addonops controller (field %s is unknown to this one): it is read for rollback targets but not written, so versions that start or complete now are not recorded; run the newer controller again, or delete the ConfigMap to start a record this controller writes", cm.Namespace, cm.Name, rec.Newer))
		}
		return rec, false
	}
	return rec, true
}

// checkHistory reads the record in cm, the version history ConfigMap of cma: an error says why it
// is not cma's record (no ownerReference to cma with its UID, not a record, another add-on's).
func checkHistory(cm *corev1.ConfigMap, cma *addonv1alpha1.ClusterManagementAddOn) (*history.Record, error) {
	if err := history.CheckOwner(cm.OwnerReferences, cma.Name, cma.UID); err != nil {
		return nil, err
	}
	rec, err := history.Decode(cm.Data[history.DataKey])
	if err != nil {
		return nil, err
	}
	if rec.Addon != cma.Name {
		return nil, fmt.Errorf("it records add-on %q", rec.Addon)
	}
	return rec, nil
}

// writeHistory stores rec in the add-on's history ConfigMap (created on first use, owned by the CMA
// so it goes with it), writing with the resourceVersion it was computed from.
func (c *Rollout) writeHistory(ctx context.Context, cma *addonv1alpha1.ClusterManagementAddOn, rec *history.Record) error {
	ns, name := c.opts.HistoryNamespace, history.ConfigMapName(cma.Name)
	data, err := rec.Encode()
	if err != nil {
		return err
	}
	cm, err := c.historyObject(name)
	switch {
	case apierrors.IsNotFound(err):
		res, err := c.Hub.Clients.Kube.CoreV1().ConfigMaps(ns).Create(ctx, newHistoryConfigMap(ns, cma, data), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating the version history ConfigMap %s/%s: %w", ns, name, err)
		}
		c.WrittenHistories.Wrote(name, "", res)
		return nil
	case err != nil:
		return fmt.Errorf("reading the version history ConfigMap %s/%s: %w", ns, name, err)
	}
	updated := historyUpdate(cm, data)
	if updated == nil {
		return nil
	}
	res, err := c.Hub.Clients.Kube.CoreV1().ConfigMaps(ns).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("writing the version history ConfigMap %s/%s: %w", ns, name, err)
	}
	c.WrittenHistories.Wrote(name, cm.ResourceVersion, res)
	return nil
}

// newHistoryConfigMap is the version history ConfigMap of cma, in namespace ns, holding data (an
// encoded history.Record): owned by the CMA so it goes with it, and found by its label and
// annotation.
func newHistoryConfigMap(ns string, cma *addonv1alpha1.ClusterManagementAddOn, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: history.ConfigMapName(cma.Name),
			Labels:      map[string]string{history.AddonLabel: history.AddonLabelValue(cma.Name), "app.kubernetes.io/managed-by": "addonops"},
			Annotations: map[string]string{history.AddonAnnotation: cma.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "ClusterManagementAddOn",
				Name: cma.Name, UID: cma.UID}},
		},
		Data: map[string]string{history.DataKey: data},
	}
}

// historyUpdate returns a copy of the history ConfigMap cm holding data, or nil when it holds it
// already (nothing to write). The rest of cm (other keys, metadata) is kept.
func historyUpdate(cm *corev1.ConfigMap, data string) *corev1.ConfigMap {
	if cm.Data[history.DataKey] == data {
		return nil
	}
	updated := cm.DeepCopy()
	if updated.Data == nil {
		updated.Data = map[string]string{}
	}
	updated.Data[history.DataKey] = data
	return updated
}

// historyObject returns the history ConfigMap of that name at its freshest known version: the
// cache's, or what this controller wrote that the cache does not show yet.
func (v *View) historyObject(name string) (*corev1.ConfigMap, error) {
	cached, err := v.Hub.Histories.Get(name)
	if apierrors.IsNotFound(err) {
		if cm, ok := v.WrittenHistories.Created(name); ok {
			return cm, nil
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	return v.WrittenHistories.Get(name, cached), nil
}

// History returns cma's version history as the rollout reconciler last wrote it (historyObject:
// the progress tracker reads it right after a decision recorded a run, before the cache shows
// it), or nil when none can be read (history off, none yet, not cma's record: the rollout
// reconciler reports that). For the progress tracker, which takes no decision: what the controller
// recorded, never what a managed cluster writes (rolloutplan.Track).
func (v *View) History(cma *addonv1alpha1.ClusterManagementAddOn) *history.Record {
	if v.Hub.Histories == nil {
		return nil
	}
	cm, err := v.historyObject(history.ConfigMapName(cma.Name))
	if err != nil {
		return nil
	}
	rec, err := checkHistory(cm, cma)
	if err != nil {
		return nil
	}
	return rec
}
