package rolloutplan

// Config references: resolution, an MCA's own configs, and what cannot be used.

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
	"github.com/addonops/addonops/internal/configref"
)

// defaultRefs are the CMA's default configs (v1alpha1 supportedConfigs[].defaultConfig).
func defaultRefs(cma *addonv1alpha1.ClusterManagementAddOn) []configref.Ref {
	var refs []configref.Ref
	for _, sc := range cma.Spec.SupportedConfigs {
		if sc.DefaultConfig == nil {
			continue
		}
		refs = append(refs, configref.Ref{
			GroupResource: configref.GroupResource{Group: sc.Group, Resource: sc.Resource},
			Namespace:     sc.DefaultConfig.Namespace, Name: sc.DefaultConfig.Name,
		})
	}
	return configref.Merge(refs)
}

func addOnConfigRefs(cfgs []addonv1alpha1.AddOnConfig) []configref.Ref {
	refs := make([]configref.Ref, 0, len(cfgs))
	for _, c := range cfgs {
		refs = append(refs, configref.Ref{
			GroupResource: configref.GroupResource{Group: c.Group, Resource: c.Resource},
			Namespace:     c.Namespace, Name: c.Name,
		})
	}
	return refs
}

func refsOf(cfgs []Config) []configref.Ref {
	refs := make([]configref.Ref, len(cfgs))
	for i, c := range cfgs {
		refs[i] = c.Ref
	}
	return refs
}

// blocked says why an MCA cannot be configured: the reason and message of its Configured=False.
// One that does not decode (reason Undecodable) is never written: only its metadata is known.
// desired, when set, is what the MCA is told to run all the same (unsupportedTarget), and
// progressing its Progressing condition then.
type blocked struct {
	reason, message string
	desired         []Config
	progressing     *metav1.Condition
}

// mcaTarget is what an MCA runs when its placement runs base: base overridden, per group/resource,
// by the MCA's own spec.configs (highest precedence). Group/resources the MCA names get the current
// hash of its configs; the others keep base's hashes, which for a canary-gated placement are the
// versions the canary proved. A non-nil blocked says why the MCA cannot be configured: one of its
// configs is of a type the add-on does not support, or cannot be read.
func (d *decider) mcaTarget(base []Config, mca *addonv1alpha1.ManagedClusterAddOn) ([]Config, *blocked) {
	if why := d.undecodable(mca); why != "" {
		return nil, &blocked{reason: addonstatus.ReasonUndecodable, message: why}
	}
	if len(mca.Spec.Configs) == 0 {
		return base, nil
	}
	own := addOnConfigRefs(mca.Spec.Configs)
	overridden := map[configref.GroupResource]bool{}
	var unsupported []configref.GroupResource
	for _, r := range own {
		overridden[r.GroupResource] = true
		if !d.supported.Has(r.GroupResource) && !slices.Contains(unsupported, r.GroupResource) {
			unsupported = append(unsupported, r.GroupResource)
		}
	}
	hashes := map[configref.Ref]string{}
	for _, c := range base {
		hashes[c.Ref] = c.SpecHash
	}
	var out []Config
	var problems []error
	for _, r := range configref.Merge(refsOf(base), own) {
		switch {
		case !overridden[r.GroupResource]:
			out = append(out, Config{Ref: r, SpecHash: hashes[r]})
		case slices.Contains(unsupported, r.GroupResource):
			// Nothing hashes a type the add-on does not support (OCM: addon-framework's addonconfig
			// controller skips it), so its reference is listed with an empty spec hash.
			out = append(out, Config{Ref: r})
		default:
			cfgs, probs := d.res.resolve([]configref.Ref{r})
			out = append(out, cfgs...)
			problems = append(problems, probs...)
		}
	}
	if len(unsupported) > 0 {
		return nil, unsupportedTarget(out, unsupported)
	}
	if len(problems) > 0 {
		return nil, &blocked{reason: configReason(problems, addonstatus.ReasonConfigurationNotFound, addonstatus.ReasonConfigurationForbidden),
			message: "the ManagedClusterAddOn's own config cannot be used: " + joinErrors(problems)}
	}
	return out, nil
}

// unsupportedTarget is the block of an MCA with configs of types the add-on does not support
// (unsupported, in spec order). As in OCM, it is still told to run the rest (desired): the CMA's
// defaults and the placement's configs keep being configured, and the unsupported reference is
// listed in status.configReferences with an empty spec hash (OCM's addon_configs_test.go "Should
// not update unsupported config spec hash"). Its Progressing condition is OCM's
// (addonprogressing: False, ConfigurationUnsupported, naming the first unsupported type), and
// Configured stays False with the same reason, so a deployer honouring Configured (OCM's for
// template add-ons, addonops' own under --deploy-templates) leaves its works alone until the spec
// is fixed: an empty hash can never be deployed.
// The message names the first maxListed types only: an MCA's spec may name any number (the API
// server refuses a condition message over 32 KiB, so naming 500 would make the status unwritable).
func unsupportedTarget(desired []Config, unsupported []configref.GroupResource) *blocked {
	msgs := make([]string, 0, min(len(unsupported), maxListed)+1)
	for _, gr := range unsupported[:min(len(unsupported), maxListed)] {
		msgs = append(msgs, unsupportedMessage(gr))
	}
	if more := len(unsupported) - maxListed; more > 0 {
		msgs = append(msgs, fmt.Sprintf("and %d more unsupported types", more))
	}
	return &blocked{
		reason: addonstatus.ReasonConfigurationUnsupported,
		message: strings.Join(msgs, "; ") +
			"; add the type to the ClusterManagementAddOn's spec.supportedConfigs or remove it from the ManagedClusterAddOn's spec.configs",
		desired: desired,
		progressing: &metav1.Condition{Type: addonstatus.ConditionProgressing, Status: metav1.ConditionFalse,
			Reason: addonstatus.ReasonConfigurationUnsupported, Message: unsupportedMessage(unsupported[0])},
	}
}

// unsupportedMessage is OCM's message for a config type an add-on does not support.
func unsupportedMessage(gr configref.GroupResource) string {
	return fmt.Sprintf("Configuration with gvr %s/%s is not supported for this addon", gr.Group, gr.Resource)
}

// block marks an MCA that cannot be configured (Configured=False naming the config); its works
// stay as they are.
func (d *decider) block(ns string, mca *addonv1alpha1.ManagedClusterAddOn, b *blocked) {
	if b.reason == addonstatus.ReasonUndecodable {
		return
	}
	if b.desired != nil {
		if st, changed := BlockedWith(mca, b.desired, b.reason, b.message, *b.progressing, d.in.Now); changed {
			d.updates[ns] = st
		}
		return
	}
	if !IsBlocked(mca, b.reason, b.message) {
		d.updates[ns] = Blocked(mca, b.reason, b.message, d.in.Now)
	}
}

// resolver resolves config references to spec hashes, once per reference per decision.
type resolver struct {
	lookup ConfigLookup
	memo   map[configref.Ref]lookupResult
}

type lookupResult struct {
	hash string
	err  error
}

// resolve returns refs with their hashes (empty for a config that cannot be read, as OCM clears the
// hash of a missing config) and one problem per config that cannot be read.
func (r *resolver) resolve(refs []configref.Ref) ([]Config, []error) {
	out := make([]Config, 0, len(refs))
	var problems []error
	for _, ref := range refs {
		res, ok := r.memo[ref]
		if !ok {
			res.hash, res.err = r.lookup(ref)
			r.memo[ref] = res
		}
		if res.err != nil {
			problems = append(problems, res.err)
			res.hash = ""
		}
		out = append(out, Config{Ref: ref, SpecHash: res.hash})
	}
	return out, problems
}

// configReason is the reason for configs that cannot be read: forbidden when the controller may
// not read one of them (RBAC; the lookup's error wraps the API server's Forbidden), else notFound.
func configReason(problems []error, notFound, forbidden string) string {
	for _, err := range problems {
		if apierrors.IsForbidden(err) {
			return forbidden
		}
	}
	return notFound
}

func joinErrors(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// describe names configs for messages: "addondeploymentconfigs.addon.open-cluster-management.io
// default/cfg-b (3f2a9c1d)".
func describe(cfgs []Config) string {
	if len(cfgs) == 0 {
		return "no configs"
	}
	parts := make([]string, len(cfgs))
	for i, c := range cfgs {
		h := c.SpecHash
		if len(h) > 8 {
			h = h[:8]
		}
		parts[i] = fmt.Sprintf("%s (%s)", c.Ref, h)
	}
	return strings.Join(parts, ", ")
}
