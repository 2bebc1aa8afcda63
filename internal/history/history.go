// Package history is an add-on's version history: per install placement, the last config versions
// it rolled out, each with its configs (object names and spec hashes), when its rollout started,
// completed and ended, and how it ended. The controller keeps it in one ConfigMap per add-on (see
// ConfigMapName), owned by the ClusterManagementAddOn, in its own namespace: not in Git, so Argo
// CD and Flux neither apply nor prune it, and not in the CMA, whose status schema has no room for it.
// A version that once completed is a rollback target: changing the placement's configs back to it is
// a rollback at any moment, however long ago it ran.
//
// The record is bounded: at most Limit versions per placement (the newest), and nothing per cluster,
// so its size does not grow with the fleet. The package is pure: the controller decides with
// Advance and writes the result; `addonops history` reads it.
package history

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultLimit is how many versions per placement the history keeps unless told otherwise
// (--history-limit).
const DefaultLimit = 10

// Where the record lives.
const (
	// DataKey is the ConfigMap key holding the record as JSON.
	DataKey = "history.json"
	// AddonLabel on the ConfigMap says whose history it is (AddonLabelValue of the add-on's name):
	// `kubectl get configmaps -A -l addonops.io/history-of=ADDON`.
	AddonLabel = "addonops.io/history-of"
	// AddonAnnotation holds the add-on's full name (a label value is limited to 63 characters).
	AddonAnnotation = "addonops.io/addon"
)

// ConfigMapName is the name of the add-on's history ConfigMap: "addonops-history-<addon>", or,
// for a name too long for that, the name's first characters and a hash of the whole.
func ConfigMapName(addon string) string {
	name := "addonops-history-" + addon
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	return name[:validation.DNS1123SubdomainMaxLength-11] + "-" + shortHash(addon)
}

// AddonLabelValue is the value of AddonLabel for an add-on: its name when that is a valid label
// value, else a hash of it.
func AddonLabelValue(addon string) string {
	if len(validation.IsValidLabelValue(addon)) == 0 {
		return addon
	}
	return "h-" + shortHash(addon)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:10]
}

// Config is one config of a version: the object and the spec hash of its content.
type Config struct {
	Group     string `json:"group,omitempty"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	SpecHash  string `json:"specHash"`
}

// String names the config as kubectl does: "addondeploymentconfigs.addon.open-cluster-management.io
// default/cfg-b".
func (c Config) String() string {
	res := c.Resource
	if c.Group != "" {
		res += "." + c.Group
	}
	if c.Namespace != "" {
		return res + " " + c.Namespace + "/" + c.Name
	}
	return res + " " + c.Name
}

func compareConfigs(a, b Config) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.SpecHash, b.SpecHash))
}

// Sorted returns configs in the canonical order versions are compared and identified in.
func Sorted(configs []Config) []Config {
	out := slices.Clone(configs)
	slices.SortFunc(out, compareConfigs)
	return out
}

// SameConfigs reports whether two config lists are the same version.
func SameConfigs(a, b []Config) bool { return slices.Equal(Sorted(a), Sorted(b)) }

// VersionID identifies a version by its configs (order does not matter): the first 10 hex digits of
// a SHA-256 over the sorted configs. The CLI computes it from a progression's desired configs to
// name the version it pauses, promotes or aborts; the controller from the same configs.
func VersionID(configs []Config) string {
	h := sha256.New()
	for _, c := range Sorted(configs) {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\n", c.Group, c.Resource, c.Namespace, c.Name, c.SpecHash)
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}

// Result is how a version's rollout ended, or that it has not.
type Result string

const (
	// InProgress: the placement's desired version, not (yet) everywhere.
	InProgress Result = "InProgress"
	// Succeeded: it runs on every cluster of the placement.
	Succeeded Result = "Succeeded"
	// Failed: its rollout stopped on failures (maxFailures) and nothing replaced it yet.
	Failed Result = "Failed"
	// RolledBack: the placement's configs went back to an earlier version while this one rolled out
	// or ran.
	RolledBack Result = "RolledBack"
	// Aborted: a person (addonops abort) or the automatic abort policy stopped it and returned its
	// clusters to the last known good version.
	Aborted Result = "Aborted"
	// Superseded: a newer version replaced it.
	Superseded Result = "Superseded"
)

// Version is one config version a placement rolled out.
type Version struct {
	ID string `json:"id"`
	// Configs in the order the placement's configs resolve (by group/resource, as OCM lists them).
	Configs []Config `json:"configs"`
	// Kind is Install, Upgrade or Rollback: what rolling it out was.
	Kind string `json:"kind"`
	// Started is when the placement's desired configs became this version.
	Started metav1.Time `json:"started"`
	// Completed is when it first ran on every cluster of the placement; a completed version is a
	// rollback target.
	Completed *metav1.Time `json:"completed,omitempty"`
	// Ended is when it stopped being the placement's desired version, failed or was aborted.
	Ended  *metav1.Time `json:"ended,omitempty"`
	Result Result       `json:"result"`
	// Message says why it ended as it did (the failed clusters, who aborted it).
	Message string `json:"message,omitempty"`
	// Retries counts `addonops retry` restarts of its rollout.
	Retries int `json:"retries,omitempty"`
	// WindowWaits counts the times its rollout started waiting for a maintenance window
	// (WaitingForWindow), and WindowOverridden says a person let it through closed windows
	// (`addonops override-window`).
	WindowWaits      int  `json:"windowWaits,omitempty"`
	WindowOverridden bool `json:"windowOverridden,omitempty"`
	// Notified are the notification triggers (package notify) already sent for this version of
	// the placement, sorted: each is sent once, also across a controller restart.
	Notified []string `json:"notified,omitempty"`
	// Verifications are the verification runs of its rollout's batches (package verification), in
	// batch order.
	Verifications []Verification `json:"verifications,omitempty"`
	// Continuous are the continuous verification runs of its rollout (package verification), in
	// run order; Batch numbers the run, Clusters counts the clusters told the version when its
	// result was recorded (summed over the runs an entry merged, as for Verifications).
	Continuous []Verification `json:"continuous,omitempty"`
}

// Verification is the outcome of one batch's verification run. It names at most MaxSample
// clusters: the record does not grow with the fleet. Covers says which clusters it judged: those
// of the placement that finished the version (their health soak included) by then and were not
// judged by an earlier run.
type Verification struct {
	Batch int `json:"batch"`
	// FirstBatch, when set, is the first of the batches this entry stands for: CompactVerifications
	// merged the runs of batches FirstBatch..Batch, which ended alike.
	FirstBatch int `json:"firstBatch,omitempty"`
	// Clusters counts the batch's clusters; Sample names the first of them, sorted.
	Clusters int      `json:"clusters"`
	Sample   []string `json:"sample,omitempty"`
	// Covers is when the last of the batch's clusters finished.
	Covers metav1.Time `json:"covers"`
	// Template names the template ("AnalysisTemplate default/error-rate").
	Template string `json:"template"`
	// Phase is Successful, Failed or Inconclusive.
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	// Started and Finished bound the run.
	Started  metav1.Time `json:"started"`
	Finished metav1.Time `json:"finished"`
	// Promoted says a person passed an Inconclusive run (`addonops promote`).
	Promoted bool `json:"promoted,omitempty"`
	// Retried says a person asked for the batch to be verified again (`addonops retry` after the
	// run ended): the run no longer judges its clusters.
	Retried bool `json:"retried,omitempty"`
}

// MaxSample bounds the clusters a Verification names.
const MaxSample = 5

// MaxVerifications bounds the runs a version keeps: a rollout one cluster at a time over thousands
// of clusters has thousands of batches, and the record must stay far below a ConfigMap's 1 MiB.
const MaxVerifications = 30

// CompactVerifications keeps at most max runs (in batch order) by merging the oldest neighbours
// that ended alike (same phase, both promoted or not, both retried or not) into one entry that
// covers both: a cluster is judged by the first run whose Covers is not before it finished, so two
// neighbours that judged alike judge as one. Runs that ended differently are never merged, so the
// bound holds only as far as phases alternate.
func CompactVerifications(vs []Verification, max int) []Verification {
	out := slices.Clone(vs)
	for len(out) > max {
		merged := false
		for i := 0; i+1 < len(out); i++ {
			a, b := out[i], out[i+1]
			if a.Phase != b.Phase || a.Promoted != b.Promoted || a.Retried != b.Retried {
				continue
			}
			first := a.Batch
			if a.FirstBatch != 0 {
				first = a.FirstBatch
			}
			b.FirstBatch = first
			b.Clusters += a.Clusters
			b.Sample = a.Sample
			b.Started = a.Started
			out[i+1] = b
			out = slices.Delete(out, i, i+1)
			merged = true
			break
		}
		if !merged {
			break
		}
	}
	return out
}

// Current reports whether v is still the placement's desired version (not ended otherwise than by
// failing or being aborted, which keep it desired until the configs change).
func (v Version) Current() bool {
	return v.Result == InProgress || v.Result == Succeeded || v.Result == Failed || v.Result == Aborted
}

// Placement is the history of one install placement.
type Placement struct {
	// Placement is "namespace/name".
	Placement string `json:"placement"`
	// Versions, oldest first; the last one is the placement's current desired version.
	Versions []Version `json:"versions"`
	// RetryToken is the last `addonops retry` request the controller acted on (the value of the
	// retry annotation for this placement), so that one request restarts a rollout once.
	RetryToken string `json:"retryToken,omitempty"`
	// RetriedAt is when it acted on it: failures older than this no longer count.
	RetriedAt *metav1.Time `json:"retriedAt,omitempty"`
	// AbortToken is the last abort request acted on (the version ID the abort annotation named).
	AbortToken string `json:"abortToken,omitempty"`
	// WindowOverride is the last window override acted on (the version ID the window-override
	// annotation named), so that its event is recorded once.
	WindowOverride string `json:"windowOverride,omitempty"`
}

// Record is an add-on's history.
type Record struct {
	Addon      string      `json:"addon"`
	Placements []Placement `json:"placements"`

	// Newer is set by Decode when the stored record has a field this code does not know: a newer
	// controller wrote it (a controller rolled back to an older version from Git reads its
	// successor's record). The record is then read for decisions (rollback targets, last known
	// good) but must not be written: Encode would drop what the newer controller recorded.
	Newer string `json:"-"`
}

// Placement returns the history of placement key ("namespace/name"), or nil.
func (r *Record) Placement(key string) *Placement {
	for i := range r.Placements {
		if r.Placements[i].Placement == key {
			return &r.Placements[i]
		}
	}
	return nil
}

// Last returns the placement's current (last) version, or nil.
func (p *Placement) Last() *Version {
	if p == nil || len(p.Versions) == 0 {
		return nil
	}
	return &p.Versions[len(p.Versions)-1]
}

// Find returns the newest version with these configs, or nil.
func (p *Placement) Find(configs []Config) *Version {
	if p == nil {
		return nil
	}
	for i := len(p.Versions) - 1; i >= 0; i-- {
		if SameConfigs(p.Versions[i].Configs, configs) {
			return &p.Versions[i]
		}
	}
	return nil
}

// LastKnownGood returns the newest completed version other than the current one (the version an
// abort returns to), or nil.
func (p *Placement) LastKnownGood() *Version {
	if p == nil {
		return nil
	}
	cur := p.Last()
	for i := len(p.Versions) - 1; i >= 0; i-- {
		v := &p.Versions[i]
		if v.Completed != nil && (cur == nil || !SameConfigs(v.Configs, cur.Configs)) {
			return v
		}
	}
	return nil
}

// Completed reports whether configs are a version that ran on every cluster of the placement: a
// rollback target.
func (p *Placement) Completed(configs []Config) bool {
	if p == nil {
		return false
	}
	for _, v := range p.Versions {
		if v.Completed != nil && SameConfigs(v.Configs, configs) {
			return true
		}
	}
	return false
}

// Encode returns the record as stored in the ConfigMap.
func (r *Record) Encode() (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding the version history of %s: %w", r.Addon, err)
	}
	return string(b), nil
}

// Decode reads a stored record. A record that does not parse is an error naming the ConfigMap:
// the controller reports it and starts a new record rather than guessing. A record that parses but
// has fields this code does not know decodes with the known ones and Newer naming the first
// unknown one.
func Decode(data string) (*Record, error) {
	var r Record
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&r)
	if err == nil {
		return &r, nil
	}
	// encoding/json reports an unknown field only as this message (no error type).
	field, unknown := strings.CutPrefix(err.Error(), "json: unknown field ")
	if unknown {
		var lax Record
		if err := json.Unmarshal([]byte(data), &lax); err == nil {
			lax.Newer = field
			return &lax, nil
		}
	}
	return nil, fmt.Errorf("the version history is not valid JSON of the expected form: %w", err)
}
