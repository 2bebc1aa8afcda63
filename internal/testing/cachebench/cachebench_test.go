//go:build integration

package cachebench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	"github.com/addonops/addonops/internal/testing/localhub"
)

var (
	clustersFlag = flag.String("clusters", "1000", "comma-separated cluster counts: each is a fresh hub")
	cachesFlag   = flag.String("caches", strings.Join(allCaches, ","), "comma-separated caches to measure, each in its own process: "+strings.Join(allCaches, ", "))
	updatesFlag  = flag.Int("updates", 0, "ManagedClusterAddOn status updates to time into each cache (default: one per cluster)")
	roundsFlag   = flag.Int("rounds", 1, "measure every cache this many times on each hub, the caches taking turns; the table shows each run")
	profileFlag  = flag.String("profile", "", "a folder for each child's CPU profile of its start until synced (<cache>-<clusters>.cpu.pprof); read with go tool pprof")
)

// The child process: the test binary run again with childEnv naming the cache to measure.
const (
	childEnv      = "CACHEBENCH_CHILD"
	kubeconfigEnv = "CACHEBENCH_KUBECONFIG"
	// profileEnv is the file the child writes its CPU profile to, until synced.
	profileEnv = "CACHEBENCH_CPU_PROFILE"
	// linePrefix marks the lines of the child's stdout the parent reads.
	linePrefix = "CACHEBENCH "
)

func TestMain(m *testing.M) {
	if kind := os.Getenv(childEnv); kind != "" {
		flag.Parse()
		if err := child(kind, os.Getenv(kubeconfigEnv)); err != nil {
			fmt.Fprintf(os.Stderr, "cachebench child %s: %v\n", kind, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// synced is what the child reports once its cache has synced.
type synced struct {
	SyncSeconds float64 `json:"syncSeconds"`
	// HeapMB is the live heap after two garbage collections (runtime.MemStats.HeapAlloc), HeapInuseMB
	// the heap spans in use then (live objects and the free room in their spans).
	HeapMB      float64        `json:"heapMB"`
	HeapInuseMB float64        `json:"heapInuseMB"`
	RSSMB       float64        `json:"rssMB"`
	PeakRSSMB   float64        `json:"peakRSSMB"`
	Counts      map[string]int `json:"counts"`
	// Samples are an object of each kind as cached (benchCache.samples).
	Samples map[string]string `json:"samples"`
	// SyncByKind is when each kind's informer synced, in seconds from the cache's start (client-go's
	// WaitForCacheSync polls every 100 ms).
	SyncByKind map[string]float64 `json:"syncByKind"`
}

// seen is what the child reports once every update showed in its cache.
type seen struct {
	Seconds   float64 `json:"seconds"`
	HeapMB    float64 `json:"heapMB"`
	PeakRSSMB float64 `json:"peakRSSMB"`
	// CPUSeconds is the CPU time the child spent from the go until it saw every update.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// child builds the cache, reports it synced, then waits for the parent's "go <unix nanoseconds>
// <mark> <count>" and reports when count MCAs carry mark in their Progressing condition.
func child(kind, kubeconfig string) error {
	klog.SetOutput(os.Stderr)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading the kubeconfig %s: %w", kubeconfig, err)
	}
	// The controller's flags in the controller benchmark (controller/rolloutbench).
	cfg.QPS, cfg.Burst = 2000, 4000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	if path := os.Getenv(profileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("CPU profile: %w", err)
		}
	}
	start := time.Now()
	c, err := startCache(ctx, kind, cfg)
	if err != nil {
		return err
	}
	pprof.StopCPUProfile() // a no-op without a profile
	var s synced
	s.SyncSeconds = time.Since(start).Seconds()
	s.HeapMB, s.HeapInuseMB = liveHeap()
	s.RSSMB, s.PeakRSSMB = procStatusMB("VmRSS:"), procStatusMB("VmHWM:")
	if s.Counts, err = c.counts(); err != nil {
		return err
	}
	if s.Samples, err = c.samples(); err != nil {
		return err
	}
	s.SyncByKind = c.syncSeconds()
	if err := report("synced", s); err != nil {
		return err
	}

	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return fmt.Errorf("waiting for the parent's go: %w", err)
	}
	var goNanos int64
	var mark string
	var count int
	if _, err := fmt.Sscanf(line, "go %d %s %d", &goNanos, &mark, &count); err != nil {
		return fmt.Errorf("the parent's go %q: %w", line, err)
	}
	cpu0 := cpuSelf()
	var mu sync.Mutex
	marked := map[string]bool{}
	done := make(chan struct{})
	check := func(obj any) {
		m, ok := obj.(*addonv1alpha1.ManagedClusterAddOn)
		if !ok {
			return
		}
		if cond := meta.FindStatusCondition(m.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionProgressing); cond == nil || cond.Message != mark {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !marked[m.Namespace] {
			marked[m.Namespace] = true
			if len(marked) == count {
				close(done)
			}
		}
	}
	if _, err := c.informers[kMCA].AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, cur any) { check(cur) }}); err != nil {
		return fmt.Errorf("watching MCAs: %w", err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("%d of %d updated MCAs showed in the cache before the deadline", len(marked), count)
	}
	var sn seen
	sn.Seconds = time.Since(time.Unix(0, goNanos)).Seconds()
	sn.CPUSeconds = cpuSelf() - cpu0
	sn.HeapMB, _ = liveHeap()
	sn.PeakRSSMB = procStatusMB("VmHWM:")
	return report("seen", sn)
}

// cpuSelf is the process's user and system CPU seconds so far.
func cpuSelf() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func report(what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s%s %s\n", linePrefix, what, b)
	return err
}

// liveHeap collects garbage twice (the second pass frees what finalizers of the first released)
// and returns the live heap and the heap in use, in MB.
func liveHeap() (alloc, inuse float64) {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20), float64(ms.HeapInuse) / (1 << 20)
}

// procStatusMB reads a kB field of /proc/self/status (VmRSS, VmHWM) in MB.
func procStatusMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// result is one cache's run.
type result struct {
	cache  string
	synced synced
	// writeSeconds is how long the parent took to make the updates; seen what the child reported.
	writeSeconds float64
	seen         seen
	cpuSeconds   float64
}

// BenchmarkCache fills a hub per cluster count and measures every cache on it. A benchmark, not a
// test, so `make test` does not run it: `make bench-cache` does, once (-benchtime 1x).
func BenchmarkCache(b *testing.B) {
	var t testing.TB = b
	var counts []int
	for _, s := range strings.Split(*clustersFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			t.Fatalf("-clusters: %q is not a positive number", s)
		}
		counts = append(counts, n)
	}
	caches := strings.Split(*cachesFlag, ",")
	for _, c := range caches {
		if !slices.Contains(allCaches, c) {
			t.Fatalf("-caches: unknown cache %q (want some of %v)", c, allCaches)
		}
	}
	for _, n := range counts {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { benchHub(b, n, caches) })
	}
}

func benchHub(t testing.TB, n int, caches []string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub, err := localhub.Start(ctx, localhub.Options{ExtraAPIServerArgs: []string{"--max-requests-inflight=1000", "--max-mutating-requests-inflight=1000"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := hub.Stop(); err != nil {
			t.Errorf("stopping the hub: %v", err)
		}
	}()
	cfg := rest.CopyConfig(hub.Config)
	cfg.QPS, cfg.Burst = 3000, 6000
	c, err := localhub.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := clusterNames(n)
	begin := time.Now()
	if err := populate(ctx, c, names); err != nil {
		t.Fatalf("filling the hub: %v", err)
	}
	setup := time.Since(begin)
	want := map[string]int{kCMA: 1, kMCA: n, kCluster: n, kPlacement: 1, kDecision: (n + 99) / 100, kWork: n, kADC: 2, kHistory: 3}
	k := *updatesFlag
	if k <= 0 || k > n {
		k = n
	}

	var results []result
	for round := range *roundsFlag {
		for _, cache := range caches {
			mark := fmt.Sprintf("update-%d-%s", round, cache)
			r, err := runChild(ctx, t, hub.Kubeconfig, cache, n, c, names[:k], mark)
			if err != nil {
				t.Fatalf("%s: %v", cache, err)
			}
			for kind, w := range want {
				if got := r.synced.Counts[kind]; got != w {
					t.Errorf("%s: %d %ss in the synced cache, want %d", cache, got, kind, w)
				}
			}
			// What each cache keeps of an object is the same: the memory figures compare like with like.
			for kind, j := range r.synced.Samples {
				if len(results) > 0 && comparable(results[0].synced.Samples[kind]) != comparable(j) {
					t.Errorf("%s and %s cache a %s differently:\n%s: %s\n%s: %s", results[0].cache, cache, kind, results[0].cache, results[0].synced.Samples[kind], cache, j)
				}
			}
			results = append(results, r)
		}
	}
	printTable(n, k, setup, results)
}

// updated matches what differs between caches loaded one after the other: the resourceVersion
// and the Progressing message of an MCA that an earlier run updated.
var updated = regexp.MustCompile(`"resourceVersion":"[0-9]+"|"message":"(update-[^"]*|install completed with no errors\.)"`)

func comparable(sample string) string { return updated.ReplaceAllString(sample, "") }

// runChild measures one cache in a fresh process on the hub of n clusters: its sync, then the
// status updates of the MCAs of names.
func runChild(ctx context.Context, t testing.TB, kubeconfig, cache string, n int, c *localhub.Clients, names []string, mark string) (result, error) {
	r := result{cache: cache}
	log, err := os.CreateTemp("", "cachebench-"+cache+"-*.log")
	if err != nil {
		return r, err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+cache, kubeconfigEnv+"="+kubeconfig)
	if *profileFlag != "" {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s/%s-%d.cpu.pprof", profileEnv, *profileFlag, cache, n))
	}
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, fmt.Errorf("starting the child: %w", err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if l, ok := strings.CutPrefix(s.Text(), linePrefix); ok {
				lines <- l
			} else {
				fmt.Fprintln(log, s.Text())
			}
		}
	}()
	fail := func(err error) (result, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return r, fmt.Errorf("%w (the child's log: %s, its tail:\n%s)", err, log.Name(), tail(log.Name()))
	}
	next := func(what string, v any) error {
		l, ok := <-lines
		if !ok {
			return fmt.Errorf("the child ended before it reported %s", what)
		}
		body, found := strings.CutPrefix(l, what+" ")
		if !found {
			return fmt.Errorf("the child reported %q, want %s", l, what)
		}
		return json.Unmarshal([]byte(body), v)
	}
	if err := next("synced", &r.synced); err != nil {
		return fail(err)
	}
	start := time.Now()
	if _, err := fmt.Fprintf(stdin, "go %d %s %d\n", start.UnixNano(), mark, len(names)); err != nil {
		return fail(err)
	}
	patch := statusPatch(mark)
	if err := parallel(names, func(ns string) error {
		_, err := c.Addon.AddonV1alpha1().ManagedClusterAddOns(ns).Patch(ctx, addonName, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	}); err != nil {
		return fail(fmt.Errorf("updating MCAs: %w", err))
	}
	r.writeSeconds = time.Since(start).Seconds()
	if err := next("seen", &r.seen); err != nil {
		return fail(err)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		return fail(fmt.Errorf("the child: %w", err))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.cpuSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	t.Logf("%s: log %s", cache, log.Name())
	return r, nil
}

func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil && !errors.Is(err, io.EOF) {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

func printTable(n, k int, setup time.Duration, results []result) {
	fmt.Printf("\n=== %d clusters (hub filled in %.0f s); %d MCA status updates ===\n", n, setup.Seconds(), k)
	fmt.Printf("%-19s %7s %8s %9s %9s %9s %11s %10s %10s %9s %9s\n",
		"cache", "sync s", "heap MB", "inuse MB", "RSS MB", "peak MB", "updates s", "(writes s)", "upd. CPU", "peak MB", "CPU s")
	fmt.Printf("%-19s %7s %8s %9s %9s %9s %11s %10s %10s %9s %9s\n",
		"", "", "(live)", "", "(synced)", "(synced)", "(in cache)", "", "s", "(at end)", "(total)")
	for _, r := range results {
		fmt.Printf("%-19s %7.1f %8.1f %9.1f %9.0f %9.0f %11.1f %10.1f %10.1f %9.0f %9.1f\n", r.cache, r.synced.SyncSeconds,
			r.synced.HeapMB, r.synced.HeapInuseMB, r.synced.RSSMB, r.synced.PeakRSSMB, r.seen.Seconds, r.writeSeconds, r.seen.CPUSeconds, r.seen.PeakRSSMB, r.cpuSeconds)
	}
	fmt.Println("informers synced after (s):")
	for _, r := range results {
		var parts []string
		for _, kind := range slices.Sorted(maps.Keys(r.synced.SyncByKind)) {
			parts = append(parts, fmt.Sprintf("%s %.1f", kind, r.synced.SyncByKind[kind]))
		}
		fmt.Printf("  %-19s %s\n", r.cache, strings.Join(parts, ", "))
	}
}
