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
	"fmt"
	"strings"
	"sync"
	"time"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/spechash"
)

// EventReasonConfigsRefused is the Warning event on an MCA whose status names desired configs the
// controller never decided for it.
const EventReasonConfigsRefused = "DesiredConfigsRefused"

// RefusalGrace is how long desired configs must stay unauthorized before a refusal is reported:
// the rollout writes the CMA status before the MCAs, but the two watches deliver independently, so
// the cache may show an MCA's new desired configs a moment before the CMA status that lists them.
const RefusalGrace = 2 * time.Second

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
	var rec *history.Record
	recRead := false
	var bad []string
	check := func(cfg *Config) {
		if Authorized(cma, mca, cfg.GroupResource, cfg.Namespace, cfg.Name, cfg.DesiredHash) {
			return
		}
		if !recRead {
			recRead, rec = true, c.historyOf(mca.Name)
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

// historyOf returns the add-on's version history from the cache, nil when none is kept or it
// cannot be read.
func (c *Cache) historyOf(addon string) *history.Record {
	if c.Histories == nil {
		return nil
	}
	cm, err := c.Histories.Get(history.ConfigMapName(addon))
	if err != nil {
		return nil
	}
	rec, err := history.Decode(cm.Data[history.DataKey])
	if err != nil || rec.Addon != addon {
		return nil
	}
	return rec
}

// refusals remembers, per MCA, since when its desired configs were seen refused and whether that
// refusal was reported (Refuse).
type refusals struct {
	mu    sync.Mutex
	since map[string]refusal
}

type refusal struct {
	first time.Time
	told  string // the refusal last reported, "" when none was
}

// Refuse handles desired configs d of the MCA of key for a reconciler about to act on them. When
// they are not refused it returns false (and forgets the key). When they are, nothing may act on
// them: it returns true, with a wait while the refusal is younger than RefusalGrace (the cache's
// CMA may lag behind its MCA: look again then), else 0 — and the first reconciler to see a refusal
// stand reports it through tell, once per refusal message.
func (c *Cache) Refuse(key string, d Desired, now time.Time, tell func(msg string)) (refused bool, wait time.Duration) {
	c.refused.mu.Lock()
	if d.Refused == "" {
		delete(c.refused.since, key)
		c.refused.mu.Unlock()
		return false, 0
	}
	if c.refused.since == nil {
		c.refused.since = map[string]refusal{}
	}
	r, ok := c.refused.since[key]
	if !ok {
		r.first = now
		c.refused.since[key] = r
	}
	if wait := r.first.Add(RefusalGrace).Sub(now); wait > 0 {
		c.refused.mu.Unlock()
		return true, wait
	}
	report := r.told != d.Refused
	r.told = d.Refused
	c.refused.since[key] = r
	c.refused.mu.Unlock()
	if report && tell != nil {
		tell(d.Refused)
	}
	return true, 0
}
