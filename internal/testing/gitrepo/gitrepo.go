// Package gitrepo is a Git repository on disk for the GitOps end-to-end tests: the examples
// committed step by step as a user's repository would hold them, reverted with `git revert`, and
// served over Git's smart HTTP protocol to Argo CD's repo-server and Flux's source-controller.
//
// It drives the git command (Debian's git package) rather than a Go implementation: the
// repository must be exactly what a user's `git commit` and `git revert` make, and
// git-http-backend is the server Git itself ships.
package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Repo is a non-bare Git repository with a work tree.
type Repo struct {
	// Dir is the work tree's absolute path.
	Dir string
}

// New makes dir (created if missing) a Git repository on branch main, with a committer identity
// of its own so that no global Git configuration is needed or read.
func New(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("git repository %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("git repository %s: %w", abs, err)
	}
	r := &Repo{Dir: abs}
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"config", "user.name", "addonops e2e"},
		{"config", "user.email", "e2e@addonops.invalid"},
		{"config", "commit.gpgsign", "false"},
		// Served over HTTP by git-http-backend, which refuses pushes by default and serves
		// only repositories that say so.
		{"config", "http.receivepack", "false"},
	} {
		if _, err := r.git(args...); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(abs, ".git", "git-daemon-export-ok"), nil, 0o644); err != nil {
		return nil, fmt.Errorf("git repository %s: %w", abs, err)
	}
	return r, nil
}

// FileURL is the repository's file:// URL.
func (r *Repo) FileURL() string { return "file://" + r.Dir }

// WriteFile writes data to path, relative to the work tree, creating its directories.
func (r *Repo) WriteFile(path string, data []byte) error {
	full, err := r.inside(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("writing %s in %s: %w", path, r.Dir, err)
	}
	if err := os.WriteFile(full, data, 0o644); err != nil {
		return fmt.Errorf("writing %s in %s: %w", path, r.Dir, err)
	}
	return nil
}

// Remove deletes path (a file or a directory), relative to the work tree.
func (r *Repo) Remove(path string) error {
	full, err := r.inside(path)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(full); err != nil {
		return fmt.Errorf("removing %s in %s: %w", path, r.Dir, err)
	}
	return nil
}

// CopyTree copies the directory src (an absolute path, or relative to the current directory)
// into the work tree at dst, replacing what dst held: regular files keep their mode bits, symbolic
// links and other special files are refused (a repository of manifests has none).
func (r *Repo) CopyTree(src, dst string) error {
	target, err := r.inside(dst)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(target); err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("copying %s: %w", src, err)
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(target, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("copying %s: %w", path, err)
			}
			info, err := d.Info()
			if err != nil {
				return fmt.Errorf("copying %s: %w", path, err)
			}
			return os.WriteFile(out, data, info.Mode().Perm())
		default:
			return fmt.Errorf("copying %s: %s is not a regular file or directory", src, path)
		}
	})
}

// Commit records every change of the work tree (`git add -A && git commit`) and returns the new
// commit's full SHA. A commit that changes nothing is an error: each step of a test is a change.
func (r *Repo) Commit(msg string) (string, error) {
	if _, err := r.git("add", "-A"); err != nil {
		return "", err
	}
	if _, err := r.git("commit", "--quiet", "-m", msg); err != nil {
		return "", err
	}
	return r.Head()
}

// Revert makes the commit `git revert --no-edit sha` makes and returns its full SHA.
func (r *Repo) Revert(sha string) (string, error) {
	if _, err := r.git("revert", "--no-edit", sha); err != nil {
		return "", err
	}
	return r.Head()
}

// Head is the full SHA of the commit main points at.
func (r *Repo) Head() (string, error) {
	out, err := r.git("rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Checkout writes the tree of commit sha into dir (a directory that must not exist yet), as CI's
// checkout step would: what was committed, nothing of the work tree.
func (r *Repo) Checkout(sha, dir string) error {
	if _, err := r.git("worktree", "add", "--quiet", "--detach", dir, sha); err != nil {
		return err
	}
	return nil
}

// inside resolves path against the work tree and refuses a path that leaves it or names .git.
func (r *Repo) inside(path string) (string, error) {
	if filepath.IsAbs(path) {
		return "", fmt.Errorf("path %s: must be relative to the repository %s", path, r.Dir)
	}
	clean := filepath.Clean(path)
	if clean == ".git" || strings.HasPrefix(clean, ".git"+string(filepath.Separator)) ||
		clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %s: outside the work tree of %s", path, r.Dir)
	}
	return filepath.Join(r.Dir, clean), nil
}

// git runs git in the work tree with a minute's bound, and returns its stdout; an error carries
// the command and its stderr.
func (r *Repo) git(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.Dir
	// No global or system configuration: a developer's hooks, signing or aliases must not change
	// what the tests commit.
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), r.Dir, err, strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("git %s in %s: %w (is Debian's git installed?)", strings.Join(args, " "), r.Dir, err)
	}
	return stdout.String(), nil
}
