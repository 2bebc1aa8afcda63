package statuswrite

import (
	"slices"
	"testing"
)

func TestEditFinalizers(t *testing.T) {
	cases := []struct {
		name            string
		fins, add, del  []string
		want            []string
		sameSliceWanted bool
	}{
		{"add to none", nil, []string{"a"}, nil, []string{"a"}, false},
		{"add present", []string{"a"}, []string{"a"}, nil, []string{"a"}, true},
		{"remove keeps order", []string{"x", "a", "y"}, nil, []string{"a"}, []string{"x", "y"}, false},
		{"remove absent", []string{"x"}, nil, []string{"a"}, []string{"x"}, true},
		{"replace deprecated", []string{"old", "x"}, []string{"new"}, []string{"old"}, []string{"x", "new"}, false},
		{"remove wins over add", nil, []string{"a"}, []string{"a"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := EditFinalizers(tc.fins, tc.add, tc.del)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if tc.sameSliceWanted && len(tc.fins) > 0 && &got[0] != &tc.fins[0] {
				t.Errorf("unchanged finalizers were copied")
			}
		})
	}
}
