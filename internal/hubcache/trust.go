package hubcache

// Which desired configs the controller may act on. A ManagedClusterAddOn's status, desired configs
// included, is written by the controller and by the cluster's own agent alike (OCM gives the agent
// managedclusteraddons/status patch and update in its namespace), so what it names is the cluster's
// claim (docs/trust-model.md). The deployer, the registration reconciler and the CSR review act only
// on desired configs that the controller or Git decided for the add-on: what the CMA status this
// controller writes lists (its defaults, its install progressions' desired, last applied and last
// known good configs), what the MCA's own spec names (written on the hub, never by the agent), or a
// version the add-on's history (this controller's ConfigMap) recorded.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/spechash"
)

// EventReasonConfigsRefused is the Warning event on an MCA whose status names desired configs the
// controller never decided for it.
const EventReasonConfigsRefused = "DesiredConfigsRefused"

// Authorized reports whether desired config (gr, namespace, name, hash) of mca is one the
// controller or Git decided for its add-on cma (package comment): listed with that spec hash in
// cma's status, or named by mca's spec (whose content the deployer checks against the hash itself).
// Pure: inputs only the hub or this controller writes, and the config in question.
func Authorized(cma *addonv1alpha1.ClusterManagementAddOn, mca *addonv1alpha1.ManagedClusterAddOn, gr configref.GroupResource, namespace, name, hash string) bool {
	if cma == nil || mca == nil || cma.Name != mca.Name || hash == "" {
		return false
	}
	same := func(g addonv1alpha1.ConfigGroupResource, h *addonv1alpha1.ConfigSpecHash) bool {
		return h != nil && g.Group == gr.Group && g.Resource == gr.Resource && h.Namespace == namespace && h.Name == name && h.SpecHash == hash
	}
	for _, r := range cma.Status.DefaultConfigReferences {
		if same(r.ConfigGroupResource, r.DesiredConfig) {
			return true
		}
	}
	for _, ip := range cma.Status.InstallProgressions {
		for _, r := range ip.ConfigReferences {
			if same(r.ConfigGroupResource, r.DesiredConfig) || same(r.ConfigGroupResource, r.LastAppliedConfig) || same(r.ConfigGroupResource, r.LastKnownGoodConfig) {
				return true
			}
		}
	}
	for _, c := range mca.Spec.Configs {
		ns := c.Namespace
		if gr == configref.AddOnTemplates {
			ns = "" // cluster-scoped
		} else if ns == "" {
			ns = mca.Namespace // OCM: an MCA config without namespace is in the MCA's
		}
		if c.Group == gr.Group && c.Resource == gr.Resource && ns == namespace && c.Name == name {
			return true
		}
	}
	return false
}

// RecordedIn reports whether the add-on's version history lists config (gr, namespace, name, hash)
// in any version of any placement.
func RecordedIn(rec *history.Record, gr configref.GroupResource, namespace, name, hash string) bool {
	if rec == nil {
		return false
	}
	for _, p := range rec.Placements {
		for _, v := range p.Versions {
			for _, c := range v.Configs {
				if c.Group == gr.Group && c.Resource == gr.Resource && c.Namespace == namespace && c.Name == name && c.SpecHash == hash {
					return true
				}
			}
		}
	}
	return false
}

// refusal says which of d's configs the controller never decided for mca, "" when it decided all.
func (c *Cache) refusal(mca *addonv1alpha1.ManagedClusterAddOn, d Desired) string {
	cma, err := c.CMAs.Get(mca.Name)
	if err != nil {
		cma = nil
	}
	return c.refusalFor(cma, mca, d)
}

// refusalFor is refusal against a given CMA (nil: none).
func (c *Cache) refusalFor(cma *addonv1alpha1.ClusterManagementAddOn, mca *addonv1alpha1.ManagedClusterAddOn, d Desired) string {
	var rec *history.Record
	recRead := false
	var bad []string
	check := func(cfg *Config) {
		if Authorized(cma, mca, cfg.GroupResource, cfg.Namespace, cfg.Name, cfg.DesiredHash) {
			return
		}
		if !recRead {
			recRead, rec = true, c.historyOf(cma)
		}
		if RecordedIn(rec, cfg.GroupResource, cfg.Namespace, cfg.Name, cfg.DesiredHash) {
			return
		}
		bad = append(bad, fmt.Sprintf("%s (spec hash %s)", cfg.Ref, spechash.Short(cfg.DesiredHash)))
	}
	if d.Template != nil {
		check(d.Template)
	}
	for i := range d.DeploymentConfigs {
		check(&d.DeploymentConfigs[i])
	}
	if len(bad) == 0 {
		return ""
	}
	where := fmt.Sprintf("ClusterManagementAddOn %s", mca.Name)
	if cma == nil {
		where += " (not found)"
	}
	return fmt.Sprintf("status.configReferences of ManagedClusterAddOn %s/%s names desired configs that neither %s's status, the MCA's spec nor the add-on's version history lists: %s; "+
		"the controller acts only on configs it or Git decided for the add-on (a cluster's agent can write this status), so nothing is deployed, bound or signed for them until the rollout writes the desired configs again",
		mca.Namespace, mca.Name, where, strings.Join(bad, ", "))
}

// historyOf returns cma's version history from the cache: the record in the controller's namespace
// that cma owns by UID (history.CheckOwner; anyone who may write a ConfigMap there could otherwise
// vouch for a version), nil when there is none, no CMA, or it cannot be read.
func (c *Cache) historyOf(cma *addonv1alpha1.ClusterManagementAddOn) *history.Record {
	if c.Histories == nil || cma == nil {
		return nil
	}
	cm, err := c.Histories.Get(history.ConfigMapName(cma.Name))
	if err != nil || history.CheckOwner(cm.OwnerReferences, cma.Name, cma.UID) != nil {
		return nil
	}
	rec, err := history.Decode(cm.Data[history.DataKey])
	if err != nil || rec.Addon != cma.Name {
		return nil
	}
	return rec
}

// refusals remembers, per MCA, the refusal last reported (Refuse), so that a cluster repeating one
// lie gets one event.
type refusals struct {
	mu   sync.Mutex
	told map[string]string
}

// cacheLagRetry is how soon a refusal the API server's CMA does not confirm is looked at again:
// the cache shows the MCA's new desired configs before the CMA status that lists them (the rollout
// writes the CMA first, but the two watches deliver independently).
const cacheLagRetry = 200 * time.Millisecond

// Refuse handles desired configs d of mca (cache key key) for a reconciler about to act on them.
// It returns false when d is not refused. When it is, nothing may act on d and it returns true;
// the cache's CMA may lag behind its MCA, so the refusal is checked against the CMA as the API
// server has it: when that one authorizes d, wait says when to look again (the CMA's event is on
// its way); otherwise the refusal stands and the first reconciler to see it reports it through
// tell, once per MCA and refusal message.
func (c *Cache) Refuse(ctx context.Context, key string, mca *addonv1alpha1.ManagedClusterAddOn, d Desired, tell func(msg string)) (refused bool, wait time.Duration, err error) {
	if d.Refused == "" {
		return false, 0, nil
	}
	live, err := c.Clients.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, mca.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return true, 0, fmt.Errorf("reading ClusterManagementAddOn %s to check the desired configs of ManagedClusterAddOn %s: %w", mca.Name, key, err)
	}
	msg := c.refusalFor(live, mca, d)
	if msg == "" {
		return true, cacheLagRetry, nil
	}
	c.refused.mu.Lock()
	report := c.refused.told[key] != msg
	if report {
		if c.refused.told == nil {
			c.refused.told = map[string]string{}
		}
		c.refused.told[key] = msg
	}
	c.refused.mu.Unlock()
	if report && tell != nil {
		tell(msg)
	}
	return true, 0, nil
}
