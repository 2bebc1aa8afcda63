package localhub

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/addonops/addonops/internal/testing/childproc"
)

// modulePath is the addonops module; its go.mod marks the repository root.
const modulePath = "github.com/addonops/addonops"

// Where the binaries are looked for when no option or variable names them.
const (
	defaultEtcd      = "/usr/bin/etcd"
	apiServerRelPath = "bin/kube-apiserver"
)

type binaries struct {
	etcd, apiserver string
}

// findBinaries resolves both binaries and fails with one message naming every missing one, where it
// was looked for and the make target that provides it.
func findBinaries(opts Options) (binaries, error) {
	var b binaries
	var problems []string

	b.etcd = opts.EtcdPath
	source := "Options.EtcdPath"
	if b.etcd == "" {
		b.etcd, source = os.Getenv("ADDONOPS_ETCD"), "$ADDONOPS_ETCD"
	}
	if b.etcd == "" {
		b.etcd, source = defaultEtcd, ""
	}
	if err := childproc.CheckExecutable(b.etcd); err != nil {
		if source == "" {
			problems = append(problems, fmt.Sprintf("etcd: %s %v. Install Debian's etcd-server with `make etcd`, "+
				"or set $ADDONOPS_ETCD to an etcd binary.", b.etcd, err))
		} else {
			problems = append(problems, fmt.Sprintf("etcd: %s (from %s) %v. Fix or unset %s; `make etcd` installs "+
				"Debian's etcd-server at %s.", b.etcd, source, err, source, defaultEtcd))
		}
	}

	b.apiserver = opts.APIServerPath
	source = "Options.APIServerPath"
	if b.apiserver == "" {
		b.apiserver, source = os.Getenv("ADDONOPS_KUBE_APISERVER"), "$ADDONOPS_KUBE_APISERVER"
	}
	if b.apiserver == "" {
		source = ""
		if root, err := RepoRoot(opts.RepoRoot); err != nil {
			problems = append(problems, fmt.Sprintf("kube-apiserver: cannot look for %s: %v. Run from the "+
				"repository, or set $ADDONOPS_KUBE_APISERVER to a kube-apiserver binary.", apiServerRelPath, err))
		} else {
			b.apiserver = filepath.Join(root, apiServerRelPath)
		}
	}
	if b.apiserver != "" {
		if err := childproc.CheckExecutable(b.apiserver); err != nil {
			if source == "" {
				problems = append(problems, fmt.Sprintf("kube-apiserver: %s %v. Build it with `make bin/kube-apiserver` "+
					"at the repository root (about 10 minutes the first time), or set $ADDONOPS_KUBE_APISERVER "+
					"to a kube-apiserver binary.", b.apiserver, err))
			} else {
				problems = append(problems, fmt.Sprintf("kube-apiserver: %s (from %s) %v. Fix or unset %s; "+
					"`make bin/kube-apiserver` builds %s at the repository root.", b.apiserver, source, err, source, apiServerRelPath))
			}
		}
	}

	if len(problems) > 0 {
		return b, fmt.Errorf("localhub: missing hub binaries (`make hub-binaries` builds or installs both):\n  %s",
			strings.Join(problems, "\n  "))
	}
	return b, nil
}

// RepoRoot returns root if it is set (an Options.RepoRoot), else the nearest directory above the
// working directory whose go.mod declares the addonops module: `go test` runs in the package's
// directory, the demo at the root. The packages that find their binaries under the repository's
// bin/ (this one, ocmhub) share it.
func RepoRoot(root string) (string, error) {
	if root != "" {
		return root, nil
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
