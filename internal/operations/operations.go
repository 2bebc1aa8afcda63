// Package operations reads and writes the day-2 requests a person makes on an add-on's rollout:
// pause, resume, promote, retry, abort and the automatic abort policy. Each is an annotation on
// the ClusterManagementAddOn, so a GitOps user can commit it and the `addonops` CLI writes the same
// annotation; the controller acts on it (package rolloutplan) and records what it did in the
// add-on's version history (package history).
//
//	addonops.io/pause:      "*" (every placement) or "ns/name,ns/name"
//	addonops.io/promote:    {"ns/name": "<version id>"}  passes the canary gate for that version
//	addonops.io/retry:      {"ns/name": "<token>"}       a new token restarts a stopped rollout once
//	addonops.io/abort:      {"ns/name": "<version id>"}  returns that version's clusters to the last known good
//	addonops.io/auto-abort: "true"                       abort by itself when maxFailures is breached
//	addonops.io/window-override: {"ns/name": "<version id>"}  lets that version through closed maintenance windows
//
// Version ids are history.VersionID of a placement's desired configs, as `addonops history` and
// `addonops status` show them; naming the version makes a promote or abort apply to that version
// only, never to one committed after it.
package operations

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/addonops/addonops/internal/canary"
)

// Annotations on a ClusterManagementAddOn.
const (
	PauseAnnotation     = "addonops.io/pause"
	PromoteAnnotation   = "addonops.io/promote"
	RetryAnnotation     = "addonops.io/retry"
	AbortAnnotation     = "addonops.io/abort"
	AutoAbortAnnotation = "addonops.io/auto-abort"
	// WindowOverrideAnnotation lets one version of a placement start batches while its
	// maintenance windows (package maintwindow) are closed; a newer version waits for the windows
	// again.
	WindowOverrideAnnotation = "addonops.io/window-override"
)

// AllPlacements is the pause annotation's value for every placement.
const AllPlacements = "*"

// Requests are the day-2 requests on one add-on.
type Requests struct {
	// PauseAll pauses every placement; Paused lists the placements paused by name.
	PauseAll bool
	Paused   map[canary.PlacementKey]bool
	// Promote, Retry and Abort map a placement to the version id (Promote, Abort) or token (Retry).
	Promote map[canary.PlacementKey]string
	Retry   map[canary.PlacementKey]string
	Abort   map[canary.PlacementKey]string
	// WindowOverride maps a placement to the version id that may pass its closed maintenance
	// windows.
	WindowOverride map[canary.PlacementKey]string
	// AutoAbort aborts a forward rollout by itself when it stops on maxFailures.
	AutoAbort bool
	// Problems name the annotations that do not parse. A pause annotation that does not parse
	// pauses everything (a person asked to stop; a typo must not keep the rollout going).
	Problems []string
}

// IsPaused reports whether placement k is paused.
func (r Requests) IsPaused(k canary.PlacementKey) bool { return r.PauseAll || r.Paused[k] }

// Parse reads the requests from a CMA's annotations.
func Parse(annotations map[string]string) Requests {
	r := Requests{Paused: map[canary.PlacementKey]bool{}}
	if raw, ok := annotations[PauseAnnotation]; ok {
		all, keys, err := ParsePause(raw)
		if err != nil {
			r.PauseAll = true
			r.Problems = append(r.Problems, fmt.Sprintf("annotation %s: %v; every placement is paused until it is fixed", PauseAnnotation, err))
		}
		r.PauseAll = r.PauseAll || all
		for _, k := range keys {
			r.Paused[k] = true
		}
	}
	var err error
	for _, m := range []struct {
		key string
		dst *map[canary.PlacementKey]string
	}{{PromoteAnnotation, &r.Promote}, {RetryAnnotation, &r.Retry}, {AbortAnnotation, &r.Abort}, {WindowOverrideAnnotation, &r.WindowOverride}} {
		raw, ok := annotations[m.key]
		if !ok {
			continue
		}
		if *m.dst, err = ParseMap(raw); err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("annotation %s: %v; it is ignored until it is fixed", m.key, err))
		}
	}
	if raw, ok := annotations[AutoAbortAnnotation]; ok {
		v, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("annotation %s: want \"true\" or \"false\", got %q; automatic abort is off until it is fixed", AutoAbortAnnotation, raw))
		}
		r.AutoAbort = v
	}
	return r
}

// ParsePause reads the pause annotation: "*" or a comma-separated list of "namespace/name".
func ParsePause(raw string) (all bool, keys []canary.PlacementKey, err error) {
	raw = strings.TrimSpace(raw)
	if raw == AllPlacements || raw == "" {
		return true, nil, nil
	}
	for _, part := range strings.Split(raw, ",") {
		k, err := canary.ParsePlacementKey(strings.TrimSpace(part))
		if err != nil {
			return false, nil, fmt.Errorf("want %q or a comma-separated list of namespace/name: %w", AllPlacements, err)
		}
		keys = append(keys, k)
	}
	return false, keys, nil
}

// FormatPause writes the pause annotation's value for these placements (sorted, no duplicates).
func FormatPause(all bool, keys map[canary.PlacementKey]bool) string {
	if all {
		return AllPlacements
	}
	list := slices.SortedFunc(maps.Keys(keys), canary.Compare)
	parts := make([]string, 0, len(list))
	for _, k := range list {
		if keys[k] {
			parts = append(parts, k.String())
		}
	}
	return strings.Join(parts, ",")
}

// ParseMap reads a JSON object from "namespace/name" to a non-empty string.
func ParseMap(raw string) (map[canary.PlacementKey]string, error) {
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf(`want a JSON object such as {"default/prod": "<value>"}: %w`, err)
	}
	out := make(map[canary.PlacementKey]string, len(m))
	for ks, v := range m {
		k, err := canary.ParsePlacementKey(ks)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("placement %s: empty value", ks)
		}
		out[k] = v
	}
	return out, nil
}

// FormatMap writes a map annotation's value (keys sorted, so the same requests give the same text).
func FormatMap(m map[canary.PlacementKey]string) string {
	keys := slices.SortedFunc(maps.Keys(m), canary.Compare)
	var b strings.Builder
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteString(",")
		}
		ks, _ := json.Marshal(k.String())
		vs, _ := json.Marshal(m[k])
		b.Write(ks)
		b.WriteString(":")
		b.Write(vs)
	}
	b.WriteString("}")
	return b.String()
}
