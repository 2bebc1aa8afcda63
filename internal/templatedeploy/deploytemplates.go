// Package templatedeploy runs, next to the rollout controller, the reconcilers that make a hub
// without OCM's addon-manager work for template add-ons (controller flag --deploy-templates):
// the Deployer (ManifestWorks from the AddOnTemplate, paced by the rollout), package registration (agent
// registration, CSR approval and signing, hub RoleBindings). They run on the rollout controller's
// hubcache.Cache (controller.Options.DeployTemplates). The add-on's health (Available, package
// addonhealth) is computed and written by the rollout half's progress reconciler, with the rest of
// each cluster's progress: one write where two reconcilers made several.
package templatedeploy

import (
	"fmt"
	"time"

	"github.com/addonops/addonops/internal/hubcache"
	"github.com/addonops/addonops/internal/registration"
)

// Options configure the template reconcilers.
type Options struct {
	// Workers per reconciler. Default 4.
	Workers int
	// ManifestLimit is Options.ManifestLimit.
	ManifestLimit int
	// SigningCANamespace is registration.Options.SigningCANamespace.
	SigningCANamespace string
	// CARecheck is registration.Options.CARecheck.
	CARecheck time.Duration
	// ControllerNamespaces is registration.Options.ControllerNamespaces.
	ControllerNamespaces []string
}

// Register adds the two reconcilers to the hub cache, which runs them next to the rollout
// controller's. The cache must have been built with hubcache.Options.DeployTemplates.
func Register(hub *hubcache.Cache, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if hub.TemplateInformer == nil {
		return fmt.Errorf("template reconcilers: the hub cache was built without DeployTemplates")
	}
	if _, err := NewDeployer(hub, DeployerOptions{ManifestLimit: opts.ManifestLimit}, opts.Workers); err != nil {
		return fmt.Errorf("agentdeploy: %w", err)
	}
	if _, err := registration.New(hub, registration.Options{SigningCANamespace: opts.SigningCANamespace, CARecheck: opts.CARecheck, ControllerNamespaces: opts.ControllerNamespaces}, opts.Workers); err != nil {
		return fmt.Errorf("registration: %w", err)
	}
	return nil
}
