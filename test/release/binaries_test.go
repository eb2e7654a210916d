package release

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestSHA256SUMSCoversTheRelease(t *testing.T) {
	r := loadRelease(t)
	want := []string{"kube-apiserver-" + r.version + ".oci.tar", thirdPartyLicenses}
	for _, p := range releasePlatforms() {
		want = append(want, p+"/kube-apiserver", p+"/kube-apiserver.cdx.json")
	}
	for _, file := range deployKit(t) {
		want = append(want, "deploy/"+file)
	}
	var got []string
	for name := range r.sums {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s/SHA256SUMS lists %q, want %q", r.dir, got, want)
	}
	for name, sum := range r.sums {
		if have := sha256File(t, r.dir+"/"+name); have != sum {
			t.Errorf("%s/%s: sha256 %s, but SHA256SUMS says %s", r.dir, name, have, sum)
		}
	}
}

var elfMachine = map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}

func TestBinariesAreStaticTrimmedAndStamped(t *testing.T) {
	r := loadRelease(t)
	for _, p := range releasePlatforms() {
		t.Run(p, func(t *testing.T) {
			path := r.binary(p)
			f, err := elf.Open(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			defer f.Close()
			if f.Machine != elfMachine[p] {
				t.Errorf("%s: ELF machine %v, want %v", path, f.Machine, elfMachine[p])
			}
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					t.Errorf("%s: dynamically linked (it has an ELF interpreter); want static", path)
				}
			}

			info, err := buildinfo.ReadFile(path)
			if err != nil {
				t.Fatalf("%s: reading Go build info: %v", path, err)
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			goos, goarch, _ := strings.Cut(p, "/")
			// -pgo: compiled with cmd/kube-apiserver/default.pgo (Go records its base name under -trimpath).
			for key, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": goos, "GOARCH": goarch, "-pgo": "default.pgo"} {
				if settings[key] != want {
					t.Errorf("%s: built with %s=%q, want %q", path, key, settings[key], want)
				}
			}
			if info.Path != "github.com/portcullis-k8s/portcullis/cmd/kube-apiserver" {
				t.Errorf("%s: built from %s, want github.com/portcullis-k8s/portcullis/cmd/kube-apiserver", path, info.Path)
			}
			// Go leaves -ldflags out of the build info under -trimpath, so look for the values
			// build/version.sh stamps with -X in the binary's data instead.
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{r.version, r.epoch.Format("2006-01-02T15:04:05Z")} {
				if !bytes.Contains(data, []byte(want)) {
					t.Errorf("%s does not hold %q: it is not stamped by build/version.sh", path, want)
				}
			}
		})
	}
}

func TestHostBinaryReportsTheVersion(t *testing.T) {
	r := loadRelease(t)
	path := r.binary(hostPlatform(t))
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "Kubernetes "+r.version; got != want {
		t.Errorf("%s --version printed %q, want %q", path, got, want)
	}
}
