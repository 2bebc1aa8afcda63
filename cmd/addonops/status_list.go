package main

// `addonops status` without ADDON: every ClusterManagementAddOn on the hub, one line each.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/ocmkinds"
	"github.com/addonops/addonops/internal/rolloutview"
)

// listStatus prints every add-on on the hub once.
func listStatus(ctx context.Context, prog string, o statusOptions, hub *hubReader, stdout, stderr io.Writer) int {
	l, err := hub.readAll(ctx, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "%s status: %v\n", prog, err)
		return exitError
	}
	var out []byte
	switch o.output {
	case "json":
		if out, err = json.MarshalIndent(l, "", "  "); err == nil {
			out = append(out, '\n')
		}
	case "yaml":
		out, err = yaml.Marshal(l)
	default:
		var b strings.Builder
		err = rolloutview.RenderList(&b, l, o.output == "wide")
		out = []byte(b.String())
	}
	if err == nil {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s status: writing output: %v\n", prog, err)
		return exitError
	}
	return exitOK
}

// readAll sums up every add-on on the hub. It makes three lists whatever the size of the fleet:
// the ClusterManagementAddOns, every ManagedClusterAddOn and every PlacementDecision (both paged),
// and no request per add-on or per cluster; the configs' base names are not looked up (the list
// shows no config).
func (h *hubReader) readAll(ctx context.Context, now time.Time) (rolloutview.List, error) {
	cmas, err := h.Addon.AddonV1alpha1().ClusterManagementAddOns().List(ctx, metav1.ListOptions{})
	if err != nil {
		if missing := missingKinds(err, h.Discovery, h.Host, ocmkinds.Status); missing != nil {
			return rolloutview.List{}, missing
		}
		return rolloutview.List{}, fmt.Errorf("listing ClusterManagementAddOns: %w", err)
	}
	mcas := map[string][]*addonv1alpha1.ManagedClusterAddOn{} // by add-on
	err = pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return h.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll).List(ctx, opts)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		m := obj.(*addonv1alpha1.ManagedClusterAddOn)
		mcas[m.Name] = append(mcas[m.Name], m)
		return nil
	})
	if err != nil {
		return rolloutview.List{}, fmt.Errorf("listing ManagedClusterAddOns: %w", err)
	}
	// Clusters by "<namespace>/<placement>"; nil when the decisions cannot be read (the view then
	// relies on the controller's counts alone).
	var clusters map[string][]string
	decisions := map[string][]string{}
	err = pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return h.Cluster.ClusterV1beta1().PlacementDecisions(metav1.NamespaceAll).List(ctx, opts)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		d := obj.(*clusterv1beta1.PlacementDecision)
		placement := d.Labels[clusterv1beta1.PlacementLabel]
		if placement == "" {
			return nil
		}
		key := d.Namespace + "/" + placement
		for _, c := range d.Status.Decisions {
			decisions[key] = append(decisions[key], c.ClusterName)
		}
		return nil
	})
	if err == nil {
		clusters = decisions
	}
	var l rolloutview.List
	for i := range cmas.Items {
		cma := &cmas.Items[i]
		in := rolloutview.Input{CMA: cma, MCAs: mcas[cma.Name], Clusters: map[string][]string{}, Now: now}
		if clusters != nil {
			for _, p := range cma.Spec.InstallStrategy.Placements {
				key := p.Namespace + "/" + p.Name
				in.Clusters[key] = clusters[key] // a placement without decisions selects nothing
			}
		}
		l.Addons = append(l.Addons, rolloutview.Summarize(rolloutview.Build(in), in))
	}
	slices.SortFunc(l.Addons, func(a, b rolloutview.AddonSummary) int { return strings.Compare(a.Addon, b.Addon) })
	if l.Addons == nil {
		l.Addons = []rolloutview.AddonSummary{}
	}
	return l, nil
}
