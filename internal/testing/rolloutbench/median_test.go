package rolloutbench

import (
	"math"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{26.9, 25.3, 23.0}, 25.3},
	} {
		in := append([]float64(nil), c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its argument: %v, was %v", c.in, in)
			}
		}
	}
}

// TestMedianRows: each manager's figures are the median over the rounds, its peak RSS the
// highest, and the managers keep their rows.
func TestMedianRows(t *testing.T) {
	result := func(m managerKind, install, upgrade time.Duration, rss float64) *templateResult {
		return &templateResult{manager: m, n: 1000, install: install, upgrade: upgrade, peakRSSMB: rss}
	}
	rounds := [][]*templateResult{
		{result(byOCM, 158*time.Second, 104*time.Second, 152), result(byAddonops, 31*time.Second, 27*time.Second, 63)},
		{result(byOCM, 151*time.Second, 92*time.Second, 153), result(byAddonops, 26*time.Second, 25*time.Second, 61)},
		{result(byOCM, 182*time.Second, 109*time.Second, 150), result(byAddonops, 26*time.Second, 23*time.Second, 62)},
	}
	rows := medianRows(rounds)
	for i, want := range [][3]float64{{158, 104, 153}, {26, 25, 63}} {
		if got := [3]float64{rows[i][colInstall], rows[i][colUpgrade], rows[i][colRSS]}; got != want {
			t.Errorf("row %d (%s): install, upgrade, RSS = %v, want %v", i, rounds[0][i].manager.label(), got, want)
		}
	}
}

// TestCPURatio: the ratio is over every process's CPU, the ceiling leaves addonops' manager out
// (figures of an upgrade round at 1,000 clusters).
func TestCPURatio(t *testing.T) {
	ocm := &templateResult{manager: byOCM}
	ocm.use[phaseUpgrade] = usage{manager: 87.9, apiserver: 120.6, etcd: 22.0, bench: 10.0}
	ours := &templateResult{manager: managerKind{soak: "0s"}}
	ours.use[phaseUpgrade] = usage{manager: 9.0, apiserver: 37.0, etcd: 4.0, bench: 4.2}
	ratio, ceiling := cpuRatio(ocm, ours, phaseUpgrade)
	if want := 240.5 / 54.2; math.Abs(ratio-want) > 1e-9 {
		t.Errorf("ratio = %v, want %v", ratio, want)
	}
	if want := 240.5 / 45.2; math.Abs(ceiling-want) > 1e-9 {
		t.Errorf("ceiling = %v, want %v", ceiling, want)
	}
	ours.use[phaseUpgrade].manager = 0
	if r, c := cpuRatio(ocm, ours, phaseUpgrade); r != c {
		t.Errorf("a manager that used no CPU: ratio %v and ceiling %v differ", r, c)
	}
}
