package rolloutbench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/addonops/addonops/internal/rolloutplan"
	"github.com/addonops/addonops/internal/testing/localhub"
)

var (
	clustersFlag   = flag.String("clusters", "1000", "comma-separated cluster counts")
	strategiesFlag = flag.String("strategies", "all,progressive", "comma-separated strategies: all, progressive (25%)")
	controllerBin  = flag.String("controller", "", "controller binary (default: bin/addonops-controller of the repository)")
	controllerArgs = flag.String("controller-args", "--workers=16 --write-parallelism=32 --kube-api-qps=2000 --kube-api-burst=4000", "extra controller flags")
	controllerEnv  = flag.String("controller-env", "", "environment variables added to the controller's only, e.g. GOGC=50 (the API server and the benchmark keep theirs)")
	moreArgs       = flag.String("more-controller-args", "", "controller flags added to -controller-args, e.g. --deploy-templates (its caches and reconcilers run; the bench's add-on has no AddOnTemplate, so they deploy nothing)")
	modeFlag       = flag.String("mode", "rollout", "rollout: an add-on without AddOnTemplate, the simulated add-on manager renders its works; "+
		"template: a template add-on deployed by addonops-controller --deploy-templates (and by OCM's addon-manager with -peer=ocm), the simulated work agent reporting status feedback")
	peerFlag        = flag.String("peer", "", "template mode: \"ocm\" also runs the scenario with OCM's addon-manager (bin/ocm-addon) deploying the add-on, and prints the ratios")
	peerMaxClusters = flag.Int("peer-max-clusters", 1000, "template mode: run the peer only for cluster counts up to this")
	ocmArgs         = flag.String("ocm-args", "--kube-api-qps=2000 --kube-api-burst=4000", "template mode: extra flags of OCM's addon-manager (the client rate limits -controller-args gives addonops)")
	apiProfileFlag  = flag.String("apiserver-profile", "", "template mode: a folder to write a CPU profile of kube-apiserver into for each manager and phase (its first -apiserver-profile-seconds), to see where the API server's time goes")
	apiProfileSecs  = flag.Int("apiserver-profile-seconds", 20, "template mode: how long each -apiserver-profile runs from the phase's start")
	roundsFlag      = flag.Int("rounds", 1, "template mode: run every manager this many times, one after the other in each round (so the peer and addonops are measured minutes apart, not a whole series apart), print each round, then the medians and every round's ratios: one round's ratio moves with the machine and with the peer's own spread")
	soaksFlag       = flag.String("soaks", "default", "template mode: comma-separated health soaks addonops runs the add-on with, one run each: \"default\" (the controller's, "+rolloutplan.DefaultHealthSoak.String()+") or a Go duration set on the CMA (addonops.io/health-soak), e.g. default,0s")
)

func TestMain(m *testing.M) { os.Exit(localhub.RunTests(m)) }

// watchFunc adapts a watch call to client-go's WatcherWithContext.
type watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

func (f watchFunc) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, o)
}

// controllerProcess is bin/addonops-controller running against the hub.
type controllerProcess struct {
	cmd     *exec.Cmd
	log     string
	done    chan struct{}
	waitErr error
	once    sync.Once
	cpuSecs float64
	// stuck: it did not stop within 30s of SIGTERM (its log has its goroutines).
	stuck bool
}

// peakRSSMB reads VmHWM, the process's peak resident set.
func (p *controllerProcess) peakRSSMB() float64 { return peakRSSMBOf(p.cmd.Process.Pid) }

// peakRSSMBOf reads a process's VmHWM.
func peakRSSMBOf(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
