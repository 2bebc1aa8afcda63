// Command bench measures config-hash the way users run it (`make bench-config-hash`): the binary
// on a generated hub package of 2,000 configs and 200 ClusterManagementAddOns, alone and with a
// real kustomize build, side by side; then the binary alone at 200, 2,000 and 20,000 configs to
// show how it grows, with its peak memory (the largest resident set of its runs) against the input's
// size. Times are medians of wall-clock runs.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/addonops/addonops/functions/config-hash/internal/benchgen"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == measureCommand {
		os.Exit(measure(os.Args[2], os.Args[3:]))
	}
	bin := flag.String("bin", "bin/config-hash", "config-hash binary to measure")
	kustomize := flag.String("kustomize", "", "kustomize binary (default: the go.mod tool, located with `go tool -n kustomize`)")
	runs := flag.Int("runs", 3, "runs of each config-hash measurement (the median is shown)")
	kustomizeRuns := flag.Int("kustomize-runs", 1, "rounds of the side-by-side comparison, each running every kustomize build once (a build takes seconds to minutes)")
	configs := flag.Int("configs", 2000, "configs in the package compared with and without kustomize (CMAs: a tenth)")
	growth := flag.String("growth", "200,2000,20000", "config counts for the growth table")
	work := flag.String("work", "", "directory for the generated packages (default: a temporary one, removed afterwards)")
	compare := flag.Bool("compare", true, "run the side-by-side comparison with kustomize build (minutes); false: the growth table only")
	flag.Parse()
	b := bench{runs: *runs, kustomizeRuns: *kustomizeRuns, compare: *compare}
	if err := b.run(*bin, *kustomize, *configs, *growth, *work); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	bin, kustomize      string
	runs, kustomizeRuns int
	compare             bool
}

func (b *bench) run(bin, kustomize string, configs int, growth, work string) error {
	var err error
	if b.bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	if _, err := os.Stat(b.bin); err != nil {
		return fmt.Errorf("config-hash binary: %w (run make build)", err)
	}
	b.kustomize = kustomize
	if b.kustomize == "" {
		out, err := exec.Command("go", "tool", "-n", "kustomize").Output()
		if err != nil {
			return fmt.Errorf("locating kustomize with `go tool -n kustomize`: %w", err)
		}
		b.kustomize = strings.TrimSpace(string(out))
	}
	if work == "" {
		if work, err = os.MkdirTemp("", "config-hash-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	var sizes []int
	for _, s := range strings.Split(growth, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 10 {
			return fmt.Errorf("-growth: %q is not a config count of at least 10", s)
		}
		sizes = append(sizes, n)
	}

	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("config-hash benchmark on %d CPUs (%s, load average %s); times are medians of %d run(s) for config-hash, %d round(s) of kustomize builds\n\n",
		runtime.NumCPU(), runtime.GOARCH, strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "), b.runs, b.kustomizeRuns)
	if b.compare {
		if err := b.compareKustomize(work, configs); err != nil {
			return err
		}
	}
	return b.grow(work, sizes)
}

// compareKustomize times config-hash and kustomize side by side on one package.
func (b *bench) compareKustomize(work string, configs int) error {
	cmas := max(1, configs/10)
	pkg, err := b.writePackage(work, configs, cmas)
	if err != nil {
		return err
	}
	// A build that silently skipped the function (no --enable-exec) would make the comparison
	// meaningless: check that this one hashed every config.
	out, err := exec.Command(b.kustomize, "build", "--enable-alpha-plugins", "--enable-exec", filepath.Join(pkg, "with-fn")).Output()
	if err != nil {
		return fmt.Errorf("kustomize build with config-hash: %w", err)
	}
	if n := strings.Count(string(out), "addonops.io/base-name:"); n != configs {
		return fmt.Errorf("kustomize build with config-hash hashed %d configs, want %d", n, configs)
	}
	build := []string{"build", "--enable-alpha-plugins", "--enable-exec"}
	rl := filepath.Join(pkg, "resourcelist.yaml")
	rows := []struct {
		label string
		runs  int
		stdin string
		cmd   []string
	}{
		{"config-hash alone (the ResourceList kustomize sends it)", b.runs, rl, []string{b.bin}},
		{"kustomize build, without config-hash", b.kustomizeRuns, "", []string{b.kustomize, "build", filepath.Join(pkg, "plain")}},
		{"kustomize build, with config-hash as exec transformer", b.kustomizeRuns, "", append([]string{b.kustomize}, append(build, filepath.Join(pkg, "with-fn"))...)},
		{"kustomize build, with `cat` as exec transformer", b.kustomizeRuns, "", append([]string{b.kustomize}, append(build, filepath.Join(pkg, "with-cat"))...)},
		{"kustomize build | config-hash (a pipe, no plugin)", b.kustomizeRuns, "", []string{"bash", "-c", `set -o pipefail; "$0" build "$1" | "$2" >/dev/null`, b.kustomize, filepath.Join(pkg, "plain"), b.bin}},
	}
	fmt.Printf("Package: %d configs (AddOnDeploymentConfigs and AddOnTemplates), %d ClusterManagementAddOns, %d references\n", configs, cmas, configs)
	// Rounds run every row once (config-hash alone: runs times), so that a change of load on a
	// shared machine hits every row alike; each row's median over the rounds is shown.
	samples := make([][]time.Duration, len(rows))
	for range max(1, b.kustomizeRuns) {
		for i, r := range rows {
			n := 1
			if r.runs == b.runs {
				n = b.runs
			}
			for range n {
				d, _, err := timeIt(1, r.stdin, r.cmd...)
				if err != nil {
					return err
				}
				samples[i] = append(samples[i], d)
			}
		}
	}
	times := make([]time.Duration, len(rows))
	for i := range rows {
		times[i] = median(samples[i])
	}
	alone, without, with, withCat, piped := times[0], times[1], times[2], times[3], times[4]
	pct := func(d time.Duration) string {
		return fmt.Sprintf("%+.0f%%", 100*(d-without).Seconds()/without.Seconds())
	}
	fmt.Printf("  %-58s %10s  %s\n", rows[0].label, secs(alone), fmt.Sprintf("(%.0f%% of the build without it)", 100*alone.Seconds()/without.Seconds()))
	fmt.Printf("  %-58s %10s\n", rows[1].label, secs(without))
	fmt.Printf("  %-58s %10s  %s vs without; ratio %.2f; target: under +20%%\n", rows[2].label, secs(with), pct(with), with.Seconds()/without.Seconds())
	fmt.Printf("  %-58s %10s  %s: what kustomize charges for any exec transformer\n", rows[3].label, secs(withCat), pct(withCat))
	fmt.Printf("  %-58s %10s  %s vs without; ratio %.2f\n\n", rows[4].label, secs(piped), pct(piped), piped.Seconds()/without.Seconds())
	return nil
}

// grow times config-hash alone at several sizes, and shows its peak memory against the input.
func (b *bench) grow(work string, sizes []int) error {
	fmt.Println("Growth of config-hash alone (CMAs = configs / 10), on the ResourceList kustomize sends it:")
	fmt.Printf("  %8s %6s %10s %10s %12s %12s %10s\n", "configs", "CMAs", "input", "time", "per config", "peak RSS", "RSS/input")
	var first time.Duration
	for _, n := range sizes {
		pkg, err := b.writePackage(filepath.Join(work, "growth"), n, max(1, n/10))
		if err != nil {
			return err
		}
		input := filepath.Join(pkg, "resourcelist.yaml")
		st, err := os.Stat(input)
		if err != nil {
			return err
		}
		d, rss, err := timeIt(b.runs, input, b.bin)
		if err != nil {
			return err
		}
		per := d / time.Duration(n)
		if first == 0 {
			first = per
		}
		fmt.Printf("  %8d %6d %10s %10s %9d µs %12s %9.1fx  (x%.2f the per-config time at %d)\n", n, max(1, n/10), mib(st.Size()), secs(d),
			per.Microseconds(), mib(rss), float64(rss)/float64(st.Size()), per.Seconds()/first.Seconds(), sizes[0])
	}
	// The floor: what the binary takes on a tiny input, mostly the Go runtime and the binary itself.
	pkg, err := b.writePackage(filepath.Join(work, "growth"), 10, 1)
	if err != nil {
		return err
	}
	_, rss, err := timeIt(1, filepath.Join(pkg, "resourcelist.yaml"), b.bin)
	if err != nil {
		return err
	}
	fmt.Printf("  peak RSS on a 10-config input (the runtime's floor): %s\n", mib(rss))
	return nil
}

func mib(bytes int64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

// writePackage generates a package under dir/<configs>: kustomizations that build the configs
// as they are (plain), through config-hash (with-fn) and through a pass-through exec transformer
// (with-cat), and the ResourceList kustomize hands the function.
func (b *bench) writePackage(dir string, configs, cmas int) (string, error) {
	pkg := filepath.Join(dir, fmt.Sprint(configs))
	hub := benchgen.Stream(configs, cmas)
	fn := func(path string) string {
		return fmt.Sprintf("apiVersion: addonops.io/v1alpha1\nkind: ConfigHash\nmetadata:\n  name: config-hash\n"+
			"  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: %s\n", path)
	}
	files := map[string]string{
		"plain/kustomization.yaml":    "resources:\n- hub.yaml\n",
		"plain/hub.yaml":              hub,
		"with-fn/kustomization.yaml":  "resources:\n- hub.yaml\ntransformers:\n- config-hash.yaml\n",
		"with-fn/hub.yaml":            hub,
		"with-fn/config-hash.yaml":    fn(b.bin),
		"with-cat/kustomization.yaml": "resources:\n- hub.yaml\ntransformers:\n- cat.yaml\n",
		"with-cat/hub.yaml":           hub,
		"with-cat/cat.yaml":           fn("/bin/cat"),
		"resourcelist.yaml":           benchgen.ResourceList(configs, cmas),
	}
	for name, content := range files {
		path := filepath.Join(pkg, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return pkg, nil
}

// timeIt runs a command runs times, stdin from a file if given, and returns the median wall time
// and the largest peak resident set size (bytes) of the runs.
//
// The peak is measured by a copy of this program started just for it ("measure"): Go starts
// commands with vfork, and Linux then counts the parent's own peak, which holds the generated
// packages, as the child's; a small measuring process has a small peak of its own.
func timeIt(runs int, stdin string, cmdline ...string) (time.Duration, int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	var times []time.Duration
	var peak int64
	for range max(1, runs) {
		cmd := exec.Command(self, append([]string{measureCommand, stdin}, cmdline...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, 0, fmt.Errorf("%s: %w\n%s", strings.Join(cmdline, " "), err, stderr.String())
		}
		times = append(times, time.Since(start))
		var rss int64
		if _, err := fmt.Sscan(stdout.String(), &rss); err != nil {
			return 0, 0, fmt.Errorf("measuring %s: %q: %w", cmdline[0], stdout.String(), err)
		}
		peak = max(peak, rss)
	}
	return median(times), peak, nil
}

const measureCommand = "measure"

// measure runs cmdline with stdin piped from the file stdin ("" for none), its output discarded,
// and prints its peak resident set size in bytes. It returns the exit code.
func measure(stdin string, cmdline []string) int {
	cmd := exec.Command(cmdline[0], cmdline[1:]...)
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		// Through a pipe, as kustomize and kpt send it (a file would let the binary size its
		// buffer from the file's size).
		cmd.Stdin = io.MultiReader(f)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "no resource usage on this system")
		return 1
	}
	fmt.Println(ru.Maxrss * 1024) // kilobytes on Linux
	return 0
}

func median(times []time.Duration) time.Duration {
	slices.Sort(times)
	return times[len(times)/2]
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }
