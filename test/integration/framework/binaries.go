// Package framework runs the binaries `make test` builds — Portcullis's kube-apiserver,
// stock kube-apiserver from the same module graph, and etcd — as real processes on loopback,
// for the integration suites under test/integration.
package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/test/docs"
)

// BinDirEnv names the directory holding the binaries; `make test` sets it.
const BinDirEnv = "PORTCULLIS_BIN_DIR"

// Binaries are the programs an integration test runs.
type Binaries struct {
	// APIServer is Portcullis's kube-apiserver, version-stamped.
	APIServer string
	// StockAPIServer is upstream's kube-apiserver built from the same module graph.
	StockAPIServer string
	// Etcd is etcd built from the version Kubernetes pins.
	Etcd string
	// ControllerManager is upstream's kube-controller-manager.
	ControllerManager string
	// LocalUp is `make run`'s program.
	LocalUp string
	// Kubeadm is kubeadm's CLI from the same module graph, stamped with its Kubernetes version.
	Kubeadm string
	// Dir holds them all.
	Dir string
}

// FindBinaries returns the binaries from $PORTCULLIS_BIN_DIR, or from _output/bin at the
// repository's root. A missing binary fails the test: these suites never skip.
func FindBinaries(t testing.TB) Binaries {
	t.Helper()
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "_output", "bin")
	}
	return BinariesIn(t, dir)
}

// BinariesIn returns the binaries in dir (an older minor's: _output/<minor>/bin). A missing
// binary fails the test.
func BinariesIn(t testing.TB, dir string) Binaries {
	t.Helper()
	b := Binaries{
		APIServer:         filepath.Join(dir, "kube-apiserver"),
		StockAPIServer:    filepath.Join(dir, "kube-apiserver-stock"),
		Etcd:              filepath.Join(dir, "etcd"),
		ControllerManager: filepath.Join(dir, "kube-controller-manager"),
		LocalUp:           filepath.Join(dir, "local-up"),
		Kubeadm:           filepath.Join(dir, "kubeadm"),
		Dir:               dir,
	}
	for _, path := range []string{b.APIServer, b.StockAPIServer, b.Etcd, b.ControllerManager, b.LocalUp, b.Kubeadm} {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s is not built (%v): run `make test`, or `make build-test-binaries` and then go test (an older minor's: `make test-minor KUBE_MINOR=1.N`, or `make build-minor-test-binaries KUBE_MINOR=1.N`)", path, err)
		}
	}
	return b
}

// RepoRoot returns the repository's root: the nearest directory above the working
// directory that holds VERSION and go.mod (test/docs, which the docs' own unit tests use
// without Kubernetes, finds it).
func RepoRoot(t testing.TB) string { return docs.RepoRoot(t) }

// SupportedMinors are the Kubernetes minors Portcullis supports, oldest first
// (releases/minors); the last is the default build's.
func SupportedMinors(t testing.TB) []string {
	t.Helper()
	return strings.Fields(string(docs.ReadFile(t, filepath.Join(RepoRoot(t), "releases", "minors"))))
}
