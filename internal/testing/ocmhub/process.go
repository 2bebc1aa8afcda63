package ocmhub

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/addonops/addonops/internal/testing/childproc"
)

// process is one OCM component running as a child process, its output in a log file (see childproc
// for why it dies with the process that started it).
type process struct{ *childproc.Process }

// launch starts an OCM command with its log in dir/<name>.log ("placement",
// "work-agent-cluster1"), the command line at its head.
//
// TMPDIR points into dir: OCM's commands (openshift/library-go's controllercmd) write a self-signed
// serving certificate to a fresh temporary directory at every start and never remove it.
func launch(name, path string, args []string, dir string) (*process, error) {
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", tmp, err)
	}
	p, err := childproc.Start(childproc.Spec{
		Name: name, Path: path, Args: args, Dir: dir,
		Env:        append(os.Environ(), "TMPDIR="+tmp),
		LogCommand: true,
	})
	if err != nil {
		return nil, fmt.Errorf("ocmhub: %w", err)
	}
	return &process{p}, nil
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits until the process is
// reaped. SIGTERM matters: on it OCM's commands release their leader-election lease, so the next
// process for the same component (a restarted agent, the next test's placement controller) takes
// over at once instead of waiting up to 2m17s for the lease to expire. A process that had to be
// killed is an error: Stop keeps the logs then.
func (p *process) stop(grace time.Duration) error {
	if err := p.Stop(grace); err != nil {
		return fmt.Errorf("ocmhub: %w", err)
	}
	return nil
}

// failure describes a process that exited or never became ready, quoting the end of its log.
func (p *process) failure(what string) error {
	return fmt.Errorf("ocmhub: %s %s; last lines of %s:\n%s", p.Name, what, p.LogPath, childproc.Tail(p.LogPath, 25))
}

// waitReady polls ready until it returns nil, the process exits or ctx ends (childproc's
// WaitReady).
func (p *process) waitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	if err := p.WaitReady(ctx, interval, ready); err != nil {
		return p.failure(err.Error())
	}
	return nil
}
