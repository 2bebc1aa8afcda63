// Package release tests how users get addonops' binaries: `make install` into a GOBIN, and
// `make release` (hack/release.sh), whose archives, checksums, controller image archives and
// rendered manifests are what a user downloads. It has no code outside its tests.
package release
