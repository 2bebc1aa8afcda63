package localhub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/addonops/addonops/internal/testing/childproc"
)

// loopback is the only address the hub listens on.
const loopback = "127.0.0.1"

// errPortTaken marks a start that failed because another process bound a port between childproc.FreePorts
// choosing it and our process binding it; Start retries with new ports.
var errPortTaken = errors.New("port already in use")

// process is etcd or kube-apiserver, its output in a log file in the hub directory (see childproc
// for why the hub's processes die with the process that started them).
type process struct{ *childproc.Process }

func launch(name, path string, args []string, dir string, env []string) (*process, error) {
	p, err := childproc.Start(childproc.Spec{Name: name, Path: path, Args: args, Dir: dir, Env: env})
	if err != nil {
		return nil, fmt.Errorf("localhub: %w", err)
	}
	return &process{p}, nil
}

// stop stops the process and waits until it is reaped. One that had to be killed is not an error
// here: the hub keeps no state a clean shutdown must save, and Stop removes the log with the rest
// of the hub directory.
func (p *process) stop(grace time.Duration) error {
	var killed *childproc.KilledError
	if err := p.Stop(grace); err != nil && !errors.As(err, &killed) {
		return fmt.Errorf("localhub: %w", err)
	}
	return nil
}

// failure describes a process that exited or never became ready, with the end of its log. A bind
// failure is wrapped as errPortTaken so Start can retry.
func (p *process) failure(what string) error {
	log := childproc.Tail(p.LogPath, 25)
	msg := fmt.Sprintf("localhub: %s %s; last lines of %s:\n%s", p.Name, what, p.LogPath, log)
	if strings.Contains(log, "address already in use") {
		return fmt.Errorf("%w: %s", errPortTaken, msg)
	}
	return errors.New(msg)
}

// waitReady polls ready until it returns nil, the process exits or ctx ends (childproc's
// WaitReady: one check may hang on someone else's listener on our port).
func (p *process) waitReady(ctx context.Context, interval time.Duration, ready func(context.Context) error) error {
	if err := p.WaitReady(ctx, interval, ready); err != nil {
		return p.failure(err.Error())
	}
	return nil
}

// startEtcd runs a single-member etcd with its data in dir/etcd and waits until /health is true.
func startEtcd(ctx context.Context, bin, dir string, clientPort, peerPort int) (*process, error) {
	clientURL := "http://" + loopback + ":" + strconv.Itoa(clientPort)
	peerURL := "http://" + loopback + ":" + strconv.Itoa(peerPort)
	args := []string{
		"--name=hub",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=hub=" + peerURL,
		"--initial-cluster-state=new",
		"--logger=zap",
		"--log-outputs=stderr",
	}
	p, err := launch("etcd", bin, args, dir, etcdEnv())
	if err != nil {
		return nil, err
	}
	client := &http.Client{}
	err = p.waitReady(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
			return fmt.Errorf("/health: %s %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	})
	if err != nil {
		_ = p.stop(stopGrace)
		return nil, err
	}
	return p, nil
}

// etcdEnv is our environment without ETCD_* variables: etcd reads them as flags and refuses to start
// when one conflicts with a flag we pass (a developer's ETCD_DATA_DIR, say).
func etcdEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") {
			env = append(env, kv)
		}
	}
	// etcd 3.4 refuses to run on architectures other than amd64 unless told to.
	if runtime.GOARCH != "amd64" {
		env = append(env, "ETCD_UNSUPPORTED_ARCH="+runtime.GOARCH)
	}
	return env
}

// startAPIServer runs kube-apiserver and waits until /readyz passes (all post-start hooks done,
// RBAC bootstrap policy included).
func startAPIServer(ctx context.Context, bin, dir string, args []string, c *Clients) (*process, error) {
	p, err := launch("kube-apiserver", bin, args, dir, os.Environ())
	if err != nil {
		return nil, err
	}
	rc := c.Kube.Discovery().RESTClient()
	err = p.waitReady(ctx, 200*time.Millisecond, func(ctx context.Context) error {
		body, err := rc.Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %w: %s", err, strings.TrimSpace(string(body)))
		}
		return nil
	})
	if err != nil {
		_ = p.stop(stopGrace)
		return nil, err
	}
	return p, nil
}
