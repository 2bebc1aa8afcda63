package ocmhub

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/addonops/addonops/internal/testing/childproc"
	"github.com/addonops/addonops/internal/testing/localhub"
)

// binary is one OCM command this package runs, with where it is looked for and how it is built.
type binary struct {
	name    string // in messages: "placement controller", "work agent"
	relPath string // below the repository root
	env     string // variable that overrides the path
}

var (
	placementBinary = binary{name: "OCM placement controller", relPath: "bin/ocm-placement", env: "ADDONOPS_OCM_PLACEMENT"}
	workBinary      = binary{name: "OCM work agent", relPath: "bin/ocm-work", env: "ADDONOPS_OCM_WORK"}
	addonBinary     = binary{name: "OCM addon-manager", relPath: "bin/ocm-addon", env: "ADDONOPS_OCM_ADDON"}
)

// resolve returns the binary's path: explicit (an Options field), else $env, else relPath under the
// repository root (localhub.RepoRoot). The error names the binary, where it was looked for and the
// make target that builds it.
func (b binary) resolve(explicit, repoRootOpt string) (string, error) {
	path, source := explicit, "Options"
	if path == "" {
		path, source = os.Getenv(b.env), "$"+b.env
	}
	if path == "" {
		source = ""
		root, err := localhub.RepoRoot(repoRootOpt)
		if err != nil {
			return "", fmt.Errorf("%s: cannot look for %s: %w. Run from the addonops repository, or set $%s "+
				"to the binary", b.name, b.relPath, err, b.env)
		}
		path = filepath.Join(root, b.relPath)
	}
	if err := childproc.CheckExecutable(path); err != nil {
		if source != "" {
			return "", fmt.Errorf("%s: %s (from %s) %v. Fix or unset %s; `make %s` builds %s at the repository root",
				b.name, path, source, err, source, b.relPath, b.relPath)
		}
		return "", fmt.Errorf("%s: %s %v. Build it with `make %s` (or `make ocm-binaries` for every OCM binary) "+
			"at the repository root: about 7.5 minutes the first time, or set $%s to the binary",
			b.name, path, err, b.relPath, b.env)
	}
	return path, nil
}

// AddonBinary returns the path of OCM's addon binary (bin/ocm-addon, `make ocm-binaries`): explicit
// if set, else $ADDONOPS_OCM_ADDON, else bin/ocm-addon under the repository root (repoRoot, or the
// one above the working directory). The error names the binary, where it was looked for and how to
// build it. internal/testing/ocmwebhook runs its `webhook-server` command.
func AddonBinary(explicit, repoRoot string) (string, error) {
	return addonBinary.resolve(explicit, repoRoot)
}

// PlacementBinary returns the path of OCM's placement controller (bin/ocm-placement, `make
// bin/ocm-placement`) as Start finds it, or an error naming where it looked and how to build it: a
// caller that starts other parts first (the demo) checks it before anything runs.
func PlacementBinary(explicit, repoRoot string) (string, error) {
	return placementBinary.resolve(explicit, repoRoot)
}
