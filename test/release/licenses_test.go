package release

import (
	"archive/tar"
	"debug/buildinfo"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// thirdPartyLicenses is the release's archive of the linked modules' licence texts.
const thirdPartyLicenses = "third-party-licenses.tar"

// licenceFile matches the names of licence and notice files.
var licenceFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice)`)

// readThirdPartyLicenses returns the regular files of the release's licence archive, by path.
func readThirdPartyLicenses(t *testing.T, r release) map[string][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join(r.dir, thirdPartyLicenses))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", thirdPartyLicenses, err)
		}
		if !h.ModTime.Equal(r.epoch) || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: %s has time %v and owner %d:%d, want %v and 0:0", thirdPartyLicenses, h.Name, h.ModTime, h.Uid, h.Gid, r.epoch)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(h.Name, "./")] = data
	}
	return files
}

// TestThirdPartyLicenses: every module the binary links (as its build information lists them)
// has a licence text in the release, under its packages' directories or a parent module's (a
// module inside another module's repository shares its licence file), as MIT, BSD and
// Apache-2.0 ask of a redistribution of the binary.
func TestThirdPartyLicenses(t *testing.T) {
	r := loadRelease(t)
	files := readThirdPartyLicenses(t, r)
	dirs := map[string]bool{}
	for name := range files {
		if licenceFile.MatchString(path.Base(name)) {
			dirs[path.Dir(name)] = true
		}
	}
	for _, platform := range releasePlatforms() {
		info, err := buildinfo.ReadFile(r.binary(platform))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range info.Deps {
			found := false
			for dir := range dirs {
				// go-licenses files a module's licence under the packages it links
				// (github.com/beorn7/perks/quantile/LICENSE), or a parent module's.
				if dir == m.Path || strings.HasPrefix(dir, m.Path+"/") || strings.HasPrefix(m.Path, dir+"/") {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s links %s %s, and %s has no licence text for it (in its packages' directories or a parent module's)", platform, m.Path, m.Version, thirdPartyLicenses)
			}
		}
	}
}
