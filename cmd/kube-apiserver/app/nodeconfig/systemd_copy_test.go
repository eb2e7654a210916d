package nodeconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReadSystemdUnitCopy: a backup of a unit reads the drop-ins copied beside it, not the
// live unit's in systemd's directories, which may have changed since (a drop-in edited after
// the backup would otherwise read the same on both sides).
func TestReadSystemdUnitCopy(t *testing.T) {
	backup, live := t.TempDir(), t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	unit := filepath.Join(backup, "kube-apiserver.service")
	write(unit, "[Service]\nExecStart=/usr/local/bin/kube-apiserver --secure-port=6443\n")
	write(filepath.Join(backup, "kube-apiserver.service.d", "10-limits.conf"), "[Service]\nLimitNOFILE=65536\n")
	write(filepath.Join(live, "kube-apiserver.service.d", "10-limits.conf"), "[Service]\nLimitNOFILE=1048576\n")

	withLive, err := readSystemdUnit(unit, nil, []string{live})
	if err != nil {
		t.Fatal(err)
	}
	if got := withLive.Effective("LimitNOFILE"); !slices.Equal(got, []string{"1048576"}) {
		t.Fatalf("read with systemd's directory: LimitNOFILE %q, want the live drop-in's", got)
	}
	copied, err := ReadSystemdUnitCopy(unit)
	if err != nil {
		t.Fatal(err)
	}
	if got := copied.Effective("LimitNOFILE"); !slices.Equal(got, []string{"65536"}) {
		t.Errorf("read as a copy: LimitNOFILE %q, want the copied drop-in's 65536", got)
	}
}
