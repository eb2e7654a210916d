package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/pkg/kubecompat"
)

// ReleaseVersion is the Portcullis release of the minor the test is built for
// (kubecompat.Minor): the VERSION of the newest minor, at the root, or releases/<minor>/VERSION.
func ReleaseVersion(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	minors, err := os.ReadFile(filepath.Join(root, "releases", "minors"))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(minors))
	path := filepath.Join(root, "VERSION")
	if len(fields) == 0 || fields[len(fields)-1] != kubecompat.Minor {
		path = filepath.Join(root, "releases", kubecompat.Minor, "VERSION")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
