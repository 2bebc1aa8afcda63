package ocmhub

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// modulePath is the addonops module; its go.mod marks the repository root, below which bin/ holds
// the OCM binaries.
const modulePath = "github.com/addonops/addonops"

// binary is one OCM command this package runs, with where it is looked for and how it is built.
type binary struct {
	name    string // in messages: "placement controller", "work agent"
	relPath string // below the repository root
	env     string // variable that overrides the path
}

var (
	placementBinary = binary{name: "OCM placement controller", relPath: "bin/ocm-placement", env: "ADDONOPS_OCM_PLACEMENT"}
	workBinary      = binary{name: "OCM work agent", relPath: "bin/ocm-work", env: "ADDONOPS_OCM_WORK"}
)

// resolve returns the binary's path: explicit (an Options field), else $env, else relPath under the
// repository root. The error names the binary, where it was looked for and the make target that
// builds it.
func (b binary) resolve(explicit, repoRootOpt string) (string, error) {
	path, source := explicit, "Options"
	if path == "" {
		path, source = os.Getenv(b.env), "$"+b.env
	}
	if path == "" {
		source = ""
		root, err := repoRoot(repoRootOpt)
		if err != nil {
			return "", fmt.Errorf("%s: cannot look for %s: %w. Run from the addonops repository, or set $%s "+
				"to the binary", b.name, b.relPath, err, b.env)
		}
		path = filepath.Join(root, b.relPath)
	}
	if err := checkExecutable(path); err != nil {
		if source != "" {
			return "", fmt.Errorf("%s: %s (from %s) %v. Fix or unset %s; `make %s` builds %s at the repository root",
				b.name, path, source, err, source, b.relPath, b.relPath)
		}
		return "", fmt.Errorf("%s: %s %v. Build it with `make %s` (or `make ocm-binaries` for both OCM binaries) "+
			"at the repository root: about 7.5 minutes the first time, or set $%s to the binary",
			b.name, path, err, b.relPath, b.env)
	}
	return path, nil
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		return fmt.Errorf("not found")
	}
	if err != nil {
		return err
	}
	if info.IsDir() {
		return fmt.Errorf("is a directory, not a binary")
	}
	if info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("is not executable (mode %s)", info.Mode().Perm())
	}
	return nil
}

// repoRoot returns opt, or the nearest directory above the working directory whose go.mod declares
// the addonops module: `go test` runs in the package's directory, the demo at the root.
// (internal/localhub has the same search, unexported.)
func repoRoot(opt string) (string, error) {
	if opt != "" {
		return opt, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("reading the working directory: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if declaresModule(filepath.Join(dir, "go.mod"), modulePath) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod declaring module %s in %s or above it", modulePath, wd)
		}
	}
}

func declaresModule(goMod, module string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == module
		}
	}
	return false
}
