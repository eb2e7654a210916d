package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// entry is one file or directory of a layer.
type entry struct {
	name     string // slash-separated, relative to the image's root, no trailing slash
	dir      bool
	mode     int64 // permission bits, plus the sticky bit where wanted
	uid, gid int
	data     []byte // a regular file's contents
}

// withParents returns entries plus every directory above them that is not listed (root-owned,
// 0755), sorted by name, so a layer never relies on a runtime inventing directories with
// whatever mode it likes.
func withParents(entries []entry) ([]entry, error) {
	byName := make(map[string]entry, len(entries))
	for _, e := range entries {
		if !fs.ValidPath(e.name) || e.name == "." {
			return nil, fmt.Errorf("layer entry %q: want a clean path relative to the image's root", e.name)
		}
		if _, dup := byName[e.name]; dup {
			return nil, fmt.Errorf("layer entry %q is listed twice", e.name)
		}
		byName[e.name] = e
	}
	for _, e := range entries {
		for dir := path.Dir(e.name); dir != "."; dir = path.Dir(dir) {
			parent, ok := byName[dir]
			if !ok {
				byName[dir] = entry{name: dir, dir: true, mode: 0o755}
				continue
			}
			if !parent.dir {
				return nil, fmt.Errorf("layer entry %q is under %q, which is not a directory", e.name, dir)
			}
		}
	}
	all := make([]entry, 0, len(byName))
	for _, e := range byName {
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(tarName(a.name, a.dir), tarName(b.name, b.dir)) })
	return all, nil
}

// tarName is an entry's name in a tar: directories end in "/". Sorting by it puts every
// directory before what it holds ("etc/" is a prefix of "etc/passwd").
func tarName(name string, dir bool) string {
	if dir {
		return name + "/"
	}
	return name
}

// header is the one place tar headers are made: numeric owners only, no user or group
// names, every time the same fixed one, USTAR so no extended records vary.
func header(name string, dir bool, mode int64, uid, gid int, size int64, modTime time.Time) *tar.Header {
	h := &tar.Header{
		Name:     name,
		Mode:     mode,
		Uid:      uid,
		Gid:      gid,
		Size:     size,
		ModTime:  modTime,
		Typeflag: tar.TypeReg,
		Format:   tar.FormatUSTAR,
	}
	if dir {
		h.Name = tarName(name, true)
		h.Typeflag = tar.TypeDir
		h.Size = 0
	}
	return h
}

// layerTar writes entries, and the directories above them, as an uncompressed layer tar.
func layerTar(entries []entry, modTime time.Time) ([]byte, error) {
	all, err := withParents(entries)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range all {
		if err := tw.WriteHeader(header(e.name, e.dir, e.mode, e.uid, e.gid, int64(len(e.data)), modTime)); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
		}
		if !e.dir {
			if _, err := tw.Write(e.data); err != nil {
				return nil, fmt.Errorf("layer entry %s: %w", e.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gzipBytes compresses b with the standard library at a fixed level. The gzip header carries
// no name and no time, so the output depends on b alone (for a given Go release).
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeArchive tars the whole of fsys to w, sorted by tar name, with every header made by
// header: directories 0755, files 0644, owned by 0:0, modified at modTime. Only directories
// and regular files are accepted; an OCI image layout has nothing else.
func writeArchive(w io.Writer, fsys fs.FS, modTime time.Time) error {
	type file struct {
		name string
		dir  bool
		size int64
	}
	var files []file
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case name == ".":
			return nil
		case d.IsDir():
			files = append(files, file{name: name, dir: true})
			return nil
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, file{name: name, size: info.Size()})
			return nil
		default:
			return fmt.Errorf("%s: %v is neither a directory nor a regular file", name, d.Type())
		}
	})
	if err != nil {
		return err
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(tarName(a.name, a.dir), tarName(b.name, b.dir)) })

	tw := tar.NewWriter(w)
	for _, f := range files {
		if f.dir {
			if err := tw.WriteHeader(header(f.name, true, 0o755, 0, 0, 0, modTime)); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			continue
		}
		if err := tw.WriteHeader(header(f.name, false, 0o644, 0, 0, f.size, modTime)); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := copyFile(tw, fsys, f.name, f.size); err != nil {
			return err
		}
	}
	return tw.Close()
}

// copyFile copies name from fsys to w, failing if it no longer has the size its header gave.
func copyFile(w io.Writer, fsys fs.FS, name string, size int64) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("%s: changed size while being archived (%d bytes, then %d)", name, size, n)
	}
	return nil
}
