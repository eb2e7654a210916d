package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestConstraint(t *testing.T) {
	supported := lanes{all: []minor{35, 36, 37}, defaultLane: 37}
	withPreview := lanes{all: []minor{35, 36, 37, 38}, defaultLane: 37}
	for _, tc := range []struct {
		name  string
		lanes lanes
		file  string
		want  string
		err   string
	}{
		{"one older minor", supported, "x_1_35.go", "kube1.35", ""},
		{"the default minor", supported, "minor_1_37.go", "!kube1.35 && !kube1.36", ""},
		{"up to an older minor", supported, "run_upto_1_36.go", "kube1.35 || kube1.36", ""},
		{"from the default minor", supported, "run_from_1_37_test.go", "!kube1.35 && !kube1.36", ""},
		{"from an older minor", supported, "upstream_from_1_36.go", "!kube1.35", ""},
		{"the default minor beside a preview", withPreview, "minor_1_37.go", "!kube1.35 && !kube1.36 && !kube1.38", ""},
		{"the preview", withPreview, "minor_1_38.go", "kube1.38", ""},
		{"up to the default beside a preview", withPreview, "x_upto_1_37.go", "!kube1.38", ""},
		{"from the preview", withPreview, "x_from_1_38.go", "kube1.38", ""},
		{"from the default beside a preview", withPreview, "x_from_1_37.go", "!kube1.35 && !kube1.36", ""},
		{"a dropped minor", supported, "x_1_34.go", "", "selects no minor"},
		{"up to a dropped minor", supported, "x_upto_1_34.go", "", "selects no minor"},
		{"from the oldest", supported, "x_from_1_35.go", "", "selects every minor"},
		{"up to the newest", supported, "x_upto_1_37.go", "", "selects every minor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := parseName(tc.file)
			if !ok {
				t.Fatalf("parseName(%q): not an adapter's name", tc.file)
			}
			got, err := tc.lanes.constraint(r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("constraint: %q, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("constraint = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for _, file := range []string{"header_value_count_go127.go", "x.go", "x_1_35.txt", "v1_35x.go"} {
		if _, ok := parseName(file); ok {
			t.Errorf("parseName(%q): read as an adapter", file)
		}
	}
}

func TestRunWritesAndVerifies(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		path = filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("releases/minors", "1.35\n1.36\n1.37\n")
	write("pkg/a/run_upto_1_36.go", "//go:build kube1.36\n\npackage a\n")
	write("pkg/a/run_from_1_37.go", "package a\n")
	write("pkg/a/plain.go", "//go:build linux\n\npackage a\n")
	write("pkg/a/headed_1_35.go", "// A header.\n\n//go:build kube1.36\n\npackage a\n")
	if out, err := exec.Command("git", "-C", root, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if err := run(root, true); err == nil || !strings.Contains(err.Error(), "run_upto_1_36.go: want //go:build kube1.35 || kube1.36") {
		t.Errorf("-verify of stale constraints: %v", err)
	}
	if err := run(root, false); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"pkg/a/run_upto_1_36.go": "//go:build kube1.35 || kube1.36\n\npackage a\n",
		"pkg/a/run_from_1_37.go": "//go:build !kube1.35 && !kube1.36\n\npackage a\n",
		"pkg/a/plain.go":         "//go:build linux\n\npackage a\n",
		"pkg/a/headed_1_35.go":   "// A header.\n\n//go:build kube1.35\n\npackage a\n",
	} {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s:\n%s\nwant\n%s", path, got, want)
		}
	}
	if err := run(root, true); err != nil {
		t.Errorf("-verify after writing: %v", err)
	}
	write("pkg/a/handkept.go", "//go:build kube1.35\n\npackage a\n")
	if err := run(root, true); err == nil || !strings.Contains(err.Error(), "handkept.go: a Kubernetes minor's build tag on a file whose name says no minor") {
		t.Errorf("a minor's tag on a file of another name: %v", err)
	}
	if err := os.Remove(filepath.Join(root, "pkg/a/handkept.go")); err != nil {
		t.Fatal(err)
	}
	write("releases/preview", "1.36\n")
	if err := run(root, true); err == nil || !strings.Contains(err.Error(), "not newer than the newest supported minor") {
		t.Errorf("a preview older than the default: %v", err)
	}
}
