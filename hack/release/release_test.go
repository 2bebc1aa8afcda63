package release

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/addonops/addonops/internal/testing/localhub"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := localhub.RepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// fromLine is a Dockerfile FROM instruction: flags, the image, an optional stage name.
var fromLine = regexp.MustCompile(`(?im)^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+\S+)?\s*$`)

// pinnedImage is name:tag@sha256:<64 hex>: the tag for people and Renovate, the digest for the
// build.
var pinnedImage = regexp.MustCompile(`^[a-z0-9./_-]+(:[\w.-]+)@sha256:[0-9a-f]{64}$`)

// TestDockerfileBasesArePinned: every base image of the Dockerfile is pinned by digest, so a tag
// moved upstream does not change what a rebuild of a release ships.
func TestDockerfileBasesArePinned(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	froms := fromLine.FindAllStringSubmatch(string(data), -1)
	if len(froms) < 2 {
		t.Fatalf("the Dockerfile has %d FROM lines, want the build and the runtime stage", len(froms))
	}
	for _, m := range froms {
		if !pinnedImage.MatchString(m[1]) {
			t.Errorf("Dockerfile: FROM %s is not pinned as name:tag@sha256:<digest>", m[1])
		}
	}
}
