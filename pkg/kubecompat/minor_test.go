package kubecompat

import (
	"runtime/debug"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// TestMinorIsTheModuleGraphs: the build tag names the minor of the k8s.io/kubernetes the
// build links (the Makefile's KUBE_MINOR passes both).
func TestMinorIsTheModuleGraphs(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information")
	}
	var linked string
	for _, dep := range info.Deps {
		if dep.Path == "k8s.io/kubernetes" {
			linked = dep.Version
		}
	}
	got, err := version.ParseGeneric(linked)
	if err != nil {
		t.Fatalf("the k8s.io/kubernetes linked (%q): %v", linked, err)
	}
	want := version.MustParseGeneric(Minor)
	if got.Major() != want.Major() || got.Minor() != want.Minor() {
		t.Errorf("built for Kubernetes %s (build tag), but links k8s.io/kubernetes %s", Minor, linked)
	}
}
