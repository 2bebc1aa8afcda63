// Package addonrollout holds the rollout half of the controller: the reconcilers that install an
// add-on's ManagedClusterAddOns (Install), roll its config versions out placement by placement
// (Rollout), track each cluster's progress and health (Progress) and delete superseded config
// versions (Collector), all on one View of the hub cache. The decisions they act on are pure
// functions in package rolloutplan; this package reads the hub, calls them and writes the result.
//
// Files by concern: the view (addonview.go, held.go), install.go, rollout.go with history.go,
// references.go and undecodable.go, progress.go, configgc.go and collector.go, pacing.go.
package addonrollout
