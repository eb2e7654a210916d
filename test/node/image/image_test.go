package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite writes an image of each kind of file and reads its archive back as a runtime does:
// the index names the manifest, the manifest the config and the layer, and the layer holds
// each file with its parents, /tmp, its mode, its bytes or its link target.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	source := filepath.Join(dir, "program")
	if err := os.WriteFile(source, []byte("binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := Image{
		Ref: "registry.example/test/busybox:1.0",
		Files: []File{
			{Path: "/bin/busybox", Source: source, Mode: 0o755},
			{Path: "/bin/sh", Link: "/bin/busybox"},
			{Path: "/usr/local/bin/nnp", Source: source, Mode: 0o4755},
			{Path: "/etc/passwd", Content: []byte("root:x:0:0::/root:/bin/sh\n"), Mode: 0o644},
			{Path: "/uploads", Dir: true, Mode: 0o700},
		},
		Entrypoint: []string{"/bin/busybox"},
		Cmd:        []string{"sh"},
	}
	out := filepath.Join(dir, "image.oci.tar")
	if err := Write(img, out); err != nil {
		t.Fatal(err)
	}
	blobs := readTar(t, mustRead(t, out))
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	unmarshal(t, blobs["index.json"].data, &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != img.Ref {
		t.Fatalf("index: %+v", index)
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	unmarshal(t, blob(t, blobs, index.Manifests[0].Digest), &manifest)
	var config struct {
		Config struct{ Entrypoint, Cmd []string }
	}
	unmarshal(t, blob(t, blobs, manifest.Config.Digest), &config)
	if strings.Join(config.Config.Entrypoint, " ") != "/bin/busybox" || strings.Join(config.Config.Cmd, " ") != "sh" {
		t.Errorf("config: entrypoint %q, cmd %q", config.Config.Entrypoint, config.Config.Cmd)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %d layers", len(manifest.Layers))
	}
	layer := readTar(t, blob(t, blobs, manifest.Layers[0].Digest))
	wants := []struct {
		name     string
		typeflag byte
		mode     int64
		data     string
		link     string
	}{
		{name: "tmp/", typeflag: tar.TypeDir, mode: 0o1777},
		{name: "bin/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "bin/busybox", typeflag: tar.TypeReg, mode: 0o755, data: "binary"},
		{name: "bin/sh", typeflag: tar.TypeSymlink, mode: 0o777, link: "/bin/busybox"},
		{name: "usr/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/local/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/local/bin/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "usr/local/bin/nnp", typeflag: tar.TypeReg, mode: 0o4755, data: "binary"},
		{name: "etc/", typeflag: tar.TypeDir, mode: 0o755},
		{name: "etc/passwd", typeflag: tar.TypeReg, mode: 0o644, data: "root:x:0:0::/root:/bin/sh\n"},
		{name: "uploads/", typeflag: tar.TypeDir, mode: 0o700},
	}
	for _, want := range wants {
		got, ok := layer[want.name]
		if !ok {
			t.Errorf("the layer has no %s", want.name)
			continue
		}
		if got.typeflag != want.typeflag || got.mode != want.mode || string(got.data) != want.data || got.link != want.link {
			t.Errorf("%s: type %c mode %o data %q link %q, want type %c mode %o data %q link %q",
				want.name, got.typeflag, got.mode, got.data, got.link, want.typeflag, want.mode, want.data, want.link)
		}
	}
	if len(layer) != len(wants) {
		t.Errorf("the layer has %d entries, want %d", len(layer), len(wants))
	}
}

type entry struct {
	typeflag byte
	mode     int64
	data     []byte
	link     string
}

func readTar(t *testing.T, data []byte) map[string]entry {
	t.Helper()
	entries := map[string]entry{}
	r := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := entries[h.Name]; dup {
			t.Errorf("%s is written twice", h.Name)
		}
		content, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = entry{typeflag: h.Typeflag, mode: h.Mode, data: content, link: h.Linkname}
	}
}

func blob(t *testing.T, blobs map[string]entry, digest string) []byte {
	t.Helper()
	e, ok := blobs["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("no blob %s", digest)
	}
	return e.data
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func unmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}
