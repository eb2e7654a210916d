package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// writeFakeRelease writes stand-in binaries (minimal ELF files) for both platforms and
// returns the options that package them into out.
func writeFakeRelease(t *testing.T, dir, out string) options {
	t.Helper()
	var binaries []platformBinary
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		path := filepath.Join(dir, arch, "kube-apiserver")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, fakeELF(machine, elf.ET_EXEC, false), 0o755); err != nil {
			t.Fatal(err)
		}
		binaries = append(binaries, platformBinary{platform: v1.Platform{OS: "linux", Architecture: arch}, path: path})
	}
	license, notice := filepath.Join(dir, "LICENSE"), filepath.Join(dir, "NOTICE")
	for path, text := range map[string]string{license: "the licence\n", notice: "the notice\n"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	thirdParty := filepath.Join(dir, "third-party")
	for path, text := range map[string]string{"example.com/mit/LICENSE": "MIT\n", "example.com/mpl/LICENSE": "MPL-2.0\n", "example.com/mpl/file.go": "package mpl\n"} {
		path = filepath.Join(thirdParty, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-version", "v1.37.1+portcullis.1", "-o", out, "-revision", "0123456789abcdef0123456789abcdef01234567", "-license", license, "-notice", notice, "-third-party-licenses", thirdParty}
	for _, b := range binaries {
		args = append(args, "-binary", b.name()+"="+b.path)
	}
	opts, err := parseArgs(args, "1763754000", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

func TestWriteImageArchiveIsReproducible(t *testing.T) {
	var archives [][]byte
	for _, run := range []string{"first", "second"} {
		dir := filepath.Join(t.TempDir(), run)
		out := filepath.Join(dir, "image.oci.tar")
		if err := writeImageArchive(writeFakeRelease(t, dir, out)); err != nil {
			t.Fatalf("%s run: %v", run, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, b)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two runs over the same binaries wrote different archives")
	}
}

func TestWriteImageArchiveLayout(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "image.oci.tar")
	opts := writeFakeRelease(t, dir, out)
	if err := writeImageArchive(opts); err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(dir, "layout")
	extract(t, out, layoutDir)

	root, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	rootManifest, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rootManifest.Manifests) != 1 {
		t.Fatalf("index.json lists %d descriptors, want 1", len(rootManifest.Manifests))
	}
	desc := rootManifest.Manifests[0]
	if desc.MediaType != types.OCIImageIndex || desc.Annotations[annotationRefName] != "v1.37.1_portcullis.1" {
		t.Errorf("index.json's descriptor is %s named %q, want %s named %q", desc.MediaType, desc.Annotations[annotationRefName], types.OCIImageIndex, "v1.37.1_portcullis.1")
	}

	index, err := root.ImageIndex(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantAnnotations := map[string]string{annotationVersion: "v1.37.1+portcullis.1", annotationCreated: "2025-11-21T19:40:00Z",
		annotationSource: "https://github.com/portcullis-k8s/portcullis", annotationRevision: "0123456789abcdef0123456789abcdef01234567", annotationLicenses: "Apache-2.0"}
	if diff := cmp.Diff(wantAnnotations, manifest.Annotations); diff != "" {
		t.Errorf("image index annotations (-want +got):\n%s", diff)
	}
	var platforms []string
	var baseDigests []v1.Hash
	for _, m := range manifest.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := index.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != m.Platform.Architecture || cfg.OS != m.Platform.OS {
			t.Errorf("%s: config says %s/%s", m.Platform, cfg.OS, cfg.Architecture)
		}
		if len(cfg.History) != 2 || !cfg.History[1].Created.Equal(testEpoch) {
			t.Errorf("%s: history %+v, want two entries created at %v", m.Platform, cfg.History, testEpoch)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if len(layers) != 2 {
			t.Fatalf("%s: %d layers, want 2 (base, binary)", m.Platform, len(layers))
		}
		for _, l := range layers {
			if mt, err := l.MediaType(); err != nil || mt != types.OCILayer {
				t.Errorf("%s: layer media type %s (%v), want %s", m.Platform, mt, err, types.OCILayer)
			}
		}
		base, err := layers[0].Digest()
		if err != nil {
			t.Fatal(err)
		}
		baseDigests = append(baseDigests, base)
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("index platforms (-want +got):\n%s", diff)
	}
	if len(baseDigests) == 2 && baseDigests[0] != baseDigests[1] {
		t.Errorf("the platforms' base layers differ (%s, %s); they should be one shared blob", baseDigests[0], baseDigests[1])
	}
}

// extract unpacks the regular files and directories of a tar into dir.
func extract(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(path, data, 0o644)
			}
		default:
			t.Fatalf("%s: %s has type %q; only directories and files are expected", archive, h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatalf("%s: extracting %s: %v", archive, h.Name, err)
		}
	}
}
