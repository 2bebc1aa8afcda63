package gitrepo

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// CommitFile writes data to path (relative to the work tree) and commits the change with msg; it
// returns the commit. A commit that changes nothing is an error (Commit).
func (r *Repo) CommitFile(path string, data []byte, msg string) (string, error) {
	if err := r.WriteFile(path, data); err != nil {
		return "", err
	}
	return r.Commit(msg)
}

// RevertRestoring makes `git revert` of commit bad and checks that it leaves path (relative to the
// work tree) holding want: what the commit before bad held, when a test reverts its bad step. It
// returns the revert's commit.
func (r *Repo) RevertRestoring(bad, path string, want []byte) (string, error) {
	sha, err := r.Revert(bad)
	if err != nil {
		return "", err
	}
	got, err := os.ReadFile(filepath.Join(r.Dir, path))
	if err != nil {
		return "", fmt.Errorf("after git revert %s: %w", Short(bad), err)
	}
	if !bytes.Equal(got, want) {
		return "", fmt.Errorf("git revert %s does not restore %s as expected", Short(bad), path)
	}
	return sha, nil
}

// Show returns path as commit sha holds it (`git show sha:path`).
func (r *Repo) Show(sha, path string) ([]byte, error) {
	if _, err := r.inside(path); err != nil {
		return nil, err
	}
	out, err := r.git("show", sha+":"+filepath.ToSlash(filepath.Clean(path)))
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// CommitStep points HubDir at dir (Step), appends extra to its kustomization.yaml (a patch a
// recipe asks of a package, such as health/README.md's sync waves for Argo CD; nil: none) and
// commits with msg. It returns the commit.
func CommitStep(r *Repo, dir string, extra []byte, msg string) (string, error) {
	if err := Step(r, dir); err != nil {
		return "", err
	}
	if len(extra) > 0 {
		path := filepath.Join(HubDir, "kustomization.yaml")
		k, err := os.ReadFile(filepath.Join(r.Dir, path))
		if err != nil {
			return "", err
		}
		if err := r.WriteFile(path, append(k, extra...)); err != nil {
			return "", err
		}
	}
	return r.Commit(msg)
}
