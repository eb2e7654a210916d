package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestWorkDir(t *testing.T) {
	given := filepath.Join(t.TempDir(), "a", "b")
	path, keep, err := WorkDir(given, "x-")
	if err != nil || path != given || !keep {
		t.Fatalf("WorkDir(%q): %q, keep %t, %v; want it created and kept", given, path, keep, err)
	}
	if info, err := os.Stat(given); err != nil || !info.IsDir() {
		t.Errorf("%s not created: %v", given, err)
	}
	path, keep, err = WorkDir("", "harness-test-")
	if err != nil || keep || !regexp.MustCompile(`harness-test-\d+$`).MatchString(path) {
		t.Fatalf("WorkDir(\"\"): %q, keep %t, %v; want a temporary directory, not kept", path, keep, err)
	}
	os.RemoveAll(path)
}

func TestWriteFileAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	for _, text := range []string{"first", "second"} {
		if err := WriteFileAtomic(path, []byte(text)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != text {
			t.Errorf("read %q, %v; want %q", got, err, text)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
	if err := WriteFileAtomic(filepath.Join(t.TempDir(), "missing", "doc.md"), nil); err == nil {
		t.Error("writing into a missing directory: want an error")
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	NewProgress(&b).Printf("step %d of %s", 1, "two")
	if !regexp.MustCompile(`^\[ +0s\] step 1 of two\n$`).MatchString(b.String()) {
		t.Errorf("got %q", b.String())
	}
	NewProgress(nil).Printf("discarded") // must not panic
}
