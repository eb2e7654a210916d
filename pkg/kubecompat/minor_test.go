package kubecompat

import (
	"os/exec"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// TestMinorIsTheModuleGraphs: the build tag names the minor of the k8s.io/kubernetes the
// build requires (the Makefile's KUBE_MINOR passes both: the tag, and the minor's go.mod
// through GOFLAGS' -modfile, which the go command asked here reads). A test binary's own
// build information does not list its modules with every toolchain, so the go command is asked.
func TestMinorIsTheModuleGraphs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	linked := strings.TrimSpace(string(out))
	got, err := version.ParseGeneric(linked)
	if err != nil {
		t.Fatalf("the k8s.io/kubernetes required (%q): %v", linked, err)
	}
	want := version.MustParseGeneric(Minor)
	if got.Major() != want.Major() || got.Minor() != want.Minor() {
		t.Errorf("built for Kubernetes %s (build tag), but requires k8s.io/kubernetes %s", Minor, linked)
	}
}
