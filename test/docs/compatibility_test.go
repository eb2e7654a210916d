package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// compatibilityRow is a row of docs/compatibility.md's first table: minor, release, the
// Kubernetes it is built on.
var compatibilityRow = regexp.MustCompile("(?m)^\\| (1\\.[0-9]+) \\| `(v[^`]+)` \\| Kubernetes (v[0-9.]+) \\|")

// TestCompatibilityPageNamesTheReleases holds docs/compatibility.md's table of releases to
// releases/minors and each minor's VERSION, newest first; and the README names each minor.
func TestCompatibilityPageNamesTheReleases(t *testing.T) {
	root := RepoRoot(t)
	read := func(path string) string {
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	minors := strings.Fields(read("releases/minors"))
	slices.Reverse(minors)
	var want, got [][3]string
	for i, minor := range minors {
		dir := filepath.Join("releases", minor)
		if i == 0 {
			dir = "."
		}
		version := strings.TrimSpace(read(filepath.Join(dir, "VERSION")))
		want = append(want, [3]string{minor, version, version[:strings.Index(version, "+")]})
	}
	for _, m := range compatibilityRow.FindAllStringSubmatch(read("docs/compatibility.md"), -1) {
		got = append(got, [3]string{m[1], m[2], m[3]})
	}
	if !slices.Equal(want, got) {
		t.Errorf("docs/compatibility.md lists %v, want %v (releases/minors and each minor's VERSION)", got, want)
	}
	readme := read("README.md")
	for _, w := range want {
		if !strings.Contains(readme, "`"+w[1]+"`") {
			t.Errorf("README.md does not name the release %s", w[1])
		}
	}
}
