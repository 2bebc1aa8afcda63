package rolloutbench

import (
	"slices"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/testing/apiaudit"
	"github.com/addonops/addonops/internal/testing/simagent"
)

// Template mode: the same template add-on rolled out, install then upgrade, once by OCM's
// addon-manager and once by addonops-controller --deploy-templates, each on a fresh hub set up the
// same way; the simulated work agent (internal/testing/simagent, WorkAgentOnly) applies the works the
// manager writes and reports Applied, Available and the Deployment's status feedback as OCM's
// work agent does. Each manager reaches the API server as its own user, so the API server's audit
// log (internal/testing/apiaudit) counts its requests and nobody else's.
//
// Why not both managers on one hub at once: OCM's addon-manager renders every template add-on,
// whatever its lifecycle annotation (its per-add-on template managers run in addonops' default
// mode too); next to --deploy-templates both would write the same works
// (docs/design/addon-template.md#who-deploys-a-template-add-on). So each run has one manager
// deploying the add-on, as on a real hub.

// managerKind is who deploys the add-on, and for addonops the add-on's health soak.
type managerKind struct {
	ocm bool
	// soak is addonops' health soak for the add-on (rolloutplan.HealthSoakAnnotation on its CMA),
	// "" for the controller's default (rolloutplan.DefaultHealthSoak). OCM has no soak: its
	// Completed does not wait for health at all; addonops with a soak of 0s still waits until the
	// agent is healthy on the new work generation, and only drops the time it must stay so.
	soak string
}

var (
	byOCM      = managerKind{ocm: true}
	byAddonops = managerKind{}
)

func (m managerKind) label() string {
	switch {
	case m.ocm:
		return "OCM v1.2.1 addon-manager"
	case m.soak != "":
		return "addonops, health soak " + m.soak + envLabel()
	}
	return "addonops --deploy-templates" + envLabel()
}

// envLabel names the controller's own environment (-controller-env) in its rows.
func envLabel() string {
	if *controllerEnv == "" {
		return ""
	}
	return " " + *controllerEnv
}

// phase indexes: requests before the CMA exists (start-up, cache sync), install, upgrade.
const (
	phaseStartup = iota
	phaseInstall
	phaseUpgrade
	phases
)

// usage is what the machine did during one phase: CPU seconds of each process and the machine's
// idle time (both cores, whatever else runs on them).
type usage struct {
	wall                            time.Duration
	manager, apiserver, etcd, bench float64
	machineBusy, machineIdle        float64
	load                            string // load averages at the phase's start
}

type templateResult struct {
	manager     managerKind
	n           int
	install     time.Duration
	upgrade     time.Duration
	mcasDone    [phases]time.Duration // when the last MCA reported done, from the phase's start
	use         [phases]usage
	requests    [phases]apiaudit.Counts
	failed      [phases]apiaudit.Counts // refused or failed requests (409 Conflict...)
	cpuTotal    float64
	peakRSSMB   float64
	agent       simagent.Stats
	managerLog  string
	auditEvents int
	bounds      [phases + 1]time.Time // phase p runs from bounds[p] to bounds[p+1]
}

// mcaWrites is every write to an MCA or one of its subresources; workWrites every write to a
// ManifestWork (the managers never write a work's status: the work agent does).
func isMCA(key string) bool  { return strings.HasPrefix(key, "managedclusteraddons") }
func isWork(key string) bool { return strings.HasPrefix(key, "manifestworks") }
func isWrite(key string) bool {
	verb := key[strings.LastIndexByte(key, ' ')+1:]
	return slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, verb)
}

// writes counts the writes of phase p the API server accepted (the ones that changed an object,
// what a watch sees); refused counts the others (mostly 409 Conflict: a write from a stale copy).
func (r *templateResult) writes(p int, match func(string) bool) int {
	return r.requests[p].Sum(func(k string) bool { return isWrite(k) && match(k) }) - r.refused(p, match)
}

func (r *templateResult) refused(p int, match func(string) bool) int {
	return r.failed[p].Sum(func(k string) bool { return isWrite(k) && match(k) })
}

func (r *templateResult) perCluster(v int) float64 { return float64(v) / float64(r.n) }

// Columns of a row of the comparison table.
const (
	colInstall = iota
	colUpgrade
	colMCAInstall
	colMCAUpgrade
	colWorkInstall
	colWorkUpgrade
	colRequestsInstall
	colRequestsUpgrade
	colCPUInstall
	colCPUUpgrade
	colCPUTotal
	colRSS
	columns
)

// row is r's figures in the table's columns.
func row(r *templateResult) []float64 {
	v := make([]float64, columns)
	v[colInstall], v[colUpgrade] = r.install.Seconds(), r.upgrade.Seconds()
	v[colMCAInstall], v[colMCAUpgrade] = r.perCluster(r.writes(phaseInstall, isMCA)), r.perCluster(r.writes(phaseUpgrade, isMCA))
	v[colWorkInstall], v[colWorkUpgrade] = r.perCluster(r.writes(phaseInstall, isWork)), r.perCluster(r.writes(phaseUpgrade, isWork))
	v[colRequestsInstall], v[colRequestsUpgrade] = r.perCluster(r.requests[phaseInstall].Sum(all)), r.perCluster(r.requests[phaseUpgrade].Sum(all))
	v[colCPUInstall], v[colCPUUpgrade], v[colCPUTotal] = r.use[phaseInstall].manager, r.use[phaseUpgrade].manager, r.cpuTotal
	v[colRSS] = r.peakRSSMB
	return v
}

// medianRows is, per manager (the rounds run the same managers in the same order), the median of
// each figure over the rounds, and the highest peak RSS: a memory budget is about the worst run.
func medianRows(rounds [][]*templateResult) [][]float64 {
	out := make([][]float64, len(rounds[0]))
	for i := range out {
		var rows [][]float64 // manager i's row in each round
		for _, results := range rounds {
			rows = append(rows, row(results[i]))
		}
		out[i] = make([]float64, columns)
		for c := range columns {
			var vs []float64
			for _, v := range rows {
				vs = append(vs, v[c])
			}
			if c == colRSS {
				out[i][c] = slices.Max(vs)
			} else {
				out[i][c] = median(vs)
			}
		}
	}
	return out
}

// median of vs: the middle one, or the mean of the two in the middle.
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// processCPU is the CPU seconds every process of the run spent in u: the manager, kube-apiserver,
// etcd, and the simulated agent with the benchmark.
func (u usage) processCPU() float64 { return u.manager + u.apiserver + u.etcd + u.bench }

// cpuRatio compares addonops' phase p with OCM's by CPU: ratio is OCM's processes' CPU over
// addonops'; ceiling is OCM's over addonops' without its manager, the ratio a manager that used no
// CPU at all would reach. On a machine both runs keep busy, wall time is CPU over cores, so ratio
// is what the wall times can show and ceiling the most any manager making addonops' writes could.
func cpuRatio(ocm, ours *templateResult, p int) (ratio, ceiling float64) {
	o, a := ocm.use[p].processCPU(), ours.use[p].processCPU()
	return o / a, o / (a - ours.use[p].manager)
}

func all(string) bool { return true }
