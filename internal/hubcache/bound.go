package hubcache

// Bounds on what the cache keeps of the status a managed cluster writes.
//
// A managed cluster's agents write, on the hub, the status of their ManagedClusterAddOns and
// ManifestWorks, whatever it holds, and the API server bounds little of it: a condition message at
// 32 KiB and a status feedback JSON value at 1 KiB, but neither the number of conditions of other
// types than the ones addonops reads, nor the number of resource status entries or status feedback
// values, nor the length of a feedback string value or of a resource's identity; only the object's
// size (etcd's request limit, about 1.5 MB). Cached as written, a few clusters' status could take
// most of the controller's memory. So the cache keeps, per object, at most:
//
//   - conditions (an MCA's, a work's): every condition of a type addonops or OCM defines for the
//     kind, and MaxOtherConditions of any other type (the first ones, in the object's order), each
//     message cut to addonstatus.MaxMessage bytes (addonstatus.BoundMessage: the controller cuts
//     its own messages the same way, so its decisions and the cache agree);
//   - a work's resource status (kept at all only with --deploy-templates): MaxManifestStatuses
//     entries, none whose identity has a string over MaxIdentifierLength bytes; per entry
//     MaxFeedbackValues status feedback values, none whose name is over MaxIdentifierLength or whose
//     string or JSON value is over MaxFeedbackValueBytes (a value is dropped whole, not cut: a cut
//     value would be a wrong one); and MaxResourceStatusBytes of those strings in all, the entries
//     after that dropped.
//
// What is dropped is dropped from the cached object: every reader sees the bounded object, and a
// status write the controller makes from it (an MCA's UpdateStatus) writes the bounded conditions
// back. Each object version that loses something is reported once (OnTrimmed: a Warning event on
// the object naming what was dropped). The check is a walk over lengths that allocates nothing
// unless something is dropped: it runs on every decoded MCA and work.

import (
	"cmp"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// The limits (see the top of this file).
const (
	MaxOtherConditions     = 8
	MaxManifestStatuses    = 512
	MaxFeedbackValues      = 64
	MaxFeedbackValueBytes  = 1024
	MaxIdentifierLength    = 253
	MaxResourceStatusBytes = 256 << 10
)

// mcaConditionTypes are the MCA condition types addonops or OCM's hub and agents write: they are
// always kept (one of each at most: the API server keys the list by type).
var mcaConditionTypes = map[string]bool{
	addonv1alpha1.ManagedClusterAddOnConditionAvailable:     true,
	addonv1alpha1.ManagedClusterAddOnConditionDegraded:      true,
	addonv1alpha1.ManagedClusterAddOnConditionConfigured:    true,
	addonv1alpha1.ManagedClusterAddOnConditionProgressing:   true,
	addonv1alpha1.ManagedClusterAddOnManifestApplied:        true,
	addonv1alpha1.ManagedClusterAddOnHookManifestCompleted:  true,
	addonv1alpha1.ManagedClusterAddOnHostingManifestApplied: true,
	addonv1alpha1.ManagedClusterAddOnHostingClusterValidity: true,
	addonv1alpha1.ManagedClusterAddOnRegistrationApplied:    true,
	addonstatus.ConditionHealthSoak:                         true,
	// OCM's registration agent's, on an add-on whose client certificate it rotated.
	"ClusterCertificateRotated": true,
}

// workConditionTypes are the ManifestWork condition types OCM's work agent writes.
var workConditionTypes = map[string]bool{
	workv1.WorkProgressing: true,
	workv1.WorkApplied:     true,
	workv1.WorkAvailable:   true,
	workv1.WorkDegraded:    true,
	workv1.WorkComplete:    true,
}

// bound cuts obj (a decoded MCA or ManifestWork; other kinds pass) to the limits and returns what
// it dropped, for people; nil when nothing was (the usual case, which allocates nothing).
func bound(obj runtime.Object) []string {
	switch o := obj.(type) {
	case *addonv1alpha1.ManagedClusterAddOn:
		return boundConditions(&o.Status.Conditions, mcaConditionTypes, "status.conditions", nil)
	case *workv1.ManifestWork:
		dropped := boundConditions(&o.Status.Conditions, workConditionTypes, "status.conditions", nil)
		return boundResourceStatus(&o.Status.ResourceStatus, dropped)
	}
	return nil
}

// boundConditions keeps the conditions of known types and the first MaxOtherConditions others,
// their messages cut to addonstatus.MaxMessage, and appends what it dropped to dropped.
func boundConditions(conds *[]metav1.Condition, known map[string]bool, field string, dropped []string) []string {
	others, long := 0, false
	for i := range *conds {
		c := &(*conds)[i]
		if !known[c.Type] {
			others++
		}
		long = long || len(c.Message) > addonstatus.MaxMessage
	}
	if others <= MaxOtherConditions && !long {
		return dropped
	}
	kept := make([]metav1.Condition, 0, len(*conds)-max(0, others-MaxOtherConditions))
	var extra, cut []string
	others = 0
	for _, c := range *conds {
		if !known[c.Type] {
			if others++; others > MaxOtherConditions {
				extra = append(extra, c.Type)
				continue
			}
		}
		if len(c.Message) > addonstatus.MaxMessage {
			cut = append(cut, fmt.Sprintf("%s (%d bytes)", c.Type, len(c.Message)))
			c.Message = addonstatus.BoundMessage(c.Message)
		}
		kept = append(kept, c)
	}
	*conds = kept
	if len(extra) > 0 {
		dropped = append(dropped, fmt.Sprintf("%s: %d conditions of types addonops does not read, beyond the %d it keeps: %s",
			field, len(extra), MaxOtherConditions, listFew(extra)))
	}
	if len(cut) > 0 {
		dropped = append(dropped, fmt.Sprintf("%s: the message of %s cut to %d bytes", field, listFew(cut), addonstatus.MaxMessage))
	}
	return dropped
}

// boundResourceStatus keeps the resource status entries and status feedback values within the
// limits, and appends what it dropped to dropped.
func boundResourceStatus(rs *workv1.ManifestResourceStatus, dropped []string) []string {
	if len(rs.Manifests) == 0 || resourceStatusWithin(rs) {
		return dropped
	}
	var out []string
	total := 0
	kept := make([]workv1.ManifestCondition, 0, min(len(rs.Manifests), MaxManifestStatuses))
	for i, m := range rs.Manifests {
		where := fmt.Sprintf("status.resourceStatus.manifests[%d]", i)
		if len(kept) == MaxManifestStatuses {
			out = append(out, fmt.Sprintf("status.resourceStatus.manifests[%d:]: %d entries beyond the %d kept", i, len(rs.Manifests)-i, MaxManifestStatuses))
			break
		}
		if n, ok := identityBytes(m.ResourceMeta); !ok {
			out = append(out, fmt.Sprintf("%s: an identity string longer than %d bytes (%d bytes in all)", where, MaxIdentifierLength, n))
			continue
		}
		where += " (" + describeMeta(m.ResourceMeta) + ")"
		vals := m.StatusFeedbacks.Values
		if !feedbackWithin(vals) {
			keptVals := make([]workv1.FeedbackValue, 0, min(len(vals), MaxFeedbackValues))
			var tooLong []string
			for j, v := range vals {
				if len(keptVals) == MaxFeedbackValues {
					out = append(out, fmt.Sprintf("%s: %d status feedback values beyond the %d kept", where, len(vals)-j, MaxFeedbackValues))
					break
				}
				if n, ok := feedbackBytes(v); !ok {
					tooLong = append(tooLong, fmt.Sprintf("%q (%d bytes)", cutName(v.Name), n))
					continue
				}
				keptVals = append(keptVals, v)
			}
			if len(tooLong) > 0 {
				out = append(out, fmt.Sprintf("%s: status feedback values over %d bytes: %s", where, MaxFeedbackValueBytes, listFew(tooLong)))
			}
			m.StatusFeedbacks.Values = keptVals
		}
		n := entryBytes(m)
		if total+n > MaxResourceStatusBytes {
			out = append(out, fmt.Sprintf("status.resourceStatus.manifests[%d:]: %d entries beyond %d bytes of resource status", i, len(rs.Manifests)-i, MaxResourceStatusBytes))
			break
		}
		total += n
		kept = append(kept, m)
	}
	rs.Manifests = kept
	return append(dropped, out...)
}

// resourceStatusWithin reports whether rs is within the limits as it is.
func resourceStatusWithin(rs *workv1.ManifestResourceStatus) bool {
	if len(rs.Manifests) > MaxManifestStatuses {
		return false
	}
	total := 0
	for i := range rs.Manifests {
		m := &rs.Manifests[i]
		n, ok := identityBytes(m.ResourceMeta)
		if !ok || len(m.StatusFeedbacks.Values) > MaxFeedbackValues {
			return false
		}
		for _, v := range m.StatusFeedbacks.Values {
			f, ok := feedbackBytes(v)
			if !ok {
				return false
			}
			n += f
		}
		for _, c := range m.Conditions {
			n += len(c.Type) + len(c.Reason) + len(c.Message)
		}
		if total += n; total > MaxResourceStatusBytes {
			return false
		}
	}
	return true
}

func feedbackWithin(vals []workv1.FeedbackValue) bool {
	if len(vals) > MaxFeedbackValues {
		return false
	}
	for _, v := range vals {
		if _, ok := feedbackBytes(v); !ok {
			return false
		}
	}
	return true
}

// identityBytes is the size of a resource's identity strings, and whether each is within
// MaxIdentifierLength.
func identityBytes(r workv1.ManifestResourceMeta) (int, bool) {
	n, ok := 0, true
	for _, s := range [...]string{r.Group, r.Version, r.Kind, r.Resource, r.Namespace, r.Name} {
		n += len(s)
		ok = ok && len(s) <= MaxIdentifierLength
	}
	return n, ok
}

// feedbackBytes is the size of a status feedback value's strings, and whether they are within the
// limits.
func feedbackBytes(v workv1.FeedbackValue) (int, bool) {
	n, ok := len(v.Name), len(v.Name) <= MaxIdentifierLength
	for _, s := range [...]*string{v.Value.String, v.Value.JsonRaw} {
		if s != nil {
			n += len(*s)
			ok = ok && len(*s) <= MaxFeedbackValueBytes
		}
	}
	return n, ok
}

// entryBytes is the size of a resource status entry's strings.
func entryBytes(m workv1.ManifestCondition) int {
	n, _ := identityBytes(m.ResourceMeta)
	for _, v := range m.StatusFeedbacks.Values {
		f, _ := feedbackBytes(v)
		n += f
	}
	for _, c := range m.Conditions {
		n += len(c.Type) + len(c.Reason) + len(c.Message)
	}
	return n
}

func describeMeta(r workv1.ManifestResourceMeta) string {
	gr := cmp.Or(r.Resource, r.Kind)
	if r.Group != "" {
		gr += "." + r.Group
	}
	if r.Namespace != "" {
		return gr + " " + r.Namespace + "/" + r.Name
	}
	return gr + " " + r.Name
}

// cutName shortens a name that may be long for a message.
func cutName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// listFew joins the first few items and counts the rest.
func listFew(items []string) string {
	const few = 5
	if len(items) <= few {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:few], ", ") + fmt.Sprintf(" and %d more", len(items)-few)
}

// maxReported bounds the items of Trimmed.Dropped.
const maxReported = 5

// Trimmed is an object version of which the cache keeps less than the API server returned.
type Trimmed struct {
	// Kind is the object's kind (KindManagedClusterAddOn, KindManifestWork).
	Kind string
	// Addon is the add-on the object belongs to: an MCA's name, a work's add-on label.
	Addon string
	// APIVersion, Namespace, Name, UID and ResourceVersion identify the object version.
	APIVersion, Namespace, Name, ResourceVersion string
	UID                                          types.UID
	// Dropped says what was dropped, for people.
	Dropped []string
}

// Reference refers to the object, for events.
func (t *Trimmed) Reference() *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: t.APIVersion, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name,
		UID: t.UID, ResourceVersion: t.ResourceVersion}
}

// trims remembers which object version was last reported trimmed, so each is told once (a relist
// or resync hands the cache the same version again).
type trims struct {
	mu   sync.Mutex
	told map[string]string // "<kind>/<namespace>/<name>" → resourceVersion
}

// tell reports whether the version is new to the record, and records it.
func (t *trims) tell(kind string, m metav1.Object) bool {
	key := undecodableKey(kind, m.GetNamespace(), m.GetName())
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.told == nil {
		t.told = map[string]string{}
	}
	if t.told[key] == m.GetResourceVersion() {
		return false
	}
	t.told[key] = m.GetResourceVersion()
	return true
}

// forget drops what is known of a deleted object.
func (t *trims) forget(kind string, m metav1.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.told) == 0 {
		return
	}
	delete(t.told, undecodableKey(kind, m.GetNamespace(), m.GetName()))
}

// OnTrimmed sets what is called, besides the log, once per object version of which the cache keeps
// less than the API server returned (see the top of bound.go). It is called while the informer
// decodes the object: it must not block. Set it before the cache starts.
func (c *Cache) OnTrimmed(f func(*Trimmed)) { c.onTrimmed = f }

// boundDecoded bounds a decoded object of kind k and reports what it dropped, once per version.
func (c *Cache) boundDecoded(k decodedKind, obj runtime.Object) {
	dropped := bound(obj)
	if dropped == nil {
		return
	}
	m, ok := obj.(metav1.Object)
	if !ok || !c.trimmed.tell(k.gvk.Kind, m) {
		return
	}
	if len(dropped) > maxReported {
		// One line per resource status entry could be hundreds: the first ones tell the story.
		dropped = append(dropped[:maxReported:maxReported], fmt.Sprintf("and %d more", len(dropped)-maxReported))
	}
	addon := m.GetName()
	if k.gvk.Kind == KindManifestWork {
		addon = m.GetLabels()[addonv1alpha1.AddonLabelKey]
	}
	t := &Trimmed{Kind: k.gvk.Kind, Addon: addon, APIVersion: k.gvk.GroupVersion().String(), Namespace: m.GetNamespace(), Name: m.GetName(),
		UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(), Dropped: dropped}
	logger := klog.Background()
	if l := c.logger.Load(); l != nil {
		logger = *l
	}
	logger.Info("Keeping only part of an object's status: over the cache's per-object limits",
		"kind", t.Kind, "object", klog.KRef(t.Namespace, t.Name), "resourceVersion", t.ResourceVersion, "dropped", dropped)
	if c.onTrimmed != nil {
		c.onTrimmed(t)
	}
}
