package rolloutrules

import (
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
)

func TestValueRules(t *testing.T) {
	i := func(s string) Value { return Value{Kind: Int, Text: s} }
	s := func(s string) Value { return Value{Kind: String, Text: s} }
	cases := []struct {
		name string
		rule func(Value) string
		v    Value
		want string // "" means accepted
	}{
		// maxConcurrency: every rejected value, and the accepted edges.
		{"maxConcurrency 1", MaxConcurrency, i("1"), ""},
		{"maxConcurrency max int32", MaxConcurrency, i("2147483647"), ""},
		{"maxConcurrency 1%", MaxConcurrency, s("1%"), ""},
		{"maxConcurrency 100%", MaxConcurrency, s("100%"), ""},
		{"maxConcurrency absent", MaxConcurrency, Value{}, ""},
		{"maxConcurrency 0", MaxConcurrency, i("0"), `"0" would move every cluster at once (OCM treats a maxConcurrency of 0 as no limit); write at least 1 or a percentage like 25%, or use type All to move every cluster at once`},
		{"maxConcurrency 0%", MaxConcurrency, s("0%"), `"0%" would move every cluster at once`},
		{"maxConcurrency 00%", MaxConcurrency, s("00%"), `"00%" would move every cluster at once`},
		{"maxConcurrency -1", MaxConcurrency, i("-1"), `"-1" is negative: write a number of clusters from 1 or a percentage like 25%`},
		{"maxConcurrency beyond int32", MaxConcurrency, i("2147483648"), `"2147483648" is too large: OCM reads it as a 32-bit integer (at most 2147483647); write a number of clusters or a percentage like 25%`},
		{"maxConcurrency max int64", MaxConcurrency, i("9223372036854775807"), `"9223372036854775807" is too large`},
		{"maxConcurrency beyond int64", MaxConcurrency, Value{Kind: Scalar, Text: "99999999999999999999"}, `"99999999999999999999" is too large`},
		{"maxConcurrency 101%", MaxConcurrency, s("101%"), `"101%" is not an int or a percentage like 25%`},
		{"maxConcurrency -5%", MaxConcurrency, s("-5%"), `"-5%" is not an int or a percentage like 25%`},
		{"maxConcurrency 2.5%", MaxConcurrency, s("2.5%"), `"2.5%" is not an int or a percentage like 25%`},
		{"maxConcurrency quoted number", MaxConcurrency, s("5"), `"5" is a string: write the number without quotes (5); OCM reads a string only as a percentage`},
		{"maxConcurrency hex", MaxConcurrency, i("0x10"), `"0x10" is not an int or a percentage like 25%`},
		{"maxConcurrency fraction", MaxConcurrency, Value{Kind: Scalar, Text: "1.5"}, `"1.5" is not an int or a percentage like 25%`},
		{"maxConcurrency list", MaxConcurrency, Value{Kind: Structure, Text: "[1]"}, `"[1]" is not an int or a percentage like 25%`},
		// maxFailures: 0 is fine (no failure tolerated).
		{"maxFailures 0", MaxFailures, i("0"), ""},
		{"maxFailures 0%", MaxFailures, s("0%"), ""},
		{"maxFailures 100%", MaxFailures, s("100%"), ""},
		{"maxFailures -1", MaxFailures, i("-1"), `"-1" is negative: write a number of clusters from 0 or a percentage like 25%`},
		{"maxFailures beyond int32", MaxFailures, i("4294967296"), `"4294967296" is too large`},
		{"maxFailures quoted", MaxFailures, s("3"), `"3" is a string`},
		{"maxFailures 101%", MaxFailures, s("101%"), `"101%" is not an int or a percentage like 25%`},
		// progressDeadline.
		{"progressDeadline None", ProgressDeadline, s("None"), ""},
		{"progressDeadline 90m", ProgressDeadline, s("90m"), ""},
		{"progressDeadline 1h30m", ProgressDeadline, s("1h30m"), ""},
		{"progressDeadline 1d", ProgressDeadline, s("1d"), `"1d" is not a duration such as 90m, 2h or 360s, nor None`},
		{"progressDeadline 5|", ProgressDeadline, s("5|"), `"5|" is not a duration`},
		{"progressDeadline -5m", ProgressDeadline, s("-5m"), `"-5m" is not a duration`},
		{"progressDeadline forever", ProgressDeadline, s("forever"), `"forever" is not a duration`},
		{"progressDeadline int", ProgressDeadline, i("10"), `"10" is not a duration such as 90m or None; quote it`},
		// minSuccessTime.
		{"minSuccessTime 0", MinSuccessTime, s("0"), ""},
		{"minSuccessTime 5m", MinSuccessTime, s("5m"), ""},
		{"minSuccessTime forever", MinSuccessTime, s("forever"), `"forever" is not a Go duration such as 5m, 1h30m or 0`},
		{"minSuccessTime negative", MinSuccessTime, s("-1s"), `"-1s" is negative`},
		{"minSuccessTime int", MinSuccessTime, i("5"), `"5" is not a duration such as 5m; quote it`},
		// Decision groups.
		{"groupIndex 0", GroupIndex, i("0"), ""},
		{"groupIndex -1", GroupIndex, i("-1"), `"-1" is not a decision group index (an integer from 0)`},
		{"groupIndex beyond int32", GroupIndex, i("2147483648"), `"2147483648" is too large: OCM reads it as a 32-bit integer (at most 2147483647); write a decision group index`},
		{"groupName", GroupName, s("a"), ""},
		{"groupName list", GroupName, Value{Kind: Structure, Text: "[a]"}, `"[a]" is not a decision group name`},
		// Types.
		{"type unset", Type, Value{}, ""},
		{"type Progressive", Type, s("Progressive"), ""},
		{"type UpdateAll", Type, s("UpdateAll"), `"UpdateAll" is not one of OCM's rollout types All, Progressive, ProgressivePerGroup`},
		{"type not a string", Type, i("1"), `"1" is not a string; quote it`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rule(tc.v)
			if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want Value
	}{
		{int64(math.MaxInt64), Value{Kind: Int, Text: "9223372036854775807"}},
		{int64(-1), Value{Kind: Int, Text: "-1"}},
		{"25%", Value{Kind: String, Text: "25%"}},
		{float64(3), Value{Kind: Int, Text: "3"}},
		{1.5, Value{Kind: Scalar, Text: "1.5"}},
		{true, Value{Kind: Scalar, Text: "true"}},
		{nil, Value{Kind: Scalar, Text: "null"}},
		{[]any{int64(1)}, Value{Kind: Structure, Text: "[1]"}},
	} {
		if got := Of(tc.in); got != tc.want {
			t.Errorf("Of(%#v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	const p = "spec.installStrategy.placements[0].rolloutStrategy"
	cases := []struct {
		name string
		in   map[string]any
		want []string // Problem.String()s
	}{
		{"unset", map[string]any{}, nil},
		{"All with defaults", map[string]any{"type": "All", "all": map[string]any{"maxFailures": int64(0), "minSuccessTime": "0", "progressDeadline": "None"}}, nil},
		{"Progressive valid", map[string]any{"type": "Progressive", "progressive": map[string]any{"maxConcurrency": "25%", "mandatoryDecisionGroups": []any{map[string]any{"groupIndex": int64(0)}}}}, nil},
		{"Progressive without maxConcurrency", map[string]any{"type": "Progressive", "progressive": map[string]any{"maxFailures": int64(0)}}, nil},
		{"maxConcurrency 0", map[string]any{"type": "Progressive", "progressive": map[string]any{"maxConcurrency": int64(0)}},
			[]string{p + `.progressive.maxConcurrency: "0" would move every cluster at once`}},
		{"every bad value", map[string]any{"type": "Progressive", "progressive": map[string]any{
			"maxConcurrency": int64(math.MaxInt64), "maxFailures": int64(-1), "progressDeadline": "1d", "minSuccessTime": "forever",
			"mandatoryDecisionGroups": []any{"x", map[string]any{"groupName": int64(3), "groupIndex": int64(-1)}}}},
			[]string{
				p + `.progressive.maxConcurrency: "9223372036854775807" is too large`,
				p + `.progressive.maxFailures: "-1" is negative`,
				p + `.progressive.progressDeadline: "1d" is not a duration`,
				p + `.progressive.minSuccessTime: "forever" is not a Go duration`,
				p + `.progressive.mandatoryDecisionGroups[0]: must be a mapping`,
				p + `.progressive.mandatoryDecisionGroups[1].groupName: "3" is not a decision group name; quote it`,
				p + `.progressive.mandatoryDecisionGroups[1].groupIndex: "-1" is not a decision group index`,
			}},
		{"unknown type stops", map[string]any{"type": "Blue", "all": map[string]any{"maxFailures": int64(-1)}}, []string{p + `.type: "Blue" is not one of OCM's rollout types`}},
		{"settings of another type", map[string]any{"type": "All", "progressive": map[string]any{"maxConcurrency": int64(1)}},
			[]string{p + ".progressive: is set but type is All, which OCM runs without reading it; set type to match or remove progressive"}},
		{"settings not a mapping", map[string]any{"type": "All", "all": "x"}, []string{p + ".all: must be a mapping"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			probs := Check(p, tc.in)
			if len(probs) != len(tc.want) {
				t.Fatalf("problems %q, want %q", probs, tc.want)
			}
			for i, pr := range probs {
				if !strings.HasPrefix(pr.String(), tc.want[i]) {
					t.Errorf("problem %d: %q, want %q", i, pr.String(), tc.want[i])
				}
			}
		})
	}
}

// The Go form hides what the API server's JSON shows: an int maxConcurrency of 0 is unset there.
func TestCheckTyped(t *testing.T) {
	progressive := func(mc intstr.IntOrString, cfg clusterv1alpha1.RolloutConfig) clusterv1alpha1.RolloutStrategy {
		return clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.Progressive, Progressive: &clusterv1alpha1.RolloutProgressive{RolloutConfig: cfg, MaxConcurrency: mc}}
	}
	cases := []struct {
		name string
		in   clusterv1alpha1.RolloutStrategy
		want string // first problem, "" for none
	}{
		{"All", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All}, ""},
		{"unset type", clusterv1alpha1.RolloutStrategy{}, ""},
		{"int 0 is unset", progressive(intstr.FromInt32(0), clusterv1alpha1.RolloutConfig{}), ""},
		{"1", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: time.Minute}, ProgressDeadline: "None"}), ""},
		{"-1", progressive(intstr.FromInt32(-1), clusterv1alpha1.RolloutConfig{}), `p.progressive.maxConcurrency: "-1" is negative`},
		{"0%", progressive(intstr.FromString("0%"), clusterv1alpha1.RolloutConfig{}), `p.progressive.maxConcurrency: "0%" would move every cluster at once`},
		{"negative soak", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: -time.Second}}), `p.progressive.minSuccessTime: "-1s" is negative`},
		{"bad deadline", progressive(intstr.FromInt32(1), clusterv1alpha1.RolloutConfig{ProgressDeadline: "5|"}), `p.progressive.progressDeadline: "5|" is not a duration`},
		{"maxFailures -1", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All, All: &clusterv1alpha1.RolloutAll{RolloutConfig: clusterv1alpha1.RolloutConfig{MaxFailures: intstr.FromInt32(-1)}}},
			`p.all.maxFailures: "-1" is negative`},
		{"UpdateAll", clusterv1alpha1.RolloutStrategy{Type: "UpdateAll"}, `p.type: "UpdateAll" is not one of OCM's rollout types`},
		{"settings of another type", clusterv1alpha1.RolloutStrategy{Type: clusterv1alpha1.All, Progressive: &clusterv1alpha1.RolloutProgressive{}}, "p.progressive: is set but type is All"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			probs := CheckTyped("p", tc.in)
			switch {
			case tc.want == "" && len(probs) > 0:
				t.Fatalf("problems %q, want none", probs)
			case tc.want != "" && (len(probs) == 0 || !strings.HasPrefix(probs[0].String(), tc.want)):
				t.Fatalf("problems %q, want %q first", probs, tc.want)
			}
		})
	}
}
