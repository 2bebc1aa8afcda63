package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	"github.com/addonops/addonops/internal/configref"
	"github.com/addonops/addonops/internal/ocmkinds"
	"github.com/addonops/addonops/internal/rolloutview"
	"github.com/addonops/addonops/internal/rolloutwatch"
)

type statusOptions struct {
	watch    bool
	timeout  time.Duration
	interval time.Duration
	output   string
	// clusters: the per-cluster view (also -o wide).
	clusters bool
}

// statusFlags is status's command line (status parses its own flags: see statusCommand). The
// reference docs (docs/reference/cli/status.md, `make docs`) are generated from it too.
func statusFlags(prog string, o *statusOptions) (*pflag.FlagSet, *clientcmd.ClientConfigLoadingRules, *clientcmd.ConfigOverrides) {
	fs := pflag.NewFlagSet(prog+" status", pflag.ContinueOnError)
	fs.BoolVarP(&o.watch, "watch", "w", false, "follow the hub's watch events and redraw on every change until the rollout finishes; exit 0 when it succeeded, 1 when it failed, 2 at --timeout")
	fs.DurationVar(&o.timeout, "timeout", 0, "with --watch: give up after this long (exit 2); 0 waits forever")
	// --interval was the polling period of --watch; kept so that scripts passing it still run.
	fs.DurationVar(&o.interval, "interval", 0, "ignored: --watch follows the hub's watch events")
	_ = fs.MarkDeprecated("interval", "--watch follows the hub's watch events; the flag is ignored")
	fs.StringVarP(&o.output, "output", "o", "", "output format: json, yaml or wide (default: text for people; wide: with ADDON the per-cluster view, like --clusters; without, more columns)")
	fs.BoolVar(&o.clusters, "clusters", false, "with ADDON: one line per cluster (placement, desired and running configs, state, reason, since, completed)")
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file (default $KUBECONFIG or ~/.kube/config)")
	overrides := &clientcmd.ConfigOverrides{}
	clientcmd.BindOverrideFlags(overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	return fs, rules, overrides
}

func runStatus(prog string, args []string, stdout, stderr io.Writer) int {
	var o statusOptions
	fs, rules, overrides := statusFlags(prog, &o)
	fs.SetOutput(stderr)
	// --help goes to stdout, as every other command's (and kubectl's): `status --help | less`.
	usageOut := stderr
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			usageOut = stdout
		}
	}
	fs.Usage = func() {
		fmt.Fprintf(usageOut, "Usage: %[1]s status [ADDON] [flags]\n\nWithout ADDON: every ClusterManagementAddOn on the hub, one line each (who manages it, placements,\n"+
			"clusters done/total, state). With ADDON: the rollout of that ClusterManagementAddOn; with --clusters\n"+
			"(or -o wide) cluster by cluster.\n"+
			"Exit codes: 0 ok (with --watch: rollout succeeded), 1 rollout failed, 2 --timeout passed, 3 error.\n\nFlags:\n%[2]s", prog, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return exitError
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "%s status: want at most one add-on name (the ClusterManagementAddOn), got %d arguments\n", prog, fs.NArg())
		fs.Usage()
		return exitError
	}
	switch {
	case o.output != "" && o.output != "json" && o.output != "yaml" && o.output != "wide":
		fmt.Fprintf(stderr, "%s status: --output %q: want json, yaml or wide\n", prog, o.output)
		return exitError
	case fs.NArg() == 0 && (o.watch || o.clusters):
		fmt.Fprintf(stderr, "%s status: --watch and --clusters need an add-on name (the ClusterManagementAddOn)\n", prog)
		return exitError
	case o.timeout < 0:
		fmt.Fprintf(stderr, "%s status: --timeout must be >= 0\n", prog)
		return exitError
	case o.timeout > 0 && !o.watch:
		fmt.Fprintf(stderr, "%s status: --timeout only makes sense with --watch\n", prog)
		return exitError
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		fmt.Fprintf(stderr, "%s status: loading the hub's kubeconfig: %v\n", prog, err)
		return exitError
	}
	cfg.UserAgent = "addonops-status"
	hub, err := newHubReader(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s status: %v\n", prog, err)
		return exitError
	}
	ctx, stop := signalContext()
	defer stop()
	if fs.NArg() == 0 {
		return listStatus(ctx, prog, o, hub, stdout, stderr)
	}
	return watchStatus(ctx, prog, fs.Arg(0), o, hub, stdout, stderr)
}

// watchStatus prints the add-on's status once, or with --watch until the rollout finishes.
func watchStatus(ctx context.Context, prog, addon string, o statusOptions, hub *hubReader, stdout, stderr io.Writer) int {
	d := &drawer{w: stdout, format: o.output, tty: isTerminal(stdout) && o.watch, clusters: o.clusters || o.output == "wide"}
	if !o.watch {
		in, err := hub.read(ctx, addon)
		if err != nil {
			fmt.Fprintf(stderr, "%s status: %v\n", prog, err)
			return exitError
		}
		in.Now = time.Now()
		if err := d.draw(rolloutview.Build(in), in.Now); err != nil {
			fmt.Fprintf(stderr, "%s status: writing output: %v\n", prog, err)
			return exitError
		}
		return exitOK
	}

	var deadline <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		deadline = t.C
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the informers
	w, err := rolloutwatch.Start(ctx, hub.Hub, addon)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "%s status: interrupted\n", prog)
		} else {
			fmt.Fprintf(stderr, "%s status: %v\n", prog, err)
		}
		return exitError
	}
	tick := time.NewTicker(clockTick)
	defer tick.Stop()
	waiting, lastErr := false, ""
	for {
		in, err := w.Input()
		now := time.Now()
		switch {
		case err == nil:
			in.Now = now
			v := rolloutview.Build(in)
			if v.Done() {
				// The verdict ends the command, so it rests on one direct read: the CMA's event can
				// arrive before the MCAs' on their own watches, and the last frame must name the
				// failed clusters the CMA counts (read CMA first, then MCAs, as without --watch).
				fresh, err := hub.read(ctx, addon)
				if err != nil {
					fmt.Fprintf(stderr, "%s status: %v\n", prog, err)
					return exitError
				}
				fresh.Now = time.Now()
				v = rolloutview.Build(fresh)
			}
			if err := d.draw(v, now); err != nil {
				fmt.Fprintf(stderr, "%s status: writing output: %v\n", prog, err)
				return exitError
			}
			if v.Done() {
				if v.Phase == rolloutview.PhaseSucceeded {
					return exitOK
				}
				fmt.Fprintf(stderr, "%s status: the rollout of %s failed: %s\n", prog, addon, v.Health.Message)
				return exitFailed
			}
		case apierrors.IsNotFound(err):
			// A GitOps sync may not have created it yet: keep waiting.
			if !waiting {
				fmt.Fprintf(stderr, "%s status: %v; waiting for it to appear\n", prog, err)
				waiting = true
			}
		default:
			fmt.Fprintf(stderr, "%s status: %v\n", prog, err)
			return exitError
		}
		if timedOut := waitChange(ctx, w, deadline, tick.C, prog, stderr, &lastErr); timedOut {
			fmt.Fprintf(stderr, "%s status: timed out after %s waiting for the rollout of %s to finish\n", prog, o.timeout, addon)
			return exitTimeout
		}
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "%s status: interrupted\n", prog)
			return exitError
		}
	}
}

// drawer prints views: on a terminal with --watch it redraws the screen; otherwise it prints a
// view only when it differs from the last one, so a log or a pipe gets each change once.
type drawer struct {
	w        io.Writer
	format   string
	tty      bool
	clusters bool // text: the per-cluster view
	last     []byte
	frames   int
}

func (d *drawer) draw(v rolloutview.View, now time.Time) error {
	fingerprint, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !d.tty && bytes.Equal(fingerprint, d.last) {
		return nil
	}
	d.last = fingerprint
	var buf bytes.Buffer
	switch d.format {
	case "json":
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		buf.Write(out)
		buf.WriteByte('\n')
	case "yaml":
		out, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		if d.frames > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(out)
	default:
		if d.tty {
			buf.WriteString("\033[H\033[2J") // home, clear screen
		} else if d.frames > 0 {
			fmt.Fprintf(&buf, "\n--- %s\n", now.Format(time.TimeOnly))
		}
		render := rolloutview.Render
		if d.clusters {
			render = rolloutview.RenderClusters
		}
		if err := render(&buf, v, now); err != nil {
			return err
		}
		if d.tty {
			fmt.Fprintf(&buf, "\n(following the hub's changes, updated %s; Ctrl-C to stop)\n", now.Format(time.TimeOnly))
		}
	}
	d.frames++
	_, err = d.w.Write(buf.Bytes())
	return err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// hubReader reads an add-on's objects from the hub: directly (read, readAll) or through watch
// events (rolloutwatch.Start).
type hubReader struct {
	rolloutwatch.Hub
}

func newHubReader(cfg *rest.Config) (*hubReader, error) {
	hub, err := rolloutwatch.NewHub(cfg, nil)
	if err != nil {
		return nil, err
	}
	return &hubReader{Hub: hub}, nil
}

// read gathers what the view needs: the CMA (a NotFound error if it does not exist), its MCAs,
// the clusters of each install placement, and the base names of the configs it names.
func (h *hubReader) read(ctx context.Context, addon string) (rolloutview.Input, error) {
	cma, err := h.Addon.AddonV1alpha1().ClusterManagementAddOns().Get(ctx, addon, metav1.GetOptions{})
	if err != nil {
		if missing := missingKinds(err, h.Discovery, h.Host, ocmkinds.Status); missing != nil {
			return rolloutview.Input{}, missing
		}
		if apierrors.IsNotFound(err) {
			return rolloutview.Input{}, apierrors.NewNotFound(schema.GroupResource{Group: "addon.open-cluster-management.io", Resource: "clustermanagementaddons"}, addon)
		}
		return rolloutview.Input{}, fmt.Errorf("reading ClusterManagementAddOn %s: %w", addon, err)
	}
	mcas, err := h.Addon.AddonV1alpha1().ManagedClusterAddOns(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", addon).String(),
	})
	if err != nil {
		return rolloutview.Input{}, fmt.Errorf("listing the ManagedClusterAddOns of %s: %w", addon, err)
	}
	in := rolloutview.Input{CMA: cma, Clusters: map[string][]string{}, BaseName: func(r configref.Ref) (string, bool) { return h.BaseName(ctx, r) }}
	for i := range mcas.Items {
		in.MCAs = append(in.MCAs, &mcas.Items[i])
	}
	for _, p := range cma.Spec.InstallStrategy.Placements {
		decisions, err := h.Cluster.ClusterV1beta1().PlacementDecisions(p.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: p.Name}).String(),
		})
		if err != nil {
			continue // clusters unknown: the view then relies on the controller's counts alone
		}
		var clusters []string
		for _, d := range decisions.Items {
			for _, c := range d.Status.Decisions {
				clusters = append(clusters, c.ClusterName)
			}
		}
		in.Clusters[p.Namespace+"/"+p.Name] = clusters
	}
	return in, nil
}
