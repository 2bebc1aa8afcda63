package main

// `addonops snapshot` and `addonops plan` (package planner).

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/planner"
)

// collectSnapshot reads the hub named by the connection flags.
func (c *cli) collectSnapshot(ctx context.Context, historyNamespace string) (*planner.Snapshot, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the hub's kubeconfig: %w", err)
	}
	cfg.UserAgent = fieldManager
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the discovery client: %w", err)
	}
	s, err := planner.Collect(ctx, planner.CollectOptions{Client: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		HistoryNamespace: historyNamespace, Server: cfg.Host, Now: time.Now()})
	if err != nil {
		return nil, fmt.Errorf("%w (is the hub reachable and are OCM's CRDs installed? check the kubeconfig with 'kubectl get clustermanagementaddons')", err)
	}
	return s, nil
}

func (c *cli) snapshotCommand() *cobra.Command {
	var output, historyNamespace string
	cmd := &cobra.Command{
		Use:     "snapshot [-o FILE] [--history-namespace NS]",
		GroupID: groupRollout,
		Short:   "Write the hub state a plan needs to a file, for planning without hub credentials",
		Long: `Reads from the hub what 'plan' needs (ClusterManagementAddOns, ManagedClusterAddOns, Placements and
their PlacementDecisions, ManagedClusters' labels and annotations, the version history ConfigMaps,
the add-ons' ManifestWorks without their manifests, and the config objects the add-ons reference)
and writes it as one versioned YAML document (apiVersion addonops.io/v1alpha1, kind HubSnapshot)
with the time it was read. It holds no Secret. 'plan --snapshot FILE' plans against it.
Exit codes: 0 written, 3 error (the hub cannot be read, the file cannot be written).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := c.collectSnapshot(cmd.Context(), historyNamespace)
			if err != nil {
				return err
			}
			for _, p := range s.Problems {
				fmt.Fprintln(c.stderr, "warning:", p)
			}
			b, err := s.Marshal()
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				_, err = c.stdout.Write(b)
				return err
			}
			if err := os.WriteFile(output, b, 0o600); err != nil {
				return fmt.Errorf("writing the snapshot: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "-", "the file to write (- for standard output)")
	cmd.Flags().StringVar(&historyNamespace, "history-namespace", defaultHistoryNamespace, "the controller's --history-namespace, where it keeps the version histories")
	return cmd
}

func (c *cli) planCommand() *cobra.Command {
	var file, snapshot, output, historyNamespace, addons, diffs string
	var historyLimit int
	var prune bool
	var maxAge time.Duration
	cmd := &cobra.Command{
		Use:     "plan -f RENDERED.yaml|- [--snapshot FILE] [--prune] [--diffs full|size] [-o text|markdown|json]",
		GroupID: groupRollout,
		Short:   "Show what applying rendered manifests will do to the fleet, batch by batch",
		Long: `Applies the rendered manifests of a change (kustomize build output, -f FILE or - for standard input)
to the hub state in memory (a snapshot written by 'snapshot', or the hub itself) and runs the
controller's own decisions on it as if every cluster told a version applied it and became healthy.
It lists per add-on and placement the change (Install, Upgrade, Rollback to which history entry,
Continue, NoOp, Removal), the version ids from -> to, the changed configs with a diff of their
content, the gating canary and its state, the batches in order, clusters already on the target or
that cannot be configured, and warnings (paused, failed clusters, an abort in force, a rollout that
does not complete, batches a maintenance window holds, a config still in use that the manifests
leave out). An add-on addonops manages that the manifests lack is left as is, or with --prune (when
the GitOps tool prunes) planned as a removal: which clusters lose the agent, all at once.
Formats: text (default), markdown (a pull-request comment), json (docs/reference/plan-schema.md);
--diffs size shows each diff as its number of lines.
The manifests are checked first, with the rules of the KRM functions and the controller (OCM's CRD
schemas, rollout strategies, canary and maintenance window annotations, AddOnTemplates, config
references to configs neither in the manifests nor on the hub): each problem names the object and
the field, and nothing is planned.
Exit codes: 0 the plan was taken (read its warnings), 3 error (invalid or unreadable manifests,
unreadable snapshot, unreachable hub).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case planner.FormatText, planner.FormatMarkdown, planner.FormatJSON:
			default:
				return usagef("--output %q: want text, markdown or json", output)
			}
			if diffs != planner.DiffsFull && diffs != planner.DiffsSize {
				return usagef("--diffs %q: want %s (every diff whole) or %s (each diff as its number of lines)", diffs, planner.DiffsFull, planner.DiffsSize)
			}
			if diffs == planner.DiffsSize && output == planner.FormatJSON {
				return usagef("--diffs size is for people (-o text or markdown): the JSON's diff fields hold the diffs whole")
			}
			if file == "" {
				return usagef("-f is required: the rendered manifests (a file, or - for standard input)")
			}
			if addons != hubcache.AddonsSelf && addons != hubcache.AddonsAll {
				return usagef("--addons %q: want %s or %s, as the controller's --addons", addons, hubcache.AddonsSelf, hubcache.AddonsAll)
			}
			var in io.Reader = os.Stdin
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return fmt.Errorf("reading the rendered manifests: %w", err)
				}
				defer f.Close()
				in = f
			}
			objs, err := planner.ReadManifests(in)
			if err != nil {
				return err
			}
			var s *planner.Snapshot
			source := ""
			if snapshot != "" {
				b, err := os.ReadFile(snapshot)
				if err != nil {
					return fmt.Errorf("reading the snapshot: %w", err)
				}
				if s, err = planner.ReadSnapshot(b); err != nil {
					return fmt.Errorf("%s: %w", snapshot, err)
				}
				source = "snapshot " + snapshot
			} else {
				if s, err = c.collectSnapshot(cmd.Context(), historyNamespace); err != nil {
					return err
				}
				source = "hub " + s.Server
			}
			now := time.Now()
			rep, err := planner.Plan(s, objs, planner.Options{Addons: addons, HistoryLimit: historyLimit, Now: now, Source: source, Prune: prune})
			if err != nil {
				return err
			}
			if age := now.Sub(s.TakenAt.Time); snapshot != "" && maxAge > 0 && age > maxAge {
				rep.Warnings = append([]string{fmt.Sprintf("the snapshot is %s old (more than --max-age %s): the hub may have moved on since; take a new one with '%s snapshot'",
					age.Truncate(time.Second), maxAge, c.prog)}, rep.Warnings...)
			}
			if diffs == planner.DiffsSize {
				rep = rep.WithDiffSizes()
			}
			return rep.Write(c.stdout, output)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the rendered manifests of the change (- for standard input)")
	cmd.Flags().StringVar(&diffs, "diffs", planner.DiffsFull, "how diffs are shown: full, or size (each as its number of lines: a change that rewrites many manifests at a glance)")
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "plan against this snapshot ('snapshot -o FILE') instead of the hub")
	cmd.Flags().StringVarP(&output, "output", "o", planner.FormatText, "output format: text, markdown or json")
	cmd.Flags().StringVar(&historyNamespace, "history-namespace", defaultHistoryNamespace, "without --snapshot: the controller's --history-namespace")
	cmd.Flags().StringVar(&addons, "addons", hubcache.AddonsSelf, "the controller's --addons: which add-ons it manages (self or all)")
	cmd.Flags().IntVar(&historyLimit, "history-limit", 0, "the controller's --history-limit (0: its default)")
	cmd.Flags().BoolVar(&prune, "prune", false, "plan the removal of the add-ons addonops manages that the manifests lack, as the GitOps tool's prune deletes them (without it they are left as is)")
	cmd.Flags().DurationVar(&maxAge, "max-age", time.Hour, "warn when the snapshot is older than this (0: never)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]cobra.Completion{"text", "markdown", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
