// Package image writes the real node's images: a static binary in one layer, as an OCI image
// layout in a tar that `ctr images import` reads. No registry is reachable here, so the node
// runs images built from the binaries the suite built (stock kube-apiserver,
// kube-controller-manager, kube-scheduler and etcd from upstream's module graph, the pause
// program), each under the name kubeadm asks for. Our kube-apiserver's is the release's own
// image (build/image), not one of these.
package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"
)

// File is a file of the image's one layer: a regular file with Source's bytes or Content, a
// symbolic link to Link, or with Dir a directory.
type File struct {
	// Path is absolute, in the image.
	Path string
	// Source is the file on the host whose bytes it holds.
	Source  string
	Content []byte
	Link    string
	Dir     bool
	Mode    int64
}

// Image is what Write writes.
type Image struct {
	// Ref is the name and tag the runtime knows it by: registry.k8s.io/etcd:3.6.8-0.
	Ref   string
	Files []File
	// Entrypoint is the command a container runs when its pod names none, Cmd its arguments
	// when the pod names none.
	Entrypoint, Cmd []string
}

// PATH is the images' search path: kubeadm's static pods run their command by name.
const PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is every timestamp of the images: a build of the same binaries is the same image.
var epoch = time.Unix(0, 0).UTC()

// Write writes img as an OCI image layout tar to out.
func Write(img Image, out string) error {
	if !strings.Contains(path.Base(img.Ref), ":") {
		return fmt.Errorf("image %q: want name:tag", img.Ref)
	}
	layer, err := layerTar(img.Files)
	if err != nil {
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	layerDigest := digest(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       map[string]any{"Env": []string{PATH}, "Entrypoint": img.Entrypoint, "Cmd": img.Cmd},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", config),
		"layers":        []any{descriptor("application/vnd.oci.image.layer.v1.tar", layer)},
	})
	if err != nil {
		return err
	}
	tag := img.Ref[strings.LastIndex(img.Ref, ":")+1:]
	manifestDescriptor := descriptor("application/vnd.oci.image.manifest.v1+json", manifest)
	manifestDescriptor["annotations"] = map[string]string{
		// containerd's name for the image, and the OCI layout's tag.
		"io.containerd.image.name":          img.Ref,
		"org.opencontainers.image.ref.name": tag,
	}
	manifestDescriptor["platform"] = map[string]string{"architecture": "amd64", "os": "linux"}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []any{manifestDescriptor}})
	if err != nil {
		return err
	}

	var archive bytes.Buffer
	w := tar.NewWriter(&archive)
	for _, entry := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"blobs/sha256/" + strings.TrimPrefix(digest(manifest), "sha256:"), manifest},
		{"blobs/sha256/" + strings.TrimPrefix(digest(config), "sha256:"), config},
		{"blobs/sha256/" + strings.TrimPrefix(layerDigest, "sha256:"), layer},
	} {
		if err := w.WriteHeader(&tar.Header{Name: entry.name, Mode: 0o644, Size: int64(len(entry.data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := w.Write(entry.data); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, archive.Bytes(), 0o644)
}

// layerTar is the layer: each file, its parent directories, and /tmp (mode 1777).
func layerTar(files []File) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDir := func(dir string, mode int64) error {
		if dirs[dir] {
			return nil
		}
		dirs[dir] = true
		return w.WriteHeader(&tar.Header{Name: strings.TrimPrefix(dir, "/") + "/", Mode: mode, ModTime: epoch, Typeflag: tar.TypeDir})
	}
	if err := addDir("/tmp", 0o1777); err != nil {
		return nil, err
	}
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("%s: not an absolute path", f.Path)
		}
		var parents []string
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := addDir(d, 0o755); err != nil {
				return nil, err
			}
		}
		if f.Dir {
			if err := addDir(f.Path, f.Mode); err != nil {
				return nil, err
			}
			continue
		}
		if err := writeFile(w, f); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeFile writes the entry of f, a regular file or a link, whose parents are written.
func writeFile(w *tar.Writer, f File) error {
	name := strings.TrimPrefix(f.Path, "/")
	switch {
	case f.Link != "":
		return w.WriteHeader(&tar.Header{Name: name, Linkname: f.Link, Mode: 0o777, ModTime: epoch, Typeflag: tar.TypeSymlink})
	case f.Source == "":
		if err := w.WriteHeader(&tar.Header{Name: name, Mode: f.Mode, Size: int64(len(f.Content)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := w.Write(f.Content)
		return err
	}
	src, err := os.Open(f.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	if err := w.WriteHeader(&tar.Header{Name: name, Mode: f.Mode, Size: info.Size(), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	return err
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func descriptor(mediaType string, data []byte) map[string]any {
	return map[string]any{"mediaType": mediaType, "digest": digest(data), "size": len(data)}
}
