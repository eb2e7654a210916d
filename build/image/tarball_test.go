package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testEpoch = time.Unix(1763754000, 0).UTC()

func TestWithParents(t *testing.T) {
	tests := []struct {
		name    string
		in      []entry
		want    []string // names, in order
		wantErr string
	}{
		{
			name: "parents are added, everything sorted",
			in:   []entry{{name: "usr/local/bin/kube-apiserver"}, {name: "etc/passwd"}},
			want: []string{"etc", "etc/passwd", "usr", "usr/local", "usr/local/bin", "usr/local/bin/kube-apiserver"},
		},
		{
			name: "a listed directory is kept as listed",
			in:   []entry{{name: "home/nonroot", dir: true, mode: 0o700}, {name: "home", dir: true, mode: 0o755}},
			want: []string{"home", "home/nonroot"},
		},
		{
			// Sorted by name in the tar, where directories end in "/": '-' sorts before '/'.
			name: "a directory comes before what it holds, after a longer sibling",
			in:   []entry{{name: "etc/passwd"}, {name: "etc-release"}},
			want: []string{"etc-release", "etc", "etc/passwd"},
		},
		{name: "duplicate", in: []entry{{name: "etc/passwd"}, {name: "etc/passwd"}}, wantErr: `"etc/passwd" is listed twice`},
		{name: "absolute", in: []entry{{name: "/etc/passwd"}}, wantErr: "want a clean path"},
		{name: "unclean", in: []entry{{name: "etc//passwd"}}, wantErr: "want a clean path"},
		{name: "escapes", in: []entry{{name: "../passwd"}}, wantErr: "want a clean path"},
		{name: "root itself", in: []entry{{name: ".", dir: true}}, wantErr: "want a clean path"},
		{name: "under a file", in: []entry{{name: "etc"}, {name: "etc/passwd"}}, wantErr: `under "etc", which is not a directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withParents(tt.in)
			checkErr(t, err, tt.wantErr)
			var names []string
			for _, e := range got {
				names = append(names, e.name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("withParents (-want +got):\n%s", diff)
			}
		})
	}
}

// tarHeader is what a test compares of a tar header.
type tarHeader struct {
	Name     string
	Typeflag byte
	Mode     int64
	Uid, Gid int
	Uname    string
	Gname    string
	ModTime  time.Time
	Size     int64
	Format   tar.Format
}

func readTar(t *testing.T, b []byte) ([]tarHeader, map[string]string) {
	t.Helper()
	var headers []tarHeader
	contents := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, contents
		}
		if err != nil {
			t.Fatalf("reading tar: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s from tar: %v", h.Name, err)
		}
		headers = append(headers, tarHeader{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime.UTC(), h.Size, h.Format})
		contents[h.Name] = string(data)
	}
}

func TestLayerTar(t *testing.T) {
	entries := []entry{
		{name: "tmp", dir: true, mode: 0o1777},
		{name: "usr/local/bin/kube-apiserver", mode: 0o755, data: []byte("binary")},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: 65532, gid: 65532},
	}
	got, err := layerTar(entries, testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	headers, contents := readTar(t, got)
	dir := func(name string, mode int64, id int) tarHeader {
		return tarHeader{Name: name, Typeflag: tar.TypeDir, Mode: mode, Uid: id, Gid: id, ModTime: testEpoch, Format: tar.FormatUSTAR}
	}
	want := []tarHeader{
		dir("home/", 0o755, 0),
		dir("home/nonroot/", 0o700, 65532),
		dir("tmp/", 0o1777, 0),
		dir("usr/", 0o755, 0),
		dir("usr/local/", 0o755, 0),
		dir("usr/local/bin/", 0o755, 0),
		{Name: "usr/local/bin/kube-apiserver", Typeflag: tar.TypeReg, Mode: 0o755, ModTime: testEpoch, Size: 6, Format: tar.FormatUSTAR},
	}
	if diff := cmp.Diff(want, headers); diff != "" {
		t.Errorf("layer headers (-want +got):\n%s", diff)
	}
	if contents["usr/local/bin/kube-apiserver"] != "binary" {
		t.Errorf("kube-apiserver holds %q, want %q", contents["usr/local/bin/kube-apiserver"], "binary")
	}

	// The order entries are listed in must not matter.
	reversed := []entry{entries[2], entries[1], entries[0]}
	again, err := layerTar(reversed, testEpoch)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, again) {
		t.Error("the same entries in another order give a different layer")
	}
}

func TestGzipBytes(t *testing.T) {
	in := bytes.Repeat([]byte("kube-apiserver "), 1000)
	a, err := gzipBytes(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := gzipBytes(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("compressing the same bytes twice gives different output")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" || zr.Comment != "" {
		t.Errorf("gzip header has time %v, name %q, comment %q; want none", zr.ModTime, zr.Name, zr.Comment)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, in) {
		t.Error("decompressed bytes differ from the input")
	}
}

func TestWriteArchive(t *testing.T) {
	fsys := fstest.MapFS{
		"oci-layout":           {Data: []byte(`{"imageLayoutVersion":"1.0.0"}`), Mode: 0o777, ModTime: time.Now()},
		"index.json":           {Data: []byte(`{}`), Mode: 0o600},
		"blobs/sha256/bbbb":    {Data: []byte("b"), Mode: 0o755},
		"blobs/sha256/aaaa":    {Data: []byte("aa"), Mode: 0o644},
		"blobs/sha256/aaaa.gz": {Data: []byte("aaa")},
		"blobs-notes":          {Data: []byte("n")},
	}
	var buf bytes.Buffer
	if err := writeArchive(&buf, fsys, testEpoch); err != nil {
		t.Fatal(err)
	}
	headers, contents := readTar(t, buf.Bytes())
	dir := func(name string) tarHeader {
		return tarHeader{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: testEpoch, Format: tar.FormatUSTAR}
	}
	file := func(name string, size int64) tarHeader {
		return tarHeader{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, ModTime: testEpoch, Size: size, Format: tar.FormatUSTAR}
	}
	want := []tarHeader{
		file("blobs-notes", 1),
		dir("blobs/"),
		dir("blobs/sha256/"),
		file("blobs/sha256/aaaa", 2),
		file("blobs/sha256/aaaa.gz", 3),
		file("blobs/sha256/bbbb", 1),
		file("index.json", 2),
		file("oci-layout", 30),
	}
	if diff := cmp.Diff(want, headers); diff != "" {
		t.Errorf("archive headers (-want +got):\n%s", diff)
	}
	if contents["blobs/sha256/aaaa.gz"] != "aaa" {
		t.Errorf("blobs/sha256/aaaa.gz holds %q, want %q", contents["blobs/sha256/aaaa.gz"], "aaa")
	}

	symlinked := fstest.MapFS{"index.json": {Data: []byte("x"), Mode: fs.ModeSymlink}}
	err := writeArchive(io.Discard, symlinked, testEpoch)
	checkErr(t, err, "index.json: L--------- is neither a directory nor a regular file")
}
