package krmfntest

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/addonops/addonops/internal/testing/ssapply"
)

// BuildArgs are kustomize's arguments for a package whose kustomization runs addonops functions:
// without --enable-exec kustomize silently skips them (config-hash among them).
var BuildArgs = []string{"build", "--enable-alpha-plugins", "--enable-exec"}

// BuildObjects runs kustomize (a path, or the words of a command such as `go tool kustomize`)
// with BuildArgs on dir, from root, with env (nil: the test's own; PATH must find the functions
// the kustomization runs), and decodes what it prints: the objects, and the YAML as printed. The
// build runs in a process group of its own, killed whole when ctx ends: kustomize starts the
// functions, and `go tool` starts kustomize.
func BuildObjects(ctx context.Context, kustomize []string, root, dir string, env []string) ([]*unstructured.Unstructured, []byte, error) {
	args := append(append(append([]string{}, kustomize[1:]...), BuildArgs...), dir)
	cmd := exec.CommandContext(ctx, kustomize[0], args...)
	what := strings.Join(append(kustomize[:1:1], args...), " ")
	cmd.Dir = root
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("%s (in %s): %w\n%s", what, root, err, strings.TrimSpace(stderr.String()))
	}
	objs, err := ssapply.Decode(bytes.NewReader(stdout.Bytes()))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the output of %s: %w", what, err)
	}
	if len(objs) == 0 {
		return nil, nil, fmt.Errorf("%s printed no objects", what)
	}
	return objs, stdout.Bytes(), nil
}
