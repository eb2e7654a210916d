//go:build !kube1.35 && !kube1.36

package admission

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The README's plugin table is the newest minor's chain (docs/compatibility.md lists what
// differs in the older minors' chains): this test runs in the newest minor's build.

// readmeRow matches a row of the README's plugin table: name (possibly a link), phase,
// default, config, origin.
var readmeRow = regexp.MustCompile(`(?m)^\| (?:\[)?([A-Za-z]+)(?:\]\([^)]*\))? \| ([a-z, ]+) \| (on|off) \| [^|]+ \| (upstream|Portcullis) \|$`)

// TestREADMEPluginTable keeps the README's table true to the registry: every plugin the
// binary has, in chain order, with stock's defaults and our plugins' phases.
func TestREADMEPluginTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	opts := installed(t).GenericAdmission
	type row struct{ Name, Default, Origin string }
	var want, got []row
	for _, name := range opts.RecommendedPluginOrder {
		def := "on"
		if opts.DefaultOffPlugins.Has(name) {
			def = "off"
		}
		// The webhook plugins registered under upstream's names are upstream's own unless
		// configured otherwise: upstream's in the table.
		origin := "upstream"
		if slices.ContainsFunc(Plugins(), func(p Plugin) bool { return p.Name == name }) {
			origin = "Portcullis"
		}
		want = append(want, row{name, def, origin})
	}
	phases := map[string]string{}
	for _, m := range readmeRow.FindAllStringSubmatch(string(data), -1) {
		got = append(got, row{m[1], m[3], m[4]})
		phases[m[1]] = strings.TrimSpace(m[2])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README's plugin table disagrees with the registry (-registry +README):\n%s", diff)
	}
	for _, p := range Plugins() {
		if phases[p.Name] != string(p.Phase) {
			t.Errorf("README gives %s the phase %q, the registry %q", p.Name, phases[p.Name], p.Phase)
		}
	}
	for _, r := range Replacements() {
		if phases[r.Name] != string(r.Phase) {
			t.Errorf("README gives %s the phase %q, the registry %q", r.Name, phases[r.Name], r.Phase)
		}
	}
}
