//go:build integration

package readmetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// knownPrograms may start a README command. The product's own binaries and make are checked for
// real subcommands, flags and targets; the others are run where the block is marked run and only
// named here (a README may not tell users to run a program this list does not know).
var knownPrograms = []string{"kubectl", "kustomize", "kpt", "go", "git", "cp", "install", "flux", "docker", "skopeo", "source", "export", "tar", "sha256sum"}

// productBinaries are the commands built from this repository, with the package they come from.
var productBinaries = map[string]bool{"addonops": true, "addonops-controller": true, "config-hash": true, "addon-template": true, "rollout-strategy": true}

var (
	helpMu    sync.Mutex
	helpCache = map[string]string{}
)

// help returns what `BINARY ARGS... --help` prints (stdout and stderr), from the fresh binaries.
func help(t testing.TB, binary string, args ...string) string {
	t.Helper()
	key := binary + " " + strings.Join(args, " ")
	helpMu.Lock()
	defer helpMu.Unlock()
	if h, ok := helpCache[key]; ok {
		return h
	}
	out, _ := exec.Command(filepath.Join(tools(t), binary), append(args, "--help")...).CombinedOutput() // Go's flag package exits 0 or 2 on --help
	helpCache[key] = string(out)
	return string(out)
}

// checkCommand checks one command line (pipes, && and ; split into commands) of a README: its
// program is known, and the product binaries' subcommands and flags and make's targets are real.
func checkCommand(t testing.TB, file string, line int, cmd string) {
	t.Helper()
	cmd = strings.ReplaceAll(cmd, `\|`, "|") // a | escaped in a markdown table
	for _, part := range regexp.MustCompile(`\s+(\|\||\||&&|;)\s+`).Split(cmd, -1) {
		words := strings.Fields(part)
		for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
			words = words[1:] // VAR=value before the program
		}
		if len(words) == 0 {
			continue
		}
		if words[0] == "kubectl" && len(words) > 1 && words[1] == "addonops" {
			words = words[1:] // the kubectl plugin is the addonops binary
		}
		prog := strings.TrimPrefix(words[0], "bin/")
		prog = strings.TrimPrefix(prog, "kubectl-")
		switch {
		case prog == "make":
			checkMake(t, file, line, words[1:])
		case productBinaries[prog]:
			checkProduct(t, file, line, prog, words[1:])
		case slices.Contains(knownPrograms, words[0]):
		case isRepoScript(words[0]):
		default:
			t.Errorf("%s:%d: `%s`: unknown program %q: a README command must run a product binary, make, or one of %q (add it to readmetest's knownPrograms if users really need it)", file, line, part, words[0], knownPrograms)
		}
	}
}

// isRepoScript reports whether prog is an executable script of the repository named by its path
// from the root (hack/render.sh), which users run from a checkout.
func isRepoScript(prog string) bool {
	if !strings.Contains(prog, "/") || filepath.IsAbs(prog) || strings.HasPrefix(prog, "bin/") {
		return false
	}
	fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(prog)))
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

var targetRE = regexp.MustCompile(`(?m)^([a-zA-Z0-9_./-]+)( [a-zA-Z0-9_./ -]+)?:`)

var (
	targetsOnce sync.Once
	targets     []string
)

// makeTargets are the targets of the Makefile and the .mk files it includes.
func makeTargets(t testing.TB) []string {
	t.Helper()
	targetsOnce.Do(func() {
		files, _ := filepath.Glob(filepath.Join(root, "*/*/*.mk"))
		files = append(files, filepath.Join(root, "Makefile"))
		more, _ := filepath.Glob(filepath.Join(root, "*/*.mk"))
		deeper, _ := filepath.Glob(filepath.Join(root, "*/*/*/*.mk"))
		for _, f := range append(append(files, more...), deeper...) {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, m := range targetRE.FindAllStringSubmatch(string(b), -1) {
				targets = append(targets, m[1])
				targets = append(targets, strings.Fields(m[2])...)
			}
		}
	})
	return targets
}

func checkMake(t testing.TB, file string, line int, args []string) {
	t.Helper()
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "=") || strings.Contains(a, `"`) {
			continue
		}
		if !slices.Contains(makeTargets(t), a) {
			t.Errorf("%s:%d: `make %s`: the Makefile has no target %q (`make help` lists them): fix the README or add the target", file, line, strings.Join(args, " "), a)
		}
		break // only the first word names a target; the rest of an inline span is prose
	}
}

var flagRE = regexp.MustCompile(`^--?[a-zA-Z][a-zA-Z0-9-]*`)

// checkProduct checks a product binary's subcommands and flags against its --help.
func checkProduct(t testing.TB, file string, line int, prog string, args []string) {
	t.Helper()
	var path []string
	h := help(t, prog)
	for i, a := range args {
		a = strings.Trim(a, "[]")
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if i != len(path) || a != strings.ToLower(a) || !regexp.MustCompile(`^[a-z][a-z|-]*$`).MatchString(a) {
			break // an argument (ADDON, FILE, a name), not a subcommand
		}
		cobra := strings.Contains(h, "[command]") // a command with subcommands (addonops)
		if !cobra && !strings.Contains(h, prog+" "+a+" ") {
			break // no subcommand of that name in the usage: a plain argument
		}
		ok := true
		for _, alt := range strings.Split(a, "|") {
			if cobra && !regexp.MustCompile(`(?m)^\s+`+regexp.QuoteMeta(alt)+`\s`).MatchString(h) {
				ok = false
				t.Errorf("%s:%d: `%s %s`: %s has no subcommand %q (see `%s --help`): fix the README, or the product", file, line, prog, strings.Join(args, " "), prog, alt, strings.TrimSpace(prog+" "+strings.Join(path, " ")))
			}
		}
		if !ok || strings.Contains(a, "|") {
			break
		}
		path = append(path, a)
		h = help(t, prog, path...)
	}
	// The flags of every alternative subcommand: check against the first one's help plus the
	// binary's own.
	for _, a := range args {
		for _, w := range strings.Split(strings.Trim(a, "[]"), "|") {
			name := flagRE.FindString(w)
			if name == "" || name == "-" || name == "--" {
				continue
			}
			bare := strings.TrimLeft(name, "-")
			if !regexp.MustCompile(`(^|[\s,\[])--?` + regexp.QuoteMeta(bare) + `([\s=,\]]|$)`).MatchString(h) {
				t.Errorf("%s:%d: `%s %s`: flag %s is not in `%s --help`: the flag was renamed or removed; fix the README (or the product)", file, line, prog, strings.Join(args, " "), name, strings.TrimSpace(prog+" "+strings.Join(path, " ")))
			}
		}
	}
}

var (
	spanRE       = regexp.MustCompile("`([^`]+)`")
	inlineProgRE = regexp.MustCompile(`^(kubectl addonops|addonops|addonops-controller|bin/config-hash|bin/addon-template|bin/rollout-strategy|config-hash|addon-template|rollout-strategy|make) `)
)

// TestInlineCommands checks the commands written inline in prose (code spans starting with a
// product binary or make): real subcommands, flags and targets.
func TestInlineCommands(t *testing.T) {
	n := 0
	for _, f := range markdownFiles(t) {
		lines := strings.Split(f.text, "\n")
		for _, b := range f.blocks { // blank out the blocks: only prose is read here
			for i := b.Line - 1; i < b.Line+strings.Count(b.Content, "\n")+1 && i < len(lines); i++ {
				lines[i] = ""
			}
		}
		prose := strings.Join(lines, "\n")
		for _, m := range spanRE.FindAllStringSubmatchIndex(prose, -1) {
			span := strings.Join(strings.Fields(prose[m[2]:m[3]]), " ")
			if !inlineProgRE.MatchString(span) {
				continue
			}
			if strings.HasPrefix(span, "config-hash ") || strings.HasPrefix(span, "addon-template ") || strings.HasPrefix(span, "rollout-strategy ") {
				if w := strings.Fields(span); len(w) < 2 || !strings.HasPrefix(w[1], "-") && w[1] != "render" {
					continue // prose naming the function ("config-hash after it"), not a command
				}
			}
			n++
			checkCommand(t, f.path, 1+strings.Count(prose[:m[0]], "\n"), span)
		}
	}
	if n == 0 {
		t.Fatal("no inline commands found: the reader of code spans is broken")
	}
	t.Logf("%d inline commands checked", n)
}

// TestCheckCommandCatchesDrift makes sure the command checks can fail: a renamed flag, an unknown
// subcommand, a missing make target and an unknown program are each reported.
func TestCheckCommandCatchesDrift(t *testing.T) {
	for _, bad := range []string{
		"addonops pause hello --placemnt default/p",
		"addonops suspend hello",
		"addonops-controller --kubeconfig hub.kubeconfig --addon=all",
		"bin/addon-template render --clusters c1 FILE",
		"make tests",
		"helm install x",
		"hack/render-all.sh out pkg",
		"README.md out",
	} {
		r := &recorder{TB: t}
		checkCommand(r, "X.md", 1, bad)
		t.Logf("%s: %s", bad, r.msgs)
		if len(r.msgs) == 0 {
			t.Errorf("checkCommand accepted %q", bad)
		}
	}
	for _, good := range []string{
		"addonops pause|resume|promote|retry|abort ADDON",
		"addonops history ADDON [--placement NS/NAME] [-n NS] [-o json|yaml]",
		"addonops abort ADDON --auto=true|false",
		"addonops-controller --kubeconfig hub.kubeconfig --addons=all",
		"bin/addon-template render --cluster c1 --output ManifestWork FILE",
		"kustomize build config/default | kubectl apply --server-side -f -",
		"make demo DEMO_FLAGS=\"--clusters 2000\"",
		"hack/render.sh rendered examples/hello-template",
	} {
		checkCommand(t, "X.md", 1, good)
	}
}

// recorder keeps the errors reported to it instead of failing the test.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
