//go:build integration

package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// userBinaries are the programs a user gets from `make install` and in every release archive,
// with the name each prints in `--version`. addonops-demo is not among them: it only runs
// inside a checkout.
var userBinaries = map[string]string{
	"config-hash":         "config-hash",
	"addon-template":      "addon-template",
	"rollout-strategy":    "rollout-strategy",
	"addonops-controller": "addonops-controller",
	"addonops":            "addonops",
	"kubectl-addonops":    "kubectl addonops", // the kubectl plugin: addonops under kubectl's name
}

// completer is the executable kubectl (1.26+) runs to complete `kubectl addonops`.
const completer = "kubectl_complete-addonops"

func runMake(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkBinaries runs every user binary in dir with --version (they must print the stamped
// version) and the completion helper through the PATH, as kubectl would.
func checkBinaries(t *testing.T, dir, version string) {
	t.Helper()
	for file, program := range userBinaries {
		out, err := exec.Command(filepath.Join(dir, file), "--version").CombinedOutput()
		if err != nil {
			t.Errorf("%s --version: %v\n%s", file, err, out)
			continue
		}
		if want := program + " " + version + " ("; !strings.HasPrefix(string(out), want) {
			t.Errorf("%s --version printed %q, want %q...", file, out, want)
		}
	}
	cmd := exec.Command(filepath.Join(dir, completer), "")
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s \"\": %v\n%s", completer, err, out)
	} else if !strings.Contains(string(out), "status\t") || !strings.Contains(string(out), "history\t") {
		t.Errorf("%s \"\" does not complete the plugin's commands (status, history):\n%s", completer, out)
	}
}

// TestMakeInstall installs into a fresh GOBIN as a user does and runs what it installed.
func TestMakeInstall(t *testing.T) {
	root := repoRoot(t)
	gobin := filepath.Join(t.TempDir(), "gobin")
	const version = "v0.0.0-installtest"
	runMake(t, root, "install", "GOBIN="+gobin, "VERSION="+version)

	entries, err := os.ReadDir(gobin)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{completer}
	for f := range userBinaries {
		want = append(want, f)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("make install wrote %q into GOBIN, want %q (never addonops-demo)", got, want)
	}
	checkBinaries(t, gobin, version)
}

// TestMakeRelease builds a release for the host platform only (PLATFORMS: cross-compiling the
// whole default matrix is `make release`'s job, too slow for a test) and checks it the way a user
// consumes it: checksums, archive layout, binaries, image archive, manifests.
func TestMakeRelease(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "release")
	const version, repo = "v0.0.0-releasetest", "registry.example/team/addonops-controller"
	platform := runtime.GOOS + "/" + runtime.GOARCH
	runMake(t, root, "release", "VERSION="+version, "PLATFORMS="+platform, "RELEASE_DIR="+dir, "IMAGE_REPO="+repo)

	archiveName := fmt.Sprintf("addonops_%s_%s_%s", version, runtime.GOOS, runtime.GOARCH)
	imageArchive := fmt.Sprintf("addonops-controller_%s_linux_%s.image.tar", version, runtime.GOARCH)
	manifests := "addonops_" + version + ".yaml"
	deployTemplates := "addonops_" + version + "_deploy-templates.yaml"
	ociArchive := "addonops-controller_" + version + ".oci.tar"
	want := []string{"SHA256SUMS", archiveName + ".tar.gz", manifests, deployTemplates}
	if runtime.GOOS == "linux" {
		want = append(want, imageArchive, ociArchive)
	}
	slices.Sort(want)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("release directory holds %q, want %q", got, want)
	}

	// SHA256SUMS: what `sha256sum -c` reads, covering every other file, and right.
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var summed []string
	for _, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("SHA256SUMS line %q is not \"<sha256>  <file>\"", line)
		}
		content, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("SHA256SUMS names %s: %v", file, err)
		}
		if h := sha256.Sum256(content); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s has sha256 %x, the file says %s", file, h, sum)
		}
		summed = append(summed, file)
	}
	slices.Sort(summed)
	if w := slices.DeleteFunc(slices.Clone(want), func(f string) bool { return f == "SHA256SUMS" }); !slices.Equal(summed, w) {
		t.Errorf("SHA256SUMS covers %q, want %q", summed, w)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}

	// The archive: one top directory named like the archive with the user binaries (never the
	// demo), the completion helper, LICENSE and README.md; unpacked, the binaries run.
	unpacked := t.TempDir()
	files := untar(t, filepath.Join(dir, archiveName+".tar.gz"), unpacked)
	wantFiles := []string{archiveName + "/", archiveName + "/LICENSE", archiveName + "/README.md", archiveName + "/" + completer}
	for f := range userBinaries {
		wantFiles = append(wantFiles, archiveName+"/"+f)
	}
	slices.Sort(wantFiles)
	if !slices.Equal(files, wantFiles) {
		t.Errorf("the archive holds %q, want %q", files, wantFiles)
	}
	if target, err := os.Readlink(filepath.Join(unpacked, archiveName, "kubectl-addonops")); err != nil || target != "addonops" {
		t.Errorf("kubectl-addonops in the archive: want a link to addonops, got %q (%v)", target, err)
	}
	checkBinaries(t, filepath.Join(unpacked, archiveName), version)

	// The manifests run the release's image, pinned by the digest of the multi-architecture index
	// in the OCI archive (what is pushed), and the image archive is tagged with it.
	ref := repo + ":" + version
	pinned := ref
	if runtime.GOOS == "linux" {
		pinned = ref + "@" + checkIndex(t, filepath.Join(dir, ociArchive), version).String()
	}
	for _, m := range []string{manifests, deployTemplates} {
		if images := deploymentImages(t, filepath.Join(dir, m)); !slices.Equal(images, []string{pinned}) {
			t.Errorf("%s: the controller Deployment runs %q, want [%s]", m, images, pinned)
		}
	}
	if dt, _ := os.ReadFile(filepath.Join(dir, deployTemplates)); !bytes.Contains(dt, []byte("--deploy-templates")) {
		t.Errorf("%s: no --deploy-templates argument: the component is missing", deployTemplates)
	}
	if runtime.GOOS == "linux" {
		checkImage(t, filepath.Join(dir, imageArchive), ref, version)
	}
}

// untar unpacks a .tar.gz into dir and lists its entries (directories with a trailing slash).
func untar(t *testing.T, archive, dir string) []string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzip: %v", archive, err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", archive, err)
		}
		names = append(names, h.Name)
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			var content []byte
			if content, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, content, os.FileMode(h.Mode)&0o777)
			}
		default:
			t.Errorf("%s: %s has tar type %c; want files, directories and links only", archive, h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(names)
	return names
}

// deploymentImages returns the container images of the Deployments in a multi-document YAML file.
func deploymentImages(t *testing.T, file string) []string {
	t.Helper()
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return images
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if obj.Kind == "Deployment" {
			for _, c := range obj.Spec.Template.Spec.Containers {
				images = append(images, c.Image)
			}
		}
	}
}

// checkIndex reads the release's OCI archive as skopeo's oci-archive transport does: an OCI image
// layout whose index.json names one image index, tagged version, with a linux image for the
// host's architecture that runs the stamped controller. It returns the index's digest.
func checkIndex(t *testing.T, archive, version string) v1.Hash {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not a tar archive: %v", archive, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			err = os.MkdirAll(p, 0o755)
		} else {
			var content []byte
			if content, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, content, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("%s holds no OCI image layout: %v", archive, err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
		t.Fatalf("%s: index.json %+v, want one index tagged %s", archive, im.Manifests, version)
	}
	idx, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	img, err := idx.Image(func() v1.Hash {
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range m.Manifests {
			if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
				return d.Digest
			}
		}
		t.Fatalf("%s: the index has no linux/%s image: %+v", archive, runtime.GOARCH, m.Manifests)
		return v1.Hash{}
	}())
	if err != nil {
		t.Fatal(err)
	}
	runImageBinary(t, archive, img, version)
	return im.Manifests[0].Digest
}

// checkImage reads the image archive as `docker load` does, under the manifests' reference, and
// runs the controller binary from its layers.
func checkImage(t *testing.T, archive, ref, version string) {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		t.Fatalf("%s is not a docker-archive: %v", archive, err)
	}
	if len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{ref}) {
		t.Fatalf("%s: manifest.json tags %+v, want one image tagged [%s] (the manifests' image)", archive, m, ref)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatalf("reading %s as %s: %v", archive, ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || !slices.Equal(cfg.Config.Entrypoint, []string{"/addonops-controller"}) {
		t.Errorf("%s: platform %s/%s entrypoint %q, want linux/%s [/addonops-controller]", archive, cfg.OS, cfg.Architecture, cfg.Config.Entrypoint, runtime.GOARCH)
	}
	runImageBinary(t, archive, img, version)
}

// runImageBinary extracts /addonops-controller from img's layers and runs it with --version.
func runImageBinary(t *testing.T, archive string, img v1.Image, version string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s: no /addonops-controller in the image", archive)
		}
		if err != nil {
			t.Fatalf("reading the layers of %s: %v", archive, err)
		}
		if strings.TrimPrefix(h.Name, "/") != "addonops-controller" {
			continue
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "addonops-controller")
		if err := os.WriteFile(bin, content, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "addonops-controller "+version+" (") {
			t.Errorf("the image's /addonops-controller --version: %q (%v), want addonops-controller %s (...)", out, err, version)
		}
		return
	}
}

// TestConfigImageIsDocumented: the image config/ deploys is the one docs/guides/deploy-on-a-hub.md names, and the
// release recipe retags exactly that image (hack/release.sh's images: entry).
func TestConfigImageIsDocumented(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("go", "tool", "kustomize", "build", "config/default")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	file := filepath.Join(t.TempDir(), "default.yaml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	images := deploymentImages(t, file)
	if len(images) != 1 {
		t.Fatalf("config/default runs images %q, want one", images)
	}
	readme, err := os.ReadFile(filepath.Join(root, "docs/guides/deploy-on-a-hub.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte("`"+images[0]+"`")) {
		t.Errorf("docs/guides/deploy-on-a-hub.md does not name the image config/default deploys, `%s`", images[0])
	}
	repo, _, _ := strings.Cut(images[0], ":")
	script, err := os.ReadFile(filepath.Join(root, "hack/release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(script, []byte(`echo "- name: `+repo+`"`)) {
		t.Errorf("hack/release.sh does not retag %s, the image config/ deploys", repo)
	}
}

// TestReleaseRefusesDirtyVersion: a release of uncommitted changes is refused before anything is
// built.
func TestReleaseRefusesDirtyVersion(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "release")
	cmd := exec.Command("make", "--no-print-directory", "release", "VERSION=v0.0.0-1-gabcdef0-dirty", "RELEASE_DIR="+dir)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make release with a -dirty VERSION succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "uncommitted changes") {
		t.Errorf("make release with a -dirty VERSION failed without saying why:\n%s", out)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused release created %s", dir)
	}
}
