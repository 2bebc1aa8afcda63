package rolloutview

// The views of `addonops status` besides the default one: every add-on on the hub, one line each,
// and one add-on cluster by cluster (--clusters, -o wide).

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/addonstatus"
)

// AddonSummary is one add-on in the list of every add-on on the hub.
type AddonSummary struct {
	Addon           string `json:"addon"`
	ManagedBy       string `json:"managedBy"`
	InstallStrategy string `json:"installStrategy"`
	// Placements counts the install placements (0 under the Manual install strategy).
	Placements int `json:"placements"`
	// Clusters counts the clusters done and in all: summed over the install placements (the
	// controller's counts, else counted from the ManagedClusterAddOns), or under the Manual
	// install strategy the add-on's ManagedClusterAddOns, done when they run their configs. Nil
	// when unknown.
	Clusters *ClusterCount `json:"clusters,omitempty"`
	// Health is the add-on's verdict (Healthy, Progressing, Suspended, Degraded), as in the full
	// view and the Argo CD and Flux checks.
	Health Verdict `json:"health"`
	Note   string  `json:"note,omitempty"`
}

// ClusterCount is clusters done out of a total.
type ClusterCount struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// List is every add-on on the hub, by name.
type List struct {
	Addons []AddonSummary `json:"addons"`
}

// Summarize sums up an add-on's view in one line; in is what the view was built from (for the
// ManagedClusterAddOns of an add-on without install placements).
func Summarize(v View, in Input) AddonSummary {
	s := AddonSummary{Addon: v.Addon, ManagedBy: v.ManagedBy, InstallStrategy: v.InstallStrategy, Placements: len(v.Placements), Health: v.Health, Note: v.Note}
	if in.CMA != nil && in.CMA.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyPlacements {
		n := ClusterCount{}
		for _, m := range in.MCAs {
			if m.Name != v.Addon {
				continue
			}
			n.Total++
			if st, _ := clusterState(m, 0, in.Now); st == StateDone {
				n.Done++
			}
		}
		s.Clusters = &n
		return s
	}
	n := ClusterCount{}
	for _, p := range v.Placements {
		if p.Progress.Source == "" {
			return s // one placement's clusters are unknown: so is the sum
		}
		n.Done += p.Progress.Done
		n.Total += p.Progress.Total
	}
	s.Clusters = &n
	return s
}

// unmanagedListNote explains the add-ons whose MANAGED-BY is addon-manager.
var unmanagedListNote = fmt.Sprintf("%s: the ClusterManagementAddOn is not annotated %s (or says %q), so OCM's addon-manager rolls it out, "+
	"unless addonops-controller runs with --addons=all (this command cannot see the controller's flags). For addonops to manage one: "+
	"kubectl annotate clustermanagementaddon NAME %s=%s --overwrite, or run addonops-controller with --addons=all.",
	addonstatus.ManagedByAddonManager, addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue,
	addonv1alpha1.AddonLifecycleAnnotationKey, addonv1alpha1.AddonLifecycleSelfManageAnnotationValue)

// RenderList writes the list of add-ons as a table, like `clusteradm get addon`; wide adds the
// install strategy and the verdict's message.
func RenderList(w io.Writer, l List, wide bool) error {
	t := table{}
	head := []string{"NAME", "MANAGED-BY", "PLACEMENTS", "CLUSTERS", "STATE"}
	if wide {
		head = append(head, "STRATEGY", "MESSAGE")
	}
	t.row(head...)
	unmanaged := false
	for _, a := range l.Addons {
		clusters := "-"
		if a.Clusters != nil {
			clusters = fmt.Sprintf("%d/%d", a.Clusters.Done, a.Clusters.Total)
		}
		row := []string{a.Addon, a.ManagedBy, strconv.Itoa(a.Placements), clusters, string(a.Health.Health)}
		if wide {
			row = append(row, a.InstallStrategy, a.Health.Message)
		}
		t.row(row...)
		unmanaged = unmanaged || a.ManagedBy != addonstatus.ManagedByAddonops
	}
	var b strings.Builder
	if len(l.Addons) == 0 {
		b.WriteString("No ClusterManagementAddOns on this hub.\n")
	} else {
		t.write(&b)
	}
	if unmanaged {
		fmt.Fprintf(&b, "\n%s\n", unmanagedListNote)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RenderClusters writes the add-on cluster by cluster (--clusters, -o wide): a line per placement
// with its verdict, clusters done and version ids, then a line per cluster with its placement,
// the configs it is told to run and last applied (by object name), its state and reason, how long
// it has been in it (SINCE) and how long ago it last completed a change (COMPLETED; "-" when not
// known). now dates the ages. Every cluster is listed, one line each, so the output can be
// filtered (grep, awk) at any fleet size.
func RenderClusters(w io.Writer, v View, now time.Time) error {
	var b strings.Builder
	header(&b, v)
	if len(v.Placements) == 0 {
		if v.Health.Message != "" {
			fmt.Fprintf(&b, "  %s\n", v.Health.Message)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n")
	pt := table{}
	pt.row("PLACEMENT", "STATE", "REASON", "SINCE", "CLUSTERS", "DESIRED", "LAST-APPLIED", "LAST-KNOWN-GOOD")
	for _, p := range v.Placements {
		clusters := "-"
		if p.Progress.Source != "" {
			clusters = fmt.Sprintf("%d/%d", p.Progress.Done, p.Progress.Total)
		}
		since := "-"
		if p.Since != nil && !p.Since.IsZero() {
			since = age(now.Sub(p.Since.Time))
		}
		pt.row(p.Key(), string(p.Health.Health), orDash(p.Reason), since, clusters, orDash(p.DesiredVersion), orDash(p.LastAppliedVersion), orDash(p.LastKnownGoodVersion))
	}
	pt.write(&b)

	b.WriteString("\n")
	ct := table{}
	ct.row("CLUSTER", "PLACEMENT", "DESIRED", "RUNNING", "STATE", "REASON", "SINCE", "COMPLETED", "MESSAGE")
	n := 0
	for _, p := range v.Placements {
		for _, c := range p.Clusters {
			n++
			since, completed := "-", "-"
			if c.Since != nil {
				since = age(now.Sub(c.Since.Time))
			}
			if c.Completed != nil {
				completed = age(now.Sub(c.Completed.Time))
			}
			msg := ""
			if c.State != StateDone {
				msg = c.Message
			}
			ct.row(c.Cluster, p.Key(), shortNames(c.Desired), shortNames(c.Running), c.State, orDash(c.Reason), since, completed, msg)
		}
	}
	if n == 0 {
		b.WriteString("No cluster is known: the placements' decisions could not be read or select none.\n")
	} else {
		ct.write(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shortNames lists configs by object name only ("cfg-b"; several joined by ","), "-" for none.
func shortNames(cs []ConfigName) string {
	if len(cs) == 0 {
		return "-"
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ",")
}

// table lays out rows in columns two spaces apart, like kubectl get; the last column is not padded.
type table struct{ rows [][]string }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(b *strings.Builder) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			if i == len(r)-1 {
				line.WriteString(c)
				break
			}
			fmt.Fprintf(&line, "%-*s  ", widths[i], c)
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}
