package rolloutplan

import (
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
)

// GenerationLookup returns the metadata.generation of the config a reference points at, as the
// hub cache holds it now; ok is false when the config is not there (deleted, not cached, its kind
// not served or not readable).
type GenerationLookup func(configref.Ref) (generation int64, ok bool)

// WithObservedGenerations returns refs with lastObservedGeneration set to the current
// metadata.generation of the config each reference names (its namespace/name, which is its
// desiredConfig's), and whether anything changed; refs itself is not modified.
//
// It mirrors addon-framework's addonconfig controller (updateConfigSpecHashAndGenerations, run by
// every add-on's hub manager, OCM's template managers included): "update LastObservedGeneration
// for all the configs in status", whatever the rollout says, so a waiting cluster shows generation
// 2 of a config edited in place while its desiredConfig still carries the hash of generation 1;
// references of a group/resource the add-on does not support are left alone (OCM writes 0 for them,
// see the "unsupported config" case of its addon_configs_test.go), and so is a reference whose
// config is not found (a config deleted by the garbage collector or by a person keeps the last
// generation seen). With config-hash names every version is a new object: the reference of a
// renamed config starts from that object's generation (WithDesired resets it; a new object is at
// generation 1), and a rollback to an older name shows the older object's generation.
func WithObservedGenerations(refs []addonv1alpha1.ConfigReference, supported func(configref.GroupResource) bool, generation GenerationLookup) ([]addonv1alpha1.ConfigReference, bool) {
	if generation == nil {
		return refs, false
	}
	var out []addonv1alpha1.ConfigReference
	for i, r := range refs {
		gr := configref.GroupResource{Group: r.Group, Resource: r.Resource}
		if supported != nil && !supported(gr) {
			continue
		}
		g, ok := generation(configref.Ref{GroupResource: gr, Namespace: r.Namespace, Name: r.Name})
		if !ok || g == r.LastObservedGeneration {
			continue
		}
		if out == nil {
			out = make([]addonv1alpha1.ConfigReference, len(refs))
			for j := range refs {
				refs[j].DeepCopyInto(&out[j])
			}
		}
		out[i].LastObservedGeneration = g
	}
	if out == nil {
		return refs, false
	}
	return out, true
}
