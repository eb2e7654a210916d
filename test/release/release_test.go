// Package release tests what `make release` produces — the static binaries, SHA256SUMS, the
// OCI image and the deploy kit — and the deployment files under build/deploy. `make
// test-release` builds the release first and points $PORTCULLIS_RELEASE_DIR at it; these tests
// never skip, and a missing artifact or tool fails them with what to run.
package release

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// releaseDirEnv names the directory `make release` wrote; `make test-release` sets it.
const releaseDirEnv = "PORTCULLIS_RELEASE_DIR"

// platformsEnv names the platforms the release under test was built for, comma-separated;
// `make test-release` builds this machine's only, `make release` both.
const platformsEnv = "PORTCULLIS_RELEASE_PLATFORMS"

// releasePlatforms are what the release under test holds, in the order the image index
// lists them: $PORTCULLIS_RELEASE_PLATFORMS, or both of a full release.
func releasePlatforms() []string {
	if v := os.Getenv(platformsEnv); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"linux/amd64", "linux/arm64"}
}

// release is one `make release` output directory and what it was built from.
type release struct {
	dir     string
	version string    // VERSION
	tag     string    // the image's tag: kubeadm's for VERSION (see kubeadmImageTag)
	epoch   time.Time // SOURCE_DATE_EPOCH
	sums    map[string]string
}

func (r release) binary(platform string) string {
	return filepath.Join(r.dir, filepath.FromSlash(platform), "kube-apiserver")
}

func (r release) imageArchive() string {
	return filepath.Join(r.dir, "kube-apiserver-"+r.version+".oci.tar")
}

// loadRelease finds the release under test and the inputs it must agree with.
func loadRelease(t *testing.T) release {
	t.Helper()
	dir := os.Getenv(releaseDirEnv)
	if dir == "" {
		t.Fatalf("$%s is not set: run `make test-release`, which builds the release and sets it", releaseDirEnv)
	}
	version := readVersion(t)
	r := release{
		dir:     dir,
		version: version,
		tag:     kubeadmImageTag(version),
		epoch:   sourceDateEpoch(t),
		sums:    readSHA256SUMS(t, filepath.Join(dir, "SHA256SUMS")),
	}
	return r
}

// readVersion is the release version of the minor this test is built for.
func readVersion(t *testing.T) string {
	t.Helper()
	version := framework.ReleaseVersion(t)
	if version == "" {
		t.Fatal("the release version is empty")
	}
	return version
}

func sourceDateEpoch(t *testing.T) time.Time {
	t.Helper()
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		t.Fatal("$SOURCE_DATE_EPOCH is not set: run through make, which exports the epoch the release was built with")
	}
	seconds, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("$SOURCE_DATE_EPOCH %q: %v", s, err)
	}
	return time.Unix(seconds, 0).UTC()
}

// readSHA256SUMS parses sha256sum's output: "<hex>  <path>" per line.
func readSHA256SUMS(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the release's checksums: %v (run `make release`)", err)
	}
	defer f.Close()
	sums := map[string]string{}
	scanner := bufio.NewScanner(f)
	for line := 1; scanner.Scan(); line++ {
		sum, name, ok := strings.Cut(scanner.Text(), "  ")
		if !ok || len(sum) != sha256.Size*2 || strings.Trim(sum, "0123456789abcdef") != "" || name == "" {
			t.Fatalf("%s:%d: %q is not \"<sha256 hex>  <path>\"", path, line, scanner.Text())
		}
		if _, dup := sums[name]; dup {
			t.Fatalf("%s:%d: %s is listed twice", path, line, name)
		}
		sums[name] = sum
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sums
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	return sha256Hex([]byte(mustRead(t, path)))
}

// hostPlatform is the release platform this machine can run, for tests that execute the binary.
func hostPlatform(t *testing.T) string {
	t.Helper()
	p := runtime.GOOS + "/" + runtime.GOARCH
	for _, q := range releasePlatforms() {
		if p == q {
			return p
		}
	}
	t.Fatalf("this machine is %s; the release tests run a release binary, so they need one of %v", p, releasePlatforms())
	return ""
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// repoFile is the path of a file in the repository, which must exist.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	path := filepath.Join(framework.RepoRoot(t), filepath.FromSlash(rel))
	if !isFile(path) {
		t.Fatalf("%s: no such file in the repository", rel)
	}
	return path
}

func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
