package main

// What the day-2 commands share: the hub clients, reading the add-on, its install placements and
// desired versions, and writing one annotation.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"

	"github.com/addonops/addonops/internal/canary"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/ocmkinds"
	"github.com/addonops/addonops/internal/operations"
)

// fieldManager names the CLI's writes in the CMA's managedFields, as kubectl's do.
const fieldManager = operations.CLIFieldManager

type cma = addonv1alpha1.ClusterManagementAddOn

// hub is a connection to the hub.
type hub struct {
	addon addonclient.Interface
	kube  kubernetes.Interface
	host  string
}

// hub connects to the hub named by the connection flags.
func (c *cli) hub() (*hub, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the hub's kubeconfig: %w", err)
	}
	cfg.UserAgent = fieldManager
	h := &hub{host: cfg.Host}
	if h.addon, err = addonclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building the add-on client: %w", err)
	}
	if h.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	return h, nil
}

// getCMA reads the add-on, with an error that says what to do when it is not there.
func (h *hub) getCMA(ctx context.Context, addon string) (*cma, error) {
	obj, err := h.addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
	if missing := missingKinds(err, h.kube.Discovery(), h.host, ocmkinds.Day2); missing != nil {
		return nil, missing
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("add-on %q not found: there is no ClusterManagementAddOn %s on the hub %s "+
			"(list them with 'kubectl get clustermanagementaddons')", addon, addon, h.host)
	case err != nil:
		return nil, fmt.Errorf("reading ClusterManagementAddOn %s on the hub %s: %w", addon, h.host, err)
	}
	return obj, nil
}

// editAnnotation reads the add-on, lets decide compute the annotation's new value from it, and
// writes it with a JSON merge patch on metadata.annotations, as `kubectl annotate` does: the other
// fields and their managers (Argo CD's or Flux's server-side apply) keep theirs. The patch carries
// the resourceVersion read, so a concurrent change of the CMA (another person, the controller's
// status) makes the server refuse it, and the edit starts again from the new CMA. It then prints
// what it did and the resulting annotation.
func (c *cli) editAnnotation(ctx context.Context, addon, key string, decide func(*cma) (operations.Edit, error)) error {
	h, err := c.hub()
	if err != nil {
		return err
	}
	a := operations.Annotator{Client: h.addon, FieldManager: fieldManager, Get: h.getCMA}
	obj, edit, changed, err := a.Write(ctx, addon, key, decide)
	if err != nil {
		return err
	}
	fmt.Fprint(c.stdout, operations.Outcome(addon, key, edit, changed))
	// Who applied the annotation before this write (a write that changes it takes it over).
	if managers := gitOpsManagers(obj, key); len(managers) > 0 && changed {
		fmt.Fprintf(c.stderr, "warning: annotation %s of ClusterManagementAddOn %s is also applied by %s (from Git): "+
			"its next sync puts the Git value back; change it in Git to keep it\n", key, addon, strings.Join(managers, ", "))
	}
	return nil
}

// gitOpsManagers returns the field managers, other than the CLI, that own annotation key of obj
// through server-side apply (Argo CD, Flux, kubectl apply --server-side): the ones whose next
// sync resets it.
func gitOpsManagers(obj *cma, key string) []string {
	var out []string
	for _, mf := range obj.ManagedFields {
		if mf.Operation != metav1.ManagedFieldsOperationApply || mf.Manager == fieldManager || mf.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) == nil && fields.Metadata.Annotations["f:"+key] != nil {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// parsePlacement reads a --placement flag.
func parsePlacement(s string) (canary.PlacementKey, error) {
	k, err := canary.ParsePlacementKey(s)
	if err != nil {
		return k, usagef("--placement: %v; name the placement as it appears in the add-on's spec.installStrategy.placements", err)
	}
	return k, nil
}

// optionalPlacement reads a --placement flag that may be left out (nil: every placement).
func optionalPlacement(s string) (*canary.PlacementKey, error) {
	if s == "" {
		return nil, nil
	}
	k, err := parsePlacement(s)
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// desiredVersion returns the configs placement k is rolling out now, as the controller reports
// them in the add-on's status.installProgressions, and their version id (history.VersionID).
func desiredVersion(obj *cma, k canary.PlacementKey) ([]history.Config, string, error) {
	for _, ip := range obj.Status.InstallProgressions {
		if ip.Namespace != k.Namespace || ip.Name != k.Name {
			continue
		}
		var configs []history.Config
		for _, r := range ip.ConfigReferences {
			d := r.DesiredConfig
			if d == nil {
				continue
			}
			c := history.Config{Group: r.Group, Resource: r.Resource, Namespace: d.Namespace, Name: d.Name, SpecHash: d.SpecHash}
			if d.SpecHash == "" {
				return nil, "", fmt.Errorf("placement %s of add-on %s: desired config %s has no spec hash yet "+
					"(the controller could not read it; 'addonops status %s' says why)", k, obj.Name, c, obj.Name)
			}
			configs = append(configs, c)
		}
		if len(configs) == 0 {
			return nil, "", fmt.Errorf("placement %s of add-on %s has no desired configs yet "+
				"(status.installProgressions[].configReferences[].desiredConfig): there is no version to name", k, obj.Name)
		}
		return configs, history.VersionID(configs), nil
	}
	return nil, "", fmt.Errorf("placement %s of add-on %s has no install progression yet: the controller has not reported it "+
		"(does it manage this add-on? 'addonops status %s' shows what it reported)", k, obj.Name, obj.Name)
}

// describeVersion names a version for people: its id and its configs' names.
func describeVersion(id string, configs []history.Config) string {
	return id + " (" + configNames(configs) + ")"
}

// configNames lists the configs' object names, short: "hello-config-7f9c2b, my-adc-1a2b3c".
func configNames(configs []history.Config) string {
	names := make([]string, len(configs))
	for i, c := range history.Sorted(configs) {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// parseMapAnnotation reads one of the map annotations (promote, retry, abort) of obj, refusing one
// that does not parse: the command would otherwise throw away what someone wrote there.
func parseMapAnnotation(obj *cma, key string) (map[canary.PlacementKey]string, error) {
	raw, ok := obj.Annotations[key]
	if !ok {
		return map[canary.PlacementKey]string{}, nil
	}
	m, err := operations.ParseMap(raw)
	if err != nil {
		return nil, fmt.Errorf("annotation %s of ClusterManagementAddOn %s does not parse: %v; fix it, or remove it with "+
			"'kubectl annotate clustermanagementaddon %s %s-', and run the command again", key, obj.Name, err, obj.Name, key)
	}
	return m, nil
}

// addonArg takes the one ADDON argument.
func addonArg(cmd *cobra.Command, args []string) error {
	switch len(args) {
	case 1:
		return nil
	case 0:
		return usagef("want the add-on's name (its ClusterManagementAddOn): %s", cmd.UseLine())
	}
	return usagef("want exactly one add-on name, got %d arguments: %s", len(args), strings.Join(args, " "))
}

// completeAddons completes the first argument with the hub's add-ons.
func (c *cli) completeAddons(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	h, err := c.hub()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := h.addon.AddonV1alpha1().ClusterManagementAddOns().List(cmd.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, a := range list.Items {
		if strings.HasPrefix(a.Name, toComplete) {
			out = append(out, a.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completePlacements completes --placement with the install placements of the add-on named first.
func (c *cli) completePlacements(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	h, err := c.hub()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	obj, err := h.getCMA(cmd.Context(), args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, k := range operations.InstallPlacements(obj) {
		if strings.HasPrefix(k.String(), toComplete) {
			out = append(out, k.String())
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// day2Command is the skeleton of a day-2 command: ADDON, --placement, completion, and exit 3 on
// errors.
func (c *cli) day2Command(use, short, long string, placement *string, runE func(cmd *cobra.Command, addon string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:               use,
		GroupID:           groupDay2,
		Short:             short,
		Long:              long,
		Args:              addonArg,
		ValidArgsFunction: c.completeAddons,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runE(cmd, args[0])
		},
	}
	if placement != nil {
		cmd.Flags().StringVar(placement, "placement", "", "the install placement, as NAMESPACE/NAME")
		_ = cmd.RegisterFlagCompletionFunc("placement", c.completePlacements)
	}
	return cmd
}
