package releases

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEveryMinorsLineEndsAtItsVersion: each supported minor (releases/minors) has a line of
// releases whose last is that minor's VERSION, carrying every addition; each release on the
// line is of that minor, its counter rising, and carries no less than the one before.
func TestEveryMinorsLineEndsAtItsVersion(t *testing.T) {
	root := filepath.Join("..", "..")
	minorsFile, err := os.ReadFile(filepath.Join(root, "releases", "minors"))
	if err != nil {
		t.Fatal(err)
	}
	minors := strings.Fields(string(minorsFile))
	newest := minors[len(minors)-1]
	release := regexp.MustCompile(`^v1\.(\d+)\.(\d+)\+portcullis\.(\d+)$`)
	for _, minor := range minors {
		dir := filepath.Join(root, "releases", minor)
		if minor == newest {
			dir = root
		}
		version, err := os.ReadFile(filepath.Join(dir, "VERSION"))
		if err != nil {
			t.Fatal(err)
		}
		line := Line(minor)
		if len(line) == 0 {
			t.Errorf("%s: no releases in pkg/releases (lines)", minor)
			continue
		}
		last := line[len(line)-1]
		if want := strings.TrimSpace(string(version)); last.Version != want {
			t.Errorf("%s: the line's last release is %s, VERSION says %s", minor, last.Version, want)
		}
		if last.Carries != All[len(All)-1] {
			t.Errorf("%s: %s carries %s, want every addition (%s)", minor, last.Version, last.Carries, All[len(All)-1])
		}
		for i, r := range line {
			if !release.MatchString(r.Version) || MinorOf(r.Version) != minor {
				t.Errorf("%s: %s is not a release of that minor (v%s.P+portcullis.K)", minor, r.Version, minor)
			}
			if !slices.Contains(All, r.Carries) {
				t.Errorf("%s: %s carries %q, not an addition", minor, r.Version, r.Carries)
			}
			if i > 0 && slices.Index(All, r.Carries) < slices.Index(All, line[i-1].Carries) {
				t.Errorf("%s: %s carries less than %s before it", minor, r.Version, line[i-1].Version)
			}
			if i > 0 && r.Version == line[i-1].Version {
				t.Errorf("%s: %s twice", minor, r.Version)
			}
		}
	}
	for minor := range lines {
		if !slices.Contains(minors, minor) {
			t.Errorf("pkg/releases has a line for %s, which releases/minors does not support", minor)
		}
	}
}

func TestFirstOnLine(t *testing.T) {
	for _, tc := range []struct {
		minor, addition, version string
		earlier                  bool
	}{
		{"1.37", V1371Portcullis1, V1371Portcullis1, false},
		{"1.37", V1372Portcullis1, V1372Portcullis1, true},
		// An older minor's first release already carried the second addition: going back
		// within its line refuses nothing.
		{"1.35", V1372Portcullis1, Line("1.35")[0].Version, false},
		{"1.36", V1371Portcullis1, Line("1.36")[0].Version, false},
		{"1.34", V1371Portcullis1, "", false},
	} {
		version, earlier := FirstOnLine(tc.minor, tc.addition)
		if version != tc.version || earlier != tc.earlier {
			t.Errorf("FirstOnLine(%s, %s) = %s, %v; want %s, %v", tc.minor, tc.addition, version, earlier, tc.version, tc.earlier)
		}
	}
}

func TestMinorOf(t *testing.T) {
	for in, want := range map[string]string{"v1.35.8+portcullis.2": "1.35", "v1.37.2": "1.37", "v1.37": "", "": ""} {
		if got := MinorOf(in); got != want {
			t.Errorf("MinorOf(%q) = %q, want %q", in, got, want)
		}
	}
}
