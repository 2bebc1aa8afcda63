// Command addonops-controller runs addonops' hub controller: it installs ManagedClusterAddOns from
// placements and rolls add-on config changes out with OCM's rollout strategies and canary
// placements. See package github.com/addonops/addonops/controller.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/addonops/addonops/controller"
	"github.com/addonops/addonops/controller/deploytemplates"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "addonops-controller:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("addonops-controller", flag.ContinueOnError)
	var opts controller.Options
	kubeconfig := fs.String("kubeconfig", "", "path to the hub's kubeconfig; empty: in-cluster configuration")
	qps := fs.Float64("kube-api-qps", 200, "client-side requests per second to the hub API server")
	burst := fs.Int("kube-api-burst", 400, "client-side request burst to the hub API server")
	fs.StringVar(&opts.Addons, "addons", controller.AddonsSelf, `which ClusterManagementAddOns to manage: "self" (annotated addon.open-cluster-management.io/lifecycle, except "addon-manager": the ones OCM's addon-manager leaves alone) or "all" (a hub without OCM's addon-manager)`)
	fs.IntVar(&opts.Workers, "workers", 4, "concurrent ManagedClusterAddOn progress reconciles")
	fs.IntVar(&opts.WriteParallelism, "write-parallelism", 16, "concurrent status writes of one rollout decision")
	fs.DurationVar(&opts.Resync, "resync", 0, "informer resync period: everything is reconciled again this often (default 10m)")
	fs.DurationVar(&opts.Coalesce, "coalesce", 0, "delay that merges bursts of events into one rollout decision (default 250ms)")
	deployTemplates := fs.Bool("deploy-templates", false, "deploy template add-ons (AddOnTemplate) of the managed CMAs ourselves: ManifestWorks paced by the rollout, agent registration (CSR approval and signing, hub RoleBindings) and the Available condition; for hubs without OCM's addon-manager (leave off where it runs: it deploys them)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file until the controller stops (for benchmarks)")
	klog.InitFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if err := opts.Complete(); err != nil {
		return err
	}

	var cfg *rest.Config
	var err error
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return fmt.Errorf("loading the hub configuration (set --kubeconfig outside a cluster): %w", err)
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	cfg.UserAgent = "addonops-controller"

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	c, err := controller.New(cfg, opts)
	if err != nil {
		return err
	}
	if !*deployTemplates {
		return c.Run(ctx)
	}
	templates, err := deploytemplates.New(cfg, deploytemplates.Options{Addons: opts.Addons, Workers: opts.Workers, Resync: opts.Resync})
	if err != nil {
		return err
	}
	// Both run until the signal; if one stops early (caches that never sync), so does the other.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- c.Run(ctx) }()
	go func() { errs <- templates.Run(ctx) }()
	first := <-errs
	cancel()
	return errors.Join(first, <-errs)
}
