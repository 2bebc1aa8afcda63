package verification

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Built-in arguments: the controller gives a template's spec.args of these names the batch's
// values, so a query selects exactly the batch's clusters.
const (
	// ArgClusters is the batch's cluster names as a regular expression alternation
	// ("cluster1|cluster2"), regex-quoted, for a PromQL label matcher: cluster=~"{{args.clusters}}".
	ArgClusters = "clusters"
	// ArgAddon is the add-on's (the ClusterManagementAddOn's) name.
	ArgAddon = "addon"
	// ArgVersion is the version id of the configs the batch runs (history.VersionID).
	ArgVersion = "version"
	// ArgPlacement is the placement, "namespace/name".
	ArgPlacement = "placement"
	// ArgBatch is the batch's number in the placement's rollout of the version (1-based).
	ArgBatch = "batch"
)

var builtinArgNames = map[string]struct{}{ArgClusters: {}, ArgAddon: {}, ArgVersion: {}, ArgPlacement: {}, ArgBatch: {}}

// Batch is what one verification run verifies: a batch of a placement's rollout of a version.
type Batch struct {
	Addon     string `json:"addon"`
	Placement string `json:"placement"`
	Version   string `json:"version"`
	// Index is the batch's number in the placement's rollout of the version (1-based).
	Index int `json:"batch"`
	// Clusters are the batch's clusters, sorted.
	Clusters []string `json:"clusters"`
	// Continuous, when not 0, makes this continuous run number Continuous of the placement's
	// rollout of the version (continuous.go), over the clusters told the version; Index is then 0.
	Continuous int `json:"continuous,omitempty"`
}

// Key identifies the batch: the same add-on, placement, version and clusters are the same run,
// whichever decision asks for it (a continuous run: the same add-on, placement, version and number).
func (b Batch) Key() string {
	if b.Continuous != 0 {
		return b.continuousKey()
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00", b.Addon, b.Placement, b.Version, b.Index)
	for _, c := range b.Clusters {
		fmt.Fprintf(h, "%s\n", c)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// BuiltinArgs are the built-in argument values of the batch.
func (b Batch) BuiltinArgs() map[string]string {
	quoted := make([]string, len(b.Clusters))
	for i, c := range b.Clusters {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return map[string]string{
		ArgClusters:  strings.Join(quoted, "|"),
		ArgAddon:     b.Addon,
		ArgVersion:   b.Version,
		ArgPlacement: b.Placement,
		ArgBatch:     fmt.Sprint(b.Index),
	}
}

// NewBatch returns the batch with its clusters sorted.
func NewBatch(addon, placement, version string, index int, clusters []string) Batch {
	cs := slices.Clone(clusters)
	slices.Sort(cs)
	return Batch{Addon: addon, Placement: placement, Version: version, Index: index, Clusters: cs}
}
