package release

import (
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/portcullis-k8s/portcullis/test/integration/framework"
)

// cycloneDX is the part of a CycloneDX SBOM these tests read.
type cycloneDX struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Timestamp string        `json:"timestamp"`
		Component sbomComponent `json:"component"`
	} `json:"metadata"`
	SerialNumber string          `json:"serialNumber"`
	Components   []sbomComponent `json:"components"`
}

type sbomComponent struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	PURL     string `json:"purl"`
	Evidence struct {
		Licenses []struct {
			License struct {
				ID string `json:"id"`
			} `json:"license"`
		} `json:"licenses"`
	} `json:"evidence"`
}

// TestSBOM holds each binary's SBOM to the module list Go stamped into the binary: every
// module linked in is a component at the version the binary has (the replacement's, for a
// replaced module), every licence is detected, and nothing varies between builds (no serial
// number, no timestamp; make verify-release compares two builds byte for byte).
func TestSBOM(t *testing.T) {
	r := loadRelease(t)
	for _, p := range releasePlatforms() {
		t.Run(p, func(t *testing.T) {
			data, err := os.ReadFile(r.binary(p) + ".cdx.json")
			if err != nil {
				t.Fatal(err)
			}
			var bom cycloneDX
			if err := json.Unmarshal(data, &bom); err != nil {
				t.Fatalf("%s.cdx.json is not JSON: %v", r.binary(p), err)
			}
			if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
				t.Errorf("bomFormat %q, specVersion %q; want a CycloneDX document", bom.BOMFormat, bom.SpecVersion)
			}
			if bom.SerialNumber != "" || bom.Metadata.Timestamp != "" {
				t.Errorf("serial number %q, timestamp %q: a reproducible SBOM has neither", bom.SerialNumber, bom.Metadata.Timestamp)
			}
			// The generator versions the main module by its commit (a pseudo-version).
			head, err := exec.Command("git", "-C", framework.RepoRoot(t), "rev-parse", "--short=12", "HEAD").Output()
			if err != nil {
				t.Fatalf("git rev-parse HEAD: %v", err)
			}
			if m := bom.Metadata.Component; m.Name != "github.com/portcullis-k8s/portcullis" || !strings.Contains(m.Version, strings.TrimSpace(string(head))) {
				t.Errorf("the SBOM describes %s %s, want github.com/portcullis-k8s/portcullis at commit %s", m.Name, m.Version, head)
			}

			info, err := buildinfo.ReadFile(r.binary(p))
			if err != nil {
				t.Fatal(err)
			}
			components := map[string]sbomComponent{}
			for _, c := range bom.Components {
				components[c.Name] = c
			}
			for _, dep := range info.Deps {
				m := dep
				local := dep.Replace != nil && (dep.Replace.Version == "" || dep.Replace.Version == "(devel)")
				if dep.Replace != nil && !local {
					m = dep.Replace
				}
				c, ok := components[m.Path]
				if !ok {
					t.Errorf("the SBOM lacks %s %s, which the binary links", m.Path, m.Version)
					continue
				}
				// A module replaced by a directory of this repository (the staging API module)
				// has no version of its own; the generator gives it the commit's.
				if c.Version != m.Version && !local {
					t.Errorf("the SBOM has %s at %s, the binary %s", m.Path, c.Version, m.Version)
				}
			}
			// The Go standard library is linked too, at the toolchain's version (-std): a
			// standard-library vulnerability is found by it.
			if std, ok := components["std"]; !ok || std.Version != info.GoVersion {
				t.Errorf("the SBOM lists the standard library as %+v, want std at %s", components["std"], info.GoVersion)
			}
			if len(bom.Components) < len(info.Deps) {
				t.Errorf("the SBOM lists %d components for the binary's %d modules", len(bom.Components), len(info.Deps))
			}
			for _, c := range append(bom.Components, bom.Metadata.Component) {
				// The generator detects licences in the module cache; the standard library
				// comes with the toolchain (Go's BSD-3-Clause), where it does not look.
				if len(c.Evidence.Licenses) == 0 && c.Name != "std" {
					t.Errorf("the SBOM detects no licence for %s %s", c.Name, c.Version)
				}
			}
			var licences []string
			for _, l := range components["k8s.io/kubernetes"].Evidence.Licenses {
				licences = append(licences, l.License.ID)
			}
			if strings.Join(licences, ",") != "Apache-2.0" {
				t.Errorf("the SBOM gives k8s.io/kubernetes the licences %q, want Apache-2.0", licences)
			}
		})
	}
}
