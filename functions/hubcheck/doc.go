// Package hubcheck holds the differential test of the build-time functions against a real API
// server with OCM's CRDs: what passes rollout-strategy, addon-template validate and config-hash is
// exactly what kube-apiserver accepts (with kubectl's strict field validation), and the name
// config-hash gives a config is the spec hash OCM computes from what the server stores, defaults
// included. It has no code outside its tests.
package hubcheck
