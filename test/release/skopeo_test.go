package release

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/test/docs"
)

// lookTool finds a program the release tests run; its absence fails the test.
func lookTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed, and the release tests need it: run hack/install-test-deps.sh (as root), or apt-get install %s", name, debianPackage)
	}
	return path
}

func runTool(t *testing.T, path string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", path, strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestSkopeoReadsTheArchive checks the image with a reader that shares no code with
// go-containerregistry: containers/image, as skopeo (and CRI-O, Podman) use it.
func TestSkopeoReadsTheArchive(t *testing.T) {
	skopeo := lookTool(t, "skopeo", "skopeo")
	r := loadRelease(t)
	a := readArchive(t, r)
	ref := "oci-archive:" + r.imageArchive()

	// The raw manifest of the archive's only image is the image index, byte for byte.
	indexDesc, _ := a.index(t)
	raw := runTool(t, skopeo, "inspect", "--raw", ref)
	if want := a.blob(t, indexDesc, mediaTypeIndex); !bytes.Equal(raw, want) {
		t.Errorf("skopeo inspect --raw %s printed\n%s\nwant the image index\n%s", ref, raw, want)
	}

	images := a.images(t)
	for _, img := range images {
		t.Run(img.platform, func(t *testing.T) {
			goos, goarch, _ := strings.Cut(img.platform, "/")
			out := runTool(t, skopeo, "inspect", "--override-os", goos, "--override-arch", goarch, ref)
			var got struct {
				Digest       string
				Architecture string
				Os           string
				Layers       []string
				Env          []string
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("skopeo inspect %s: %v\n%s", ref, err, out)
			}
			if got.Os != goos || got.Architecture != goarch {
				t.Errorf("skopeo sees %s/%s", got.Os, got.Architecture)
			}
			// skopeo reports the digest of what the reference names, the index; the layers
			// show which platform's image it chose.
			if got.Digest != indexDesc.Digest {
				t.Errorf("skopeo reports digest %s, index.json lists the image index as %s", got.Digest, indexDesc.Digest)
			}
			var wantLayers []string
			for _, l := range img.manifest.Layers {
				wantLayers = append(wantLayers, l.Digest)
			}
			if !slices.Equal(got.Layers, wantLayers) {
				t.Errorf("skopeo sees layers %q, the manifest lists %q", got.Layers, wantLayers)
			}
			if !slices.Equal(got.Env, img.config.Config.Env) {
				t.Errorf("skopeo sees env %q, the config holds %q", got.Env, img.config.Config.Env)
			}
		})
	}
}

// TestSkopeoCopiesToContainersStorage runs docs/release.md's import into containers-storage
// (CRI-O's and Podman's image store) as written, in the release's directory, with directories
// standing in for /var/lib/containers and /run/containers; the stored image is then read back.
func TestSkopeoCopiesToContainersStorage(t *testing.T) {
	skopeo := lookTool(t, "skopeo", "skopeo")
	r := loadRelease(t)
	opts := docs.Options{
		Mounts: map[string]string{"/var/lib/containers": t.TempDir(), "/run/containers": t.TempDir()},
		Path:   []string{filepath.Dir(skopeo)},
		Dir:    r.dir,
	}
	docs.Run(t, docs.Block(t, "docs/release.md", docs.KeyContainersStorage), opts)
	ref := "containers-storage:localhost/portcullis/kube-apiserver:" + r.tag
	out, _ := docs.Run(t, "skopeo inspect "+ref+"\n", opts)
	var got struct {
		Name         string
		Architecture string
		Os           string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("skopeo inspect %s: %v\n%s", ref, err, out)
	}
	if got.Name != "localhost/portcullis/kube-apiserver" || got.Os != runtime.GOOS || got.Architecture != runtime.GOARCH {
		t.Errorf("containers-storage holds %s for %s/%s, want localhost/portcullis/kube-apiserver for this machine's %s/%s", got.Name, got.Os, got.Architecture, runtime.GOOS, runtime.GOARCH)
	}
}
