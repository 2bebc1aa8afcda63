//go:build integration

package rolloutbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	addoninformers "open-cluster-management.io/api/client/addon/informers/externalversions"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	workv1 "open-cluster-management.io/api/work/v1"
)

// writesTrace records every change a watch sees of the add-on's MCAs and ManifestWorks, with what
// changed, so a test can tell which writes a cluster's transition cost and say which ones when
// there are too many. A watch sees each write that changed an object once (an update that changes
// nothing is not stored, so not seen): the same writes the benchmark counts from the audit log.
type writesTrace struct {
	mu      sync.Mutex
	changes []change
}

// change is one stored write.
type change struct {
	at      time.Time
	kind    string // "MCA" or "work"
	key     string // namespace/name
	created bool
	// status tells an MCA status write; spec a work spec write (its generation moved). A work's
	// status is the work agent's, never counted.
	status, spec bool
	what         string
}

func (tr *writesTrace) add(c change) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.changes = append(tr.changes, c)
}

// start watches the add-on's MCAs and works with cfg (the benchmark's own user: not counted).
func (tr *writesTrace) start(ctx context.Context, cfg *rest.Config) error {
	ac, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	wc, err := workclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	af := addoninformers.NewSharedInformerFactoryWithOptions(ac, 0, addoninformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", addon).String()
	}))
	wf := workinformers.NewSharedInformerFactoryWithOptions(wc, 0, workinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = addonv1alpha1.AddonLabelKey + "=" + addon
	}))
	mcas := af.Addon().V1alpha1().ManagedClusterAddOns().Informer()
	works := wf.Work().V1().ManifestWorks().Informer()
	_, err = mcas.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			m := obj.(*addonv1alpha1.ManagedClusterAddOn)
			tr.add(change{at: time.Now(), kind: "MCA", key: m.Namespace + "/" + m.Name, created: true, what: "created"})
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, m := oldObj.(*addonv1alpha1.ManagedClusterAddOn), newObj.(*addonv1alpha1.ManagedClusterAddOn)
			if o.ResourceVersion == m.ResourceVersion {
				return
			}
			statusWhat := statusDiff(o.Status, m.Status)
			what := append(metaDiff(o.ObjectMeta, m.ObjectMeta), statusWhat...)
			if len(what) == 0 {
				what = append(what, "nothing the trace compares (managedFields only?)")
			}
			if by := writers(o.ManagedFields, m.ManagedFields); by != "" {
				what = append(what, "by "+by)
			}
			if !reflect.DeepEqual(o.Spec, m.Spec) {
				what = append(what, "spec")
			}
			tr.add(change{at: time.Now(), kind: "MCA", key: m.Namespace + "/" + m.Name, status: len(statusWhat) > 0, what: strings.Join(what, "; ")})
		},
	})
	if err != nil {
		return err
	}
	_, err = works.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			w := obj.(*workv1.ManifestWork)
			tr.add(change{at: time.Now(), kind: "work", key: w.Namespace + "/" + w.Name, created: true, what: "created"})
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, w := oldObj.(*workv1.ManifestWork), newObj.(*workv1.ManifestWork)
			if o.ResourceVersion == w.ResourceVersion {
				return
			}
			what := metaDiff(o.ObjectMeta, w.ObjectMeta)
			spec := o.Generation != w.Generation
			if spec {
				what = append(what, fmt.Sprintf("spec (generation %d)", w.Generation))
			}
			if !reflect.DeepEqual(o.Status, w.Status) {
				what = append(what, "status (work agent)")
			}
			tr.add(change{at: time.Now(), kind: "work", key: w.Namespace + "/" + w.Name, spec: spec, what: strings.Join(what, "; ")})
		},
	})
	if err != nil {
		return err
	}
	af.Start(ctx.Done())
	wf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), mcas.HasSynced, works.HasSynced) {
		return errors.New("the trace's caches did not sync")
	}
	return nil
}

// between returns the changes of kind from..to, by object key, in order.
func (tr *writesTrace) between(kind string, from, to time.Time) map[string][]change {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string][]change{}
	for _, c := range tr.changes {
		if c.kind == kind && !c.at.Before(from) && c.at.Before(to) {
			out[c.key] = append(out[c.key], c)
		}
	}
	return out
}

// writers names the field managers whose entries an update changed (the managers that wrote it).
func writers(o, n []metav1.ManagedFieldsEntry) string {
	var out []string
	for _, e := range n {
		changed := true
		for _, p := range o {
			if p.Manager == e.Manager && p.Operation == e.Operation && p.Subresource == e.Subresource {
				changed = !reflect.DeepEqual(p, e)
				break
			}
		}
		if changed {
			out = append(out, e.Manager)
		}
	}
	return strings.Join(out, ",")
}

// metaDiff names the metadata an update changed that a manager writes: finalizers, labels,
// annotations, owner references.
func metaDiff(o, n metav1.ObjectMeta) []string {
	var out []string
	if !slices.Equal(o.Finalizers, n.Finalizers) {
		out = append(out, fmt.Sprintf("finalizers %v", n.Finalizers))
	}
	if !reflect.DeepEqual(o.Labels, n.Labels) {
		out = append(out, "labels")
	}
	if !reflect.DeepEqual(o.Annotations, n.Annotations) {
		out = append(out, "annotations")
	}
	if !reflect.DeepEqual(o.OwnerReferences, n.OwnerReferences) {
		out = append(out, "ownerReferences")
	}
	return out
}

// statusDiff names what changed between two MCA statuses: each condition by type with its old and
// new status and reason, config references' desired and last applied versions, other fields by name.
func statusDiff(o, n addonv1alpha1.ManagedClusterAddOnStatus) []string {
	var out []string
	types := map[string]bool{}
	for _, c := range append(slices.Clone(o.Conditions), n.Conditions...) {
		types[c.Type] = true
	}
	sorted := make([]string, 0, len(types))
	for t := range types {
		sorted = append(sorted, t)
	}
	sort.Strings(sorted)
	show := func(c *metav1.Condition) string {
		if c == nil {
			return "-"
		}
		return string(c.Status) + "/" + c.Reason
	}
	for _, t := range sorted {
		oc, nc := findCondition(o.Conditions, t), findCondition(n.Conditions, t)
		switch {
		case show(oc) != show(nc):
			out = append(out, fmt.Sprintf("%s %s→%s", t, show(oc), show(nc)))
		case oc != nil && nc != nil && oc.Message != nc.Message:
			out = append(out, fmt.Sprintf("%s message %q", t, nc.Message))
		case oc != nil && nc != nil && oc.ObservedGeneration != nc.ObservedGeneration:
			out = append(out, t+" observedGeneration")
		}
	}
	if !reflect.DeepEqual(o.ConfigReferences, n.ConfigReferences) {
		desired, applied := false, false
		for i := range max(len(o.ConfigReferences), len(n.ConfigReferences)) {
			if i >= len(o.ConfigReferences) || i >= len(n.ConfigReferences) {
				desired = true
				continue
			}
			a, b := o.ConfigReferences[i], n.ConfigReferences[i]
			desired = desired || !reflect.DeepEqual(a.DesiredConfig, b.DesiredConfig) || a.ConfigReferent != b.ConfigReferent
			applied = applied || !reflect.DeepEqual(a.LastAppliedConfig, b.LastAppliedConfig)
		}
		switch {
		case desired && applied:
			out = append(out, "configReferences desired+lastApplied")
		case desired:
			out = append(out, "configReferences desired")
		case applied:
			out = append(out, "configReferences lastApplied")
		default:
			out = append(out, "configReferences")
		}
	}
	// The rest, field by field, through their JSON names.
	oj, nj := fieldsOf(o), fieldsOf(n)
	var rest []string
	for k := range nj {
		if k != "conditions" && k != "configReferences" && !reflect.DeepEqual(oj[k], nj[k]) {
			rest = append(rest, k)
		}
	}
	for k := range oj {
		if _, ok := nj[k]; !ok && k != "conditions" && k != "configReferences" {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

func fieldsOf(s addonv1alpha1.ManagedClusterAddOnStatus) map[string]any {
	b, _ := json.Marshal(s)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}
