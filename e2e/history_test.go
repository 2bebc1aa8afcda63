//go:build integration

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/addonops/addonops/config/configtest"
	"github.com/addonops/addonops/internal/history"
	"github.com/addonops/addonops/internal/testing/harness"
)

// The controller keeps the add-on's version history in a ConfigMap (internal/history): per install
// placement, the config versions it rolled out, oldest first. The rollout examples check it after
// every step against what the steps did, and after the last one through `addonops history`.

// expectedVersion is one version the history must list.
type expectedVersion struct {
	adc, tpl string
	// kinds are the kinds the entry may record (Install, Upgrade, Rollback): one, except where the
	// controller's first look at a new placement decides it (see step).
	kinds  []string
	result history.Result
}

// expectedHistory is the history the steps so far must have left, by placement.
type expectedHistory struct {
	placements map[string][]expectedVersion
}

// step adds step i's versions (adc and tpl on each of placements) and waits until the history
// ConfigMap says exactly that: every earlier version of a placement ended (RolledBack when the new
// one is a rollback, else Superseded), each one completed, the new one Succeeded.
func (h *expectedHistory) step(t *testing.T, s *suite, step rolloutStep, i int, placements []string, adc, tpl string) {
	t.Helper()
	if h.placements == nil {
		h.placements = map[string][]expectedVersion{}
	}
	for _, pl := range placements {
		vs := h.placements[pl]
		kind := step.placementKind(i, pl)
		kinds := []string{kind}
		if n := len(vs); n > 0 {
			if last := &vs[n-1]; last.adc != adc || last.tpl != tpl {
				last.result = history.Superseded
				if kind == kindRollback {
					last.result = history.RolledBack
				}
			}
		} else if i > 0 {
			// A placement added next to a running add-on (canary-placement, step 03): applied together
			// with its Placement, the controller may look before OCM decided it, see no cluster and
			// call it an install; once it has clusters, they upgrade. The entry keeps what it was
			// first called.
			kinds = []string{kindInstall, kind}
		}
		if n := len(vs); n == 0 || vs[n-1].adc != adc || vs[n-1].tpl != tpl {
			vs = append(vs, expectedVersion{adc: adc, tpl: tpl, kinds: kinds, result: history.Succeeded})
		}
		h.placements[pl] = vs
	}
	var last *history.Record
	s.eventually(t, "the version history after "+step.name, func() string {
		rec, err := s.readHistory()
		if err != nil {
			return err.Error()
		}
		last = rec
		return h.diff(rec)
	})
	if last != nil {
		t.Logf("version history after %s:%s", step.name, historyTable(last))
	}
}

// diff says how rec differs from the expected history, "" when it does not.
func (h *expectedHistory) diff(rec *history.Record) string {
	if rec.Addon != rolloutAddon {
		return fmt.Sprintf("the history is of add-on %q, want %s", rec.Addon, rolloutAddon)
	}
	var problems []string
	for pl, want := range h.placements {
		p := rec.Placement(pl)
		if p == nil {
			problems = append(problems, fmt.Sprintf("no placement %s", pl))
			continue
		}
		if len(p.Versions) != len(want) {
			problems = append(problems, fmt.Sprintf("%s: %d versions, want %d", pl, len(p.Versions), len(want)))
			continue
		}
		for n, w := range want {
			v := p.Versions[n]
			where := fmt.Sprintf("%s revision %d", pl, n+1)
			var adc, tpl string
			for _, c := range v.Configs {
				switch c.Resource {
				case adcResource:
					adc = c.Name
				case templateResource:
					tpl = c.Name
				}
			}
			switch {
			case adc != w.adc || tpl != w.tpl || len(v.Configs) != 2:
				problems = append(problems, fmt.Sprintf("%s: configs %v, want %s and %s", where, v.Configs, w.adc, w.tpl))
			case v.ID != history.VersionID(v.Configs):
				problems = append(problems, fmt.Sprintf("%s: id %s, want history.VersionID of its configs %s", where, v.ID, history.VersionID(v.Configs)))
			case !slices.Contains(w.kinds, v.Kind):
				problems = append(problems, fmt.Sprintf("%s (%s): kind %s, want %s", where, w.adc, v.Kind, strings.Join(w.kinds, " or ")))
			case v.Result != w.result:
				problems = append(problems, fmt.Sprintf("%s (%s): result %s, want %s", where, w.adc, v.Result, w.result))
			case v.Completed == nil || v.Completed.Before(&v.Started):
				// Every step completed on every cluster: each version is a rollback target.
				problems = append(problems, fmt.Sprintf("%s (%s): started %s, completed %v: want it completed", where, w.adc, v.Started, v.Completed))
			case (v.Ended == nil) != (n == len(want)-1):
				problems = append(problems, fmt.Sprintf("%s (%s): ended %v; want an end for every version but the current one", where, w.adc, v.Ended))
			}
		}
	}
	slices.Sort(problems)
	return strings.Join(problems, "; ")
}

// readHistory reads the add-on's history ConfigMap where the controller keeps it (its namespace).
func (s *suite) readHistory() (*history.Record, error) {
	return harness.ReadHistory(s.ctx, s.c.Kube, s.c.Addon, configtest.Namespace, rolloutAddon)
}

// checkHistoryCommand runs `addonops history helloworld` as a user would (the real binary, built
// from this tree): its JSON is the record the ConfigMap holds, and its table lists every version.
func (s *suite) checkHistoryCommand(t *testing.T) {
	t.Helper()
	run := func(args ...string) string {
		cmd := exec.CommandContext(s.ctx, filepath.Join(tools.Bin, "addonops"), append(args, "--kubeconfig", s.hub.Kubeconfig)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("addonops %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.String()
	}
	var got history.Record
	if out := run("history", rolloutAddon, "-o", "json"); json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("addonops history -o json printed no record:\n%s", out)
	}
	want, err := s.readHistory()
	if err != nil {
		t.Fatal(err)
	}
	if a, b := jsonOf(got), jsonOf(want); a != b {
		t.Errorf("addonops history -o json:\n%s\nwant the ConfigMap's record:\n%s", a, b)
	}
	table := run("history", rolloutAddon)
	t.Logf("addonops history %s:\n%s", rolloutAddon, table)
	for _, p := range want.Placements {
		if !strings.Contains(table, "PLACEMENT "+p.Placement) {
			t.Errorf("addonops history does not show placement %s", p.Placement)
		}
		for _, v := range p.Versions {
			if !strings.Contains(table, v.ID) {
				t.Errorf("addonops history does not show version %s of %s", v.ID, p.Placement)
			}
		}
	}
}

// historyTable formats a record for the test log.
func historyTable(rec *history.Record) string {
	var b strings.Builder
	for _, p := range rec.Placements {
		fmt.Fprintf(&b, "\n  %s", p.Placement)
		for n, v := range p.Versions {
			var names []string
			for _, c := range v.Configs {
				names = append(names, c.Name)
			}
			fmt.Fprintf(&b, "\n    %d %s %s %-8s completed=%v ended=%v %s %s", n+1, v.ID, strings.Join(names, ","), v.Kind,
				v.Completed != nil, v.Ended != nil, v.Result, v.Message)
		}
	}
	return b.String()
}
