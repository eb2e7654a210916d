package modulegraph

import (
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
)

const upstreamGoMod = `// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.25.0

godebug default=go1.25

require (
	github.com/spf13/cobra v1.10.0
	k8s.io/api v0.0.0
	k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912 // indirect
)

require sigs.k8s.io/yaml v1.6.0

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/apiserver => ./staging/src/k8s.io/apiserver
)

replace k8s.io/kms => ./staging/src/k8s.io/kms
`

func TestUpstream(t *testing.T) {
	got, err := Upstream([]byte(upstreamGoMod), "v1.35.8")
	if err != nil {
		t.Fatal(err)
	}
	want := Graph{
		"github.com/spf13/cobra": "v1.10.0",
		"k8s.io/api":             "v0.35.8",
		"k8s.io/apiserver":       "v0.35.8",
		"k8s.io/kms":             "v0.35.8",
		"k8s.io/kube-openapi":    "v0.0.0-20250910181357-589584f1c912",
		"k8s.io/kubernetes":      "v1.35.8",
		"sigs.k8s.io/yaml":       "v1.6.0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Upstream:\n got %v\nwant %v", got, want)
	}
}

func TestUpstreamRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ gomod, version, want string }{
		"no staging":        {"module k8s.io/kubernetes\nrequire a v1.0.0\n", "v1.35.8", "no module with a staging directory"},
		"another replace":   {"replace a => b v1.0.0\nreplace k8s.io/api => ./staging/src/k8s.io/api\n", "v1.35.8", "not a staging directory"},
		"unreadable":        {"replace a =>\n", "v1.35.8", "cannot read it"},
		"not a 1.x release": {upstreamGoMod, "v0.35.8", "want v1.N.P"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Upstream([]byte(tc.gomod), tc.version)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Upstream: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLinkedAndCompare(t *testing.T) {
	info := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/portcullis-k8s/portcullis"},
		Deps: []*debug.Module{
			{Path: "github.com/portcullis-k8s/api", Version: "v0.0.0", Replace: &debug.Module{Path: "./staging/src/github.com/portcullis-k8s/api", Version: "(devel)"}},
			{Path: "github.com/spf13/cobra", Version: "v1.10.0"},
			{Path: "k8s.io/api", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.35.8"}},
			{Path: "k8s.io/kube-openapi", Version: "v0.0.0-20260721132016-d427ff9ee9ad"},
			{Path: "example.com/fork", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/other", Version: "v1.0.1"}},
			{Path: "k8s.io/kubernetes", Version: "v1.35.8"},
			{Path: "sigs.k8s.io/yaml", Version: "v1.6.0", Replace: &debug.Module{Path: "./third_party/yaml", Version: "(devel)"}},
		},
	}
	linked := Linked(info)
	if _, ok := linked["github.com/portcullis-k8s/api"]; ok {
		t.Errorf("Linked lists the module replaced by a directory: %v", linked)
	}
	upstream, err := Upstream([]byte(upstreamGoMod), "v1.35.8")
	if err != nil {
		t.Fatal(err)
	}
	got := Compare(linked, upstream)
	want := []Difference{
		{Path: "example.com/fork", Linked: "example.com/other@v1.0.1"},
		{Path: "k8s.io/kube-openapi", Linked: "v0.0.0-20260721132016-d427ff9ee9ad", Upstream: "v0.0.0-20250910181357-589584f1c912"},
		// Any other module replaced by a directory is a difference, whatever its version.
		{Path: "sigs.k8s.io/yaml", Linked: "dir:./third_party/yaml", Upstream: "v1.6.0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare:\n got %v\nwant %v", got, want)
	}
	stock := &debug.BuildInfo{Main: debug.Module{Path: "github.com/portcullis-k8s/portcullis/releases/1.35/upstream"}, Deps: []*debug.Module{
		{Path: "github.com/spf13/cobra", Version: "v1.10.0"},
		{Path: "k8s.io/api", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/api", Version: "v0.35.8"}},
		{Path: "k8s.io/kubernetes", Version: "v1.35.8"},
	}}
	if diffs := Compare(Linked(stock), upstream); len(diffs) != 0 {
		t.Errorf("Compare of a build of upstream's graph: %v, want none", diffs)
	}
}

const exceptionsDoc = "# Compatibility\n\n### Where a build's modules differ from upstream's\n\nProse.\n\n" +
	"| minor | module | linked | upstream's | why |\n|---|---|---|---|---|\n" +
	"| 1.35 | `golang.org/x/net` | `v0.57.0` | `v0.56.0` | a security fix |\n" +
	"| 1.37 | `example.com/ours` | `v1.0.0` | - | our plugin's client |\n\nAfter.\n\n| a | b | c | d | e |\n"

func TestParseExceptions(t *testing.T) {
	got, err := ParseExceptions([]byte(exceptionsDoc), "### Where a build's modules differ from upstream's")
	if err != nil {
		t.Fatal(err)
	}
	want := []Exception{
		{Minor: "1.35", Path: "golang.org/x/net", Linked: "v0.57.0", Upstream: "v0.56.0", Why: "a security fix"},
		{Minor: "1.37", Path: "example.com/ours", Linked: "v1.0.0", Upstream: "-", Why: "our plugin's client"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseExceptions:\n got %v\nwant %v", got, want)
	}
	if !want[1].Matches("1.37", Difference{Path: "example.com/ours", Linked: "v1.0.0"}) {
		t.Errorf("%v does not match the module absent upstream", want[1])
	}
	if want[0].Matches("1.36", Difference{Path: "golang.org/x/net", Linked: "v0.57.0", Upstream: "v0.56.0"}) {
		t.Errorf("%v matches another minor", want[0])
	}
	if want[0].Matches("1.35", Difference{Path: "golang.org/x/net", Linked: "v0.58.0", Upstream: "v0.56.0"}) {
		t.Errorf("%v matches another linked version", want[0])
	}
}

func TestParseExceptionsRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"no heading": {"# x\n", "no heading"},
		"no reason":  {"## H\n| minor | module | linked | upstream's | why |\n|---|---|---|---|---|\n| 1.35 | a | v1 | v0 |  |\n", "no reason"},
		"short row":  {"## H\n| 1.35 | a | v1 |\n", "want 5 cells"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseExceptions([]byte(tc.doc), "## H")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseExceptions: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
