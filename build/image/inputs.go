package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// platformBinary is one -binary flag: the kube-apiserver built for one platform.
type platformBinary struct {
	platform v1.Platform
	path     string
}

func (b platformBinary) name() string { return b.platform.OS + "/" + b.platform.Architecture }

func platformNames(binaries []platformBinary) []string {
	names := make([]string, 0, len(binaries))
	for _, b := range binaries {
		names = append(names, b.name())
	}
	return names
}

// elfMachines maps the architectures the release builds to the ELF machine their binaries
// must declare, so a binary cannot end up under the wrong platform of the index.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// parseBinaryFlag parses "os/arch=path".
func parseBinaryFlag(value string) (platformBinary, error) {
	platform, path, ok := strings.Cut(value, "=")
	if !ok || path == "" {
		return platformBinary{}, fmt.Errorf("-binary %q: want os/arch=path, e.g. linux/amd64=_output/release/linux/amd64/kube-apiserver", value)
	}
	p, err := parsePlatform(platform)
	if err != nil {
		return platformBinary{}, fmt.Errorf("-binary %q: %w", value, err)
	}
	return platformBinary{platform: p, path: path}, nil
}

// parsePlatform parses "linux/amd64". Only Linux on the architectures of elfMachines is
// accepted: the image has nothing else to run.
func parsePlatform(s string) (v1.Platform, error) {
	osName, arch, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(arch, "/") {
		return v1.Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", s)
	}
	if osName != "linux" {
		return v1.Platform{}, fmt.Errorf("platform %q: only linux images are built", s)
	}
	if _, ok := elfMachines[arch]; !ok {
		return v1.Platform{}, fmt.Errorf("platform %q: architecture %q is not one the release builds (amd64, arm64)", s, arch)
	}
	return v1.Platform{OS: osName, Architecture: arch}, nil
}

// checkStaticELF fails unless path is a statically linked ELF executable for arch: the image
// has no dynamic loader and no libc.
func checkStaticELF(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not a readable ELF binary: %w", path, err)
	}
	defer f.Close()
	if want := elfMachines[arch]; f.Machine != want {
		return fmt.Errorf("%s: built for %v, but it is given as the %s binary (want %v)", path, f.Machine, arch, want)
	}
	if f.Type != elf.ET_EXEC {
		return fmt.Errorf("%s: ELF type %v, want a static executable (%v): build with CGO_ENABLED=0", path, f.Type, elf.ET_EXEC)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s: dynamically linked (it names an ELF interpreter); build with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// tagPattern is the OCI distribution spec's grammar for a tag.
var tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// notInTag is what kubeadm replaces in a version to make its image tag: everything outside
// [-\w.] (KubernetesVersionToImageTag in k8s.io/kubernetes cmd/kubeadm/app/util/version.go).
var notInTag = regexp.MustCompile(`[^-\w.]`)

// imageTag turns the release version into the image's tag, the one place the release derives
// it. It is the tag kubeadm derives from the same version: every character outside [-\w.]
// becomes "_", so the "+" of the build metadata does (v1.37.1+portcullis.1 →
// v1.37.1_portcullis.1), and `kubeadm config images list --kubernetes-version <VERSION>
// --image-repository <ours>` names this image. test/release holds it to kubeadm's own function.
func imageTag(version string) (string, error) {
	if version == "" {
		return "", errors.New("-version is required: the release version from VERSION, e.g. v1.37.1+portcullis.1")
	}
	tag := notInTag.ReplaceAllString(version, "_")
	if !tagPattern.MatchString(tag) {
		return "", fmt.Errorf("-version %q: %q is not a valid image tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127})", version, tag)
	}
	return tag, nil
}

// parseSourceDateEpoch reads SOURCE_DATE_EPOCH as the reproducible-builds spec defines it: a
// non-negative decimal count of seconds since the Unix epoch.
func parseSourceDateEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("SOURCE_DATE_EPOCH is not set: pass -source-date-epoch or export it (the Makefile uses the last commit's time)")
	}
	if strings.Trim(s, "0123456789") != "" {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want a decimal number of seconds since 1970-01-01", s)
	}
	seconds, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	// USTAR headers hold 11 octal digits of seconds.
	if seconds >= 1<<33 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: beyond what a tar header can hold", s)
	}
	return time.Unix(seconds, 0).UTC(), nil
}
