// Package deploytemplates runs, next to the rollout controller, the reconcilers that make a hub
// without OCM's addon-manager work for template add-ons (controller flag --deploy-templates):
// agentdeploy (ManifestWorks from the AddOnTemplate, paced by the rollout), registration (agent
// registration, CSR approval and signing, hub RoleBindings) and addonhealth (Available). They share
// one hubcache.Cache.
package deploytemplates

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/addonops/addonops/controller/addonhealth"
	"github.com/addonops/addonops/controller/agentdeploy"
	"github.com/addonops/addonops/controller/hubcache"
	"github.com/addonops/addonops/controller/registration"
)

// Options configure the template reconcilers.
type Options struct {
	// Addons is the rollout controller's --addons (controller.AddonsSelf or AddonsAll): the
	// template reconcilers act on the same add-ons.
	Addons string
	// Only restricts them further to these add-on names (tests sharing a hub).
	Only []string
	// Workers per reconciler. Default 4.
	Workers int
	// Resync is the informers' resync period. Default 10m.
	Resync time.Duration
	// ManifestLimit is agentdeploy.Options.ManifestLimit.
	ManifestLimit int
	// SigningCANamespace is registration.Options.SigningCANamespace.
	SigningCANamespace string
	// CARecheck is registration.Options.CARecheck.
	CARecheck time.Duration
}

// Runner is the three reconcilers on one cache.
type Runner struct {
	opts   Options
	cache  *hubcache.Cache
	deploy *agentdeploy.Reconciler
	reg    *registration.Reconciler
	health *addonhealth.Reconciler
	// synced is set once the cache has synced (Synced).
	synced atomic.Bool
}

// New builds the reconcilers for the hub cfg points at.
func New(cfg *rest.Config, opts Options) (*Runner, error) {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	c, err := hubcache.New(cfg, hubcache.Options{Addons: opts.Addons, Only: opts.Only, Resync: opts.Resync})
	if err != nil {
		return nil, fmt.Errorf("template reconcilers: %w", err)
	}
	r := &Runner{opts: opts, cache: c}
	if r.deploy, err = agentdeploy.New(c, agentdeploy.Options{ManifestLimit: opts.ManifestLimit}); err != nil {
		return nil, fmt.Errorf("agentdeploy: %w", err)
	}
	if r.reg, err = registration.New(c, registration.Options{SigningCANamespace: opts.SigningCANamespace, CARecheck: opts.CARecheck}); err != nil {
		return nil, fmt.Errorf("registration: %w", err)
	}
	if r.health, err = addonhealth.New(c); err != nil {
		return nil, fmt.Errorf("addonhealth: %w", err)
	}
	return r, nil
}

// Run starts the cache and the reconcilers and blocks until ctx is done.
func (r *Runner) Run(ctx context.Context) error {
	if err := r.cache.Start(ctx); err != nil && ctx.Err() != nil {
		return nil // stopped before the caches synced: a clean shutdown
	} else if err != nil {
		return fmt.Errorf("template reconcilers: %w", err)
	}
	r.synced.Store(true)
	klog.FromContext(ctx).Info("Template reconcilers running", "workers", r.opts.Workers)
	var wg sync.WaitGroup
	wg.Go(func() { r.deploy.Run(ctx, r.opts.Workers) })
	wg.Go(func() { r.reg.Run(ctx, r.opts.Workers) })
	wg.Go(func() { r.health.Run(ctx, r.opts.Workers) })
	wg.Wait()
	r.cache.Shutdown()
	return nil
}

// Start runs the reconcilers until ctx is done: it makes the Runner a manager.Runnable.
func (r *Runner) Start(ctx context.Context) error { return r.Run(ctx) }

// NeedLeaderElection tells the manager to run the reconcilers only on the leader replica.
func (r *Runner) NeedLeaderElection() bool { return true }

// Synced reports whether the reconcilers' cache has synced (readiness).
func (r *Runner) Synced() bool { return r.synced.Load() }
