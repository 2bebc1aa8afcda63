// Package rolloutrules is the one rule set for OCM rollout strategies (cluster/v1alpha1
// RolloutStrategy, e.g. spec.installStrategy.placements[].rolloutStrategy of a
// ClusterManagementAddOn): what OCM's CRD accepts and OCM's rollout code (sdk-go) reads, minus the
// values that would silently move every cluster at once or that the Go types cannot hold. The
// rollout-strategy KRM function applies it at build time and the controller at run time, before
// sdk-go is called, with the same messages.
//
// Rules judge one value as written (Value): an integer, a string, another scalar or a structure,
// with its text. The function reads values from YAML nodes, the controller from the object the API
// server returned (Check) or, lacking it, from the Go types (CheckTyped).
package rolloutrules

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

// OCM's rollout types.
const (
	TypeAll                 = "All"
	TypeProgressive         = "Progressive"
	TypeProgressivePerGroup = "ProgressivePerGroup"
)

// SettingsFields are the fields holding each type's settings, in the order they are checked.
var SettingsFields = []string{"all", "progressive", "progressivePerGroup"}

var settingsOf = map[string]string{"": "all", TypeAll: "all", TypeProgressive: "progressive", TypeProgressivePerGroup: "progressivePerGroup"}

// SettingsField names the field holding the settings of rollout type typ ("" is OCM's default,
// All); ok is false for a type OCM does not know.
func SettingsField(typ string) (field string, ok bool) {
	field, ok = settingsOf[typ]
	return field, ok
}

// ConfigFields lists the fields settings field f (all, progressive, progressivePerGroup) takes.
func ConfigFields(f string) []string {
	known := []string{"minSuccessTime", "progressDeadline", "maxFailures"}
	if f != "all" {
		known = append(known, "mandatoryDecisionGroups")
	}
	if f == "progressive" {
		known = append(known, "maxConcurrency")
	}
	return known
}

// TypeName names a rollout type in messages.
func TypeName(typ string) string {
	if typ == "" {
		return "an unset type (OCM's default All)"
	}
	return typ
}

// Kind is what a written value is.
type Kind int

const (
	// Absent: not written.
	Absent Kind = iota
	// Int: an integer (a JSON number without fraction, a YAML !!int).
	Int
	// String: a string.
	String
	// Scalar: another scalar (a fraction, a boolean, null).
	Scalar
	// Structure: a list or a mapping.
	Structure
)

// Value is one value as written.
type Value struct {
	Kind Kind
	// Text is the value as written; for a Structure, its JSON or YAML flow form.
	Text string
}

// Of is the Value of v as an unstructured (JSON) object holds it.
func Of(v any) Value {
	switch t := v.(type) {
	case string:
		return Value{Kind: String, Text: t}
	case int64:
		return Value{Kind: Int, Text: strconv.FormatInt(t, 10)}
	case int:
		return Value{Kind: Int, Text: strconv.Itoa(t)}
	case int32:
		return Value{Kind: Int, Text: strconv.FormatInt(int64(t), 10)}
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1e21 {
			return Value{Kind: Int, Text: strconv.FormatFloat(t, 'f', -1, 64)}
		}
		return Value{Kind: Scalar, Text: strconv.FormatFloat(t, 'g', -1, 64)}
	case bool:
		return Value{Kind: Scalar, Text: strconv.FormatBool(t)}
	case nil:
		return Value{Kind: Scalar, Text: "null"}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Value{Kind: Structure, Text: fmt.Sprint(v)}
	}
	return Value{Kind: Structure, Text: string(b)}
}

// Problem is one rejected field.
type Problem struct {
	// Field is the field's path, e.g. spec.installStrategy.placements[0].rolloutStrategy.progressive.maxConcurrency.
	Field string
	// Message says what is wrong with its value and how to fix it.
	Message string
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

// The OCM CRD's patterns (open-cluster-management.io/api v1.3.0, cluster/v1alpha1 RolloutConfig
// and RolloutProgressive).
var (
	percentPattern  = regexp.MustCompile(`^(100|[0-9]{1,2})%$`)
	decimalPattern  = regexp.MustCompile(`^[0-9]+$`)
	negativePattern = regexp.MustCompile(`^-[0-9]+$`)
	deadlinePattern = regexp.MustCompile(`^(([0-9])+[h|m|s])|None$`)
)

// NotA says that v is not what was wanted ("a string", "a decision group name"), and that quoting it
// makes it one when it is a scalar.
func NotA(v Value, want string) string {
	msg := fmt.Sprintf("%q is not %s", v.Text, want)
	if v.Kind == Int || v.Kind == Scalar {
		msg += "; quote it"
	}
	return msg
}

// Type checks a rollout type: a string, one of OCM's types, or unset.
func Type(v Value) string {
	switch {
	case v.Kind == Absent:
		return ""
	case v.Kind != String:
		return NotA(v, "a string")
	}
	if _, ok := SettingsField(v.Text); !ok {
		return fmt.Sprintf("%q is not one of OCM's rollout types %s, %s, %s", v.Text, TypeAll, TypeProgressive, TypeProgressivePerGroup)
	}
	return ""
}

// OtherSettings is the problem of settings field f set next to a type that does not read it.
func OtherSettings(f, typ string) string {
	return fmt.Sprintf("is set but type is %s, which OCM runs without reading it; set type to match or remove %s", TypeName(typ), f)
}

// MaxConcurrency checks progressive.maxConcurrency: a number of clusters from 1 or a percentage
// from 1% to 100%. 0 and 0% would move every cluster at once (sdk-go reads a batch size of 0 or less
// as no limit, and OCM reads an int 0 as unset), so they are refused, and so are negative numbers,
// which the CRD's pattern lets through as integers.
func MaxConcurrency(v Value) string { return clusterCount(v, 1) }

// MaxFailures checks maxFailures: a number of clusters from 0 or a percentage from 0% to 100%.
func MaxFailures(v Value) string { return clusterCount(v, 0) }

// clusterCount checks a number of clusters or a percentage (OCM's IntOrString with the CRD pattern
// ^((100|[0-9]{1,2})%|[0-9]+)$) of at least least (0 or 1).
func clusterCount(v Value, least int) string {
	zero := func() string {
		return fmt.Sprintf("%q would move every cluster at once (OCM treats a maxConcurrency of 0 as no limit); write at least 1 or a percentage like 25%%, or use type All to move every cluster at once", v.Text)
	}
	switch {
	case v.Kind == Absent:
		return ""
	case (v.Kind == Int || v.Kind == Scalar) && decimalPattern.MatchString(v.Text):
		// A YAML integer beyond 64 bits is a float to YAML: still a number of clusters, too large.
		n, err := strconv.ParseInt(v.Text, 10, 64)
		if err != nil || n > math.MaxInt32 {
			return tooLarge(v, "a number of clusters or a percentage like 25%")
		}
		if n < int64(least) {
			return zero()
		}
		return ""
	case v.Kind == Int && negativePattern.MatchString(v.Text):
		return fmt.Sprintf("%q is negative: write a number of clusters from %d or a percentage like 25%%", v.Text, least)
	case v.Kind == String && decimalPattern.MatchString(v.Text):
		return fmt.Sprintf("%q is a string: write the number without quotes (%s); OCM reads a string only as a percentage", v.Text, v.Text)
	case v.Kind == String && percentPattern.MatchString(v.Text):
		if n, _ := strconv.Atoi(strings.TrimSuffix(v.Text, "%")); n < least {
			return zero()
		}
		return ""
	}
	return fmt.Sprintf("%q is not an int or a percentage like 25%%", v.Text)
}

func tooLarge(v Value, want string) string {
	return fmt.Sprintf("%q is too large: OCM reads it as a 32-bit integer (at most %d); write %s", v.Text, math.MaxInt32, want)
}

// ProgressDeadline checks progressDeadline: None, or a duration that both OCM's CRD pattern and Go's
// time.ParseDuration accept (the pattern alone lets through values such as "5|" that the rollout
// then fails on).
func ProgressDeadline(v Value) string {
	switch {
	case v.Kind == Absent:
		return ""
	case v.Kind != String:
		return NotA(v, "a duration such as 90m or None")
	case v.Text == "None" || v.Text == "":
		return ""
	}
	if _, err := time.ParseDuration(v.Text); err != nil || !deadlinePattern.MatchString(v.Text) {
		return fmt.Sprintf("%q is not a duration such as 90m, 2h or 360s, nor None", v.Text)
	}
	return ""
}

// MinSuccessTime checks minSuccessTime: a Go duration, not negative, written as a string.
func MinSuccessTime(v Value) string {
	switch {
	case v.Kind == Absent:
		return ""
	case v.Kind != String:
		return NotA(v, "a duration such as 5m")
	}
	d, err := time.ParseDuration(v.Text)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a Go duration such as 5m, 1h30m or 0", v.Text)
	case d < 0:
		return fmt.Sprintf("%q is negative", v.Text)
	}
	return ""
}

// GroupName checks mandatoryDecisionGroups[].groupName.
func GroupName(v Value) string {
	if v.Kind == Absent || v.Kind == String {
		return ""
	}
	return NotA(v, "a decision group name")
}

// GroupIndex checks mandatoryDecisionGroups[].groupIndex: an integer from 0.
func GroupIndex(v Value) string {
	switch {
	case v.Kind == Absent:
		return ""
	case (v.Kind == Int || v.Kind == Scalar) && decimalPattern.MatchString(v.Text):
		if n, err := strconv.ParseInt(v.Text, 10, 64); err != nil || n > math.MaxInt32 {
			return tooLarge(v, "a decision group index")
		}
		return ""
	}
	return fmt.Sprintf("%q is not a decision group index (an integer from 0)", v.Text)
}

// Check checks a rollout strategy as an unstructured object holds it (the API server's JSON),
// reporting fields under path: the same rules, in the same order, as the rollout-strategy
// function's, but for the unknown fields the API server prunes anyway.
func Check(path string, strategy map[string]any) []Problem {
	var probs []Problem
	add := func(field, msg string) {
		if msg != "" {
			probs = append(probs, Problem{Field: field, Message: msg})
		}
	}
	typ := ""
	if v, ok := strategy["type"]; ok && v != nil {
		tv := Of(v)
		if msg := Type(tv); msg != "" {
			add(path+".type", msg)
			return probs
		}
		typ = tv.Text
	}
	own, _ := SettingsField(typ)
	for _, f := range SettingsFields {
		sv, ok := strategy[f]
		if !ok {
			continue
		}
		fpath := path + "." + f
		if f != own {
			add(fpath, OtherSettings(f, typ))
			continue
		}
		if sv == nil {
			continue
		}
		m, ok := sv.(map[string]any)
		if !ok {
			add(fpath, "must be a mapping")
			continue
		}
		for _, c := range []struct {
			field string
			rule  func(Value) string
		}{{"maxConcurrency", MaxConcurrency}, {"maxFailures", MaxFailures}, {"progressDeadline", ProgressDeadline}, {"minSuccessTime", MinSuccessTime}} {
			if v, ok := m[c.field]; ok {
				add(fpath+"."+c.field, c.rule(Of(v)))
			}
		}
		groups, ok := m["mandatoryDecisionGroups"]
		if !ok || groups == nil {
			continue
		}
		gpath := fpath + ".mandatoryDecisionGroups"
		list, ok := groups.([]any)
		if !ok {
			add(gpath, "must be a list of {groupName} or {groupIndex}")
			continue
		}
		for i, g := range list {
			ipath := fmt.Sprintf("%s[%d]", gpath, i)
			gm, ok := g.(map[string]any)
			if !ok {
				add(ipath, "must be a mapping {groupName} or {groupIndex}")
				continue
			}
			if v, ok := gm["groupName"]; ok {
				add(ipath+".groupName", GroupName(Of(v)))
			}
			if v, ok := gm["groupIndex"]; ok {
				add(ipath+".groupIndex", GroupIndex(Of(v)))
			}
		}
	}
	return probs
}

// CheckTyped checks a rollout strategy in its Go form, which cannot hold everything Check sees: an
// int maxConcurrency of 0 is unset there (OCM then takes the placement's clustersPerDecisionGroup),
// and values beyond the Go types never decode. The controller checks the object as the API server
// returned it when it has it.
func CheckTyped(path string, s clusterv1alpha1.RolloutStrategy) []Problem {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
	if err != nil {
		return []Problem{{Field: path, Message: err.Error()}}
	}
	if p := s.Progressive; p != nil && p.MaxConcurrency.Type == intstr.Int && p.MaxConcurrency.IntVal == 0 {
		unstructured.RemoveNestedField(u, "progressive", "maxConcurrency")
	}
	return Check(path, u)
}

// ConfigOf returns the settings every rollout type shares (progressDeadline, maxFailures,
// minSuccessTime) of the type s names; empty when s sets none.
func ConfigOf(s clusterv1alpha1.RolloutStrategy) clusterv1alpha1.RolloutConfig {
	switch {
	case s.Type == clusterv1alpha1.All && s.All != nil:
		return s.All.RolloutConfig
	case s.Type == clusterv1alpha1.Progressive && s.Progressive != nil:
		return s.Progressive.RolloutConfig
	case s.Type == clusterv1alpha1.ProgressivePerGroup && s.ProgressivePerGroup != nil:
		return s.ProgressivePerGroup.RolloutConfig
	}
	return clusterv1alpha1.RolloutConfig{}
}
