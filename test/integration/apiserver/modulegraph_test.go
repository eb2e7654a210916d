package apiserver

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/internal/modulegraph"
	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// exceptionsHeading heads docs/compatibility.md's list of the modules a minor's build links at
// another version than upstream's graph, each with its reason.
const exceptionsHeading = "### Where a build's modules differ from upstream's"

// TestModuleGraphIsUpstreams: each minor's kube-apiserver links the modules of upstream's own
// build of that Kubernetes patch - every module k8s.io/kubernetes's go.mod names, at its
// version - but for the ones docs/compatibility.md lists with a reason; stock, the parity
// suites' yardstick, links upstream's graph exactly. Both run with upstream's godebug settings
// and the minor's toolchain (go version -m reads the same build information).
func TestModuleGraphIsUpstreams(t *testing.T) {
	bins := framework.FindBinaries(t)
	ours := readBuildInfo(t, bins.APIServer)
	stock := readBuildInfo(t, bins.StockAPIServer)
	linked := modulegraph.Linked(ours)
	kubeVersion := linked["k8s.io/kubernetes"]
	if kubeVersion == "" {
		t.Fatalf("%s links no k8s.io/kubernetes", bins.APIServer)
	}
	minor := strings.Join(strings.SplitN(strings.TrimPrefix(kubeVersion, "v"), ".", 3)[:2], ".")
	upstream, err := modulegraph.Upstream(upstreamGoMod(t, kubeVersion), kubeVersion)
	if err != nil {
		t.Fatalf("k8s.io/kubernetes@%s's go.mod: %v", kubeVersion, err)
	}

	if diffs := modulegraph.Compare(modulegraph.Linked(stock), upstream); len(diffs) != 0 {
		t.Errorf("%s is not built from upstream's graph of %s; it links:", bins.StockAPIServer, kubeVersion)
		for _, d := range diffs {
			t.Errorf("  %s", d)
		}
	}

	doc := filepath.Join(framework.RepoRoot(t), "docs", "compatibility.md")
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	exceptions, err := modulegraph.ParseExceptions(text, exceptionsHeading)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	used := map[int]bool{}
	for _, d := range modulegraph.Compare(linked, upstream) {
		listed := false
		for i, e := range exceptions {
			if e.Matches(minor, d) {
				listed, used[i] = true, true
			}
		}
		if !listed {
			t.Errorf("%s links %s: not in %s, %q (the module differs from upstream's graph of %s; fix the pins, or list it with its reason)", bins.APIServer, d, doc, exceptionsHeading, kubeVersion)
		}
	}
	for i, e := range exceptions {
		if e.Minor == minor && !used[i] {
			t.Errorf("%s lists %s %s (upstream: %s) for %s, which the build no longer links: remove the row", doc, e.Path, e.Linked, e.Upstream, minor)
		}
	}

	if ours.GoVersion != stock.GoVersion {
		t.Errorf("toolchains: ours %s, stock %s; want the minor's one", ours.GoVersion, stock.GoVersion)
	}
	if o, s := buildSetting(ours, "DefaultGODEBUG"), buildSetting(stock, "DefaultGODEBUG"); o != s {
		t.Errorf("DefaultGODEBUG: ours %q, stock (upstream's godebug settings) %q", o, s)
	}
}

func readBuildInfo(t *testing.T, binary string) *buildinfo.BuildInfo {
	t.Helper()
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatalf("reading the build information of %s: %v", binary, err)
	}
	return info
}

func buildSetting(info *buildinfo.BuildInfo, key string) string {
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// upstreamGoMod returns the go.mod of k8s.io/kubernetes at version, through the go command's
// module cache (the build fetched it).
func upstreamGoMod(t *testing.T, version string) []byte {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@"+version).Output()
	if err != nil {
		t.Fatalf("go mod download k8s.io/kubernetes@%s: %v", version, err)
	}
	var module struct{ GoMod, Error string }
	if err := json.Unmarshal(out, &module); err != nil || module.GoMod == "" {
		t.Fatalf("go mod download k8s.io/kubernetes@%s: %s (%v)", version, out, err)
	}
	text, err := os.ReadFile(module.GoMod)
	if err != nil {
		t.Fatal(err)
	}
	return text
}
