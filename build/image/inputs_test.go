package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestImageTag(t *testing.T) {
	tests := []struct {
		version string
		want    string
		wantErr string
	}{
		// kubeadm's KubernetesVersionToImageTag: every character outside [-\w.] becomes "_".
		{version: "v1.37.1+portcullis.1", want: "v1.37.1_portcullis.1"},
		{version: "v1.37.12+portcullis.30", want: "v1.37.12_portcullis.30"},
		{version: "v1.37.1", want: "v1.37.1"},
		{version: "v1.37.1-rc.0+portcullis.1", want: "v1.37.1-rc.0_portcullis.1"},
		{version: "v1.37.1+portcullis/1", want: "v1.37.1_portcullis_1"},
		{version: "v1.37.1+portcullis~1é", want: "v1.37.1_portcullis_1_"},
		{version: "", wantErr: "-version is required"},
		{version: "-v1.37.1", wantErr: "not a valid image tag"},
		{version: ".v1.37.1", wantErr: "not a valid image tag"},
		{version: "v" + strings.Repeat("1", 127), want: "v" + strings.Repeat("1", 127)},
		{version: "v" + strings.Repeat("1", 128), wantErr: "not a valid image tag"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			got, err := imageTag(tt.version)
			checkErr(t, err, tt.wantErr)
			if got != tt.want {
				t.Errorf("imageTag(%q) = %q, want %q", tt.version, got, tt.want)
			}
		})
	}
}

func TestParseSourceDateEpoch(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{in: "0", want: time.Unix(0, 0).UTC()},
		{in: "1763754000", want: time.Date(2025, 11, 21, 19, 40, 0, 0, time.UTC)},
		{in: "", wantErr: "SOURCE_DATE_EPOCH is not set"},
		{in: "-1", wantErr: "want a decimal number"},
		{in: "1.5", wantErr: "want a decimal number"},
		{in: " 1", wantErr: "want a decimal number"},
		{in: "99999999999999999999", wantErr: "out of range"},
		{in: "8589934592", wantErr: "beyond what a tar header can hold"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSourceDateEpoch(tt.in)
			checkErr(t, err, tt.wantErr)
			if !got.Equal(tt.want) || got.Location() != tt.want.Location() {
				t.Errorf("parseSourceDateEpoch(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseBinaryFlag(t *testing.T) {
	tests := []struct {
		in      string
		want    platformBinary
		wantErr string
	}{
		{in: "linux/amd64=out/kube-apiserver", want: platformBinary{platform: v1.Platform{OS: "linux", Architecture: "amd64"}, path: "out/kube-apiserver"}},
		{in: "linux/arm64=/abs/a=b", want: platformBinary{platform: v1.Platform{OS: "linux", Architecture: "arm64"}, path: "/abs/a=b"}},
		{in: "linux/amd64", wantErr: "want os/arch=path"},
		{in: "linux/amd64=", wantErr: "want os/arch=path"},
		{in: "linux=x", wantErr: "want os/arch"},
		{in: "linux/arm64/v8=x", wantErr: "want os/arch"},
		{in: "windows/amd64=x", wantErr: "only linux images"},
		{in: "linux/s390x=x", wantErr: "not one the release builds"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseBinaryFlag(tt.in)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(platformBinary{})); diff != "" {
				t.Errorf("parseBinaryFlag(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	amd64 := platformBinary{platform: v1.Platform{OS: "linux", Architecture: "amd64"}, path: "a"}
	arm64 := platformBinary{platform: v1.Platform{OS: "linux", Architecture: "arm64"}, path: "b"}
	tests := []struct {
		name     string
		args     []string
		envEpoch string
		want     options
		wantErr  string
	}{
		{
			name:     "binaries sorted by platform, epoch from the environment",
			args:     []string{"-revision", "0123456789abcdef0123456789abcdef01234567", "-license", "L", "-notice", "N", "-version", "v1.37.1+portcullis.1", "-binary", "linux/arm64=b", "-binary", "linux/amd64=a", "-o", "x.tar"},
			envEpoch: "10",
			want: options{version: "v1.37.1+portcullis.1", tag: "v1.37.1_portcullis.1", epoch: time.Unix(10, 0).UTC(),
				binaries: []platformBinary{amd64, arm64}, output: "x.tar", revision: "0123456789abcdef0123456789abcdef01234567", source: defaultSource, license: "L", notice: "N"},
		},
		{
			name:     "the flag overrides the environment",
			args:     []string{"-revision", "0123456789abcdef0123456789abcdef01234567", "-license", "L", "-notice", "N", "-version", "v1.37.1+portcullis.1", "-source-date-epoch", "20", "-binary", "linux/amd64=a", "-o", "x.tar"},
			envEpoch: "10",
			want: options{version: "v1.37.1+portcullis.1", tag: "v1.37.1_portcullis.1", epoch: time.Unix(20, 0).UTC(),
				binaries: []platformBinary{amd64}, output: "x.tar", revision: "0123456789abcdef0123456789abcdef01234567", source: defaultSource, license: "L", notice: "N"},
		},
		{
			name:    "no epoch anywhere",
			args:    []string{"-version", "v1.37.1+portcullis.1", "-binary", "linux/amd64=a", "-o", "x.tar"},
			wantErr: "SOURCE_DATE_EPOCH is not set",
		},
		{
			name:     "a platform twice",
			args:     []string{"-revision", "0123456789abcdef0123456789abcdef01234567", "-license", "L", "-notice", "N", "-version", "v1", "-binary", "linux/amd64=a", "-binary", "linux/amd64=b", "-o", "x.tar"},
			envEpoch: "10",
			wantErr:  "-binary linux/amd64 is given twice",
		},
		{
			name:     "no binary",
			args:     []string{"-revision", "0123456789abcdef0123456789abcdef01234567", "-license", "L", "-notice", "N", "-version", "v1", "-o", "x.tar"},
			envEpoch: "10",
			wantErr:  "no -binary given",
		},
		{
			name:     "no output",
			args:     []string{"-version", "v1", "-binary", "linux/amd64=a"},
			envEpoch: "10",
			wantErr:  "-o is required",
		},
		{
			name:     "no version",
			args:     []string{"-binary", "linux/amd64=a", "-o", "x.tar"},
			envEpoch: "10",
			wantErr:  "-version is required",
		},
		{
			name:     "no revision",
			args:     []string{"-version", "v1", "-binary", "linux/amd64=a", "-o", "x.tar", "-license", "L", "-notice", "N"},
			envEpoch: "10",
			wantErr:  `-revision "": want the commit's full hash`,
		},
		{
			name:     "a short revision",
			args:     []string{"-version", "v1", "-binary", "linux/amd64=a", "-o", "x.tar", "-revision", "0123abc", "-license", "L", "-notice", "N"},
			envEpoch: "10",
			wantErr:  `-revision "0123abc"`,
		},
		{
			name:     "no notice",
			args:     []string{"-version", "v1", "-binary", "linux/amd64=a", "-o", "x.tar", "-revision", "0123456789abcdef0123456789abcdef01234567", "-license", "L"},
			envEpoch: "10",
			wantErr:  "-license and -notice are required",
		},
		{
			name:     "a stray argument",
			args:     []string{"-version", "v1", "-binary", "linux/amd64=a", "-o", "x.tar", "extra"},
			envEpoch: "10",
			wantErr:  `unexpected arguments ["extra"]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseArgs(tt.args, tt.envEpoch, io.Discard)
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(options{}, platformBinary{})); diff != "" {
				t.Errorf("parseArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckStaticELF(t *testing.T) {
	tests := []struct {
		name    string
		machine elf.Machine
		typ     elf.Type
		interp  bool
		arch    string
		wantErr string
	}{
		{name: "static amd64", machine: elf.EM_X86_64, typ: elf.ET_EXEC, arch: "amd64"},
		{name: "static arm64", machine: elf.EM_AARCH64, typ: elf.ET_EXEC, arch: "arm64"},
		{name: "arm64 binary given as amd64", machine: elf.EM_AARCH64, typ: elf.ET_EXEC, arch: "amd64", wantErr: "built for EM_AARCH64, but it is given as the amd64 binary"},
		{name: "dynamically linked", machine: elf.EM_X86_64, typ: elf.ET_EXEC, interp: true, arch: "amd64", wantErr: "dynamically linked"},
		{name: "position independent", machine: elf.EM_X86_64, typ: elf.ET_DYN, arch: "amd64", wantErr: "want a static executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kube-apiserver")
			if err := os.WriteFile(path, fakeELF(tt.machine, tt.typ, tt.interp), 0o755); err != nil {
				t.Fatal(err)
			}
			checkErr(t, checkStaticELF(path, tt.arch), tt.wantErr)
		})
	}
	t.Run("not ELF", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "kube-apiserver")
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		checkErr(t, checkStaticELF(path, "amd64"), path+": not a readable ELF binary")
	})
}

// fakeELF returns a minimal 64-bit little-endian ELF file: a header and one program header,
// PT_INTERP when interp is set and PT_LOAD otherwise.
func fakeELF(machine elf.Machine, typ elf.Type, interp bool) []byte {
	const headerSize, progSize = 64, 56
	h := elf.Header64{
		Type:      uint16(typ),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Phoff:     headerSize,
		Ehsize:    headerSize,
		Phentsize: progSize,
		Phnum:     1,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	prog := elf.Prog64{Type: uint32(elf.PT_LOAD)}
	if interp {
		prog.Type = uint32(elf.PT_INTERP)
	}
	var buf bytes.Buffer
	// Writes to a bytes.Buffer cannot fail.
	_ = binary.Write(&buf, binary.LittleEndian, h)
	_ = binary.Write(&buf, binary.LittleEndian, prog)
	return buf.Bytes()
}

// checkErr fails t unless err is nil when wantErr is empty, or contains wantErr otherwise.
func checkErr(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("got no error, want one containing %q", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Fatalf("error %q does not contain %q", err, wantErr)
	}
}
