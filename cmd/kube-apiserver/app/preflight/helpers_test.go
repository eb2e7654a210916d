package preflight

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// commandWithExitCode is preflight's command as main runs it: its exit code recorded in code.
func commandWithExitCode(code *int) *cobra.Command {
	cmd := NewCommand()
	cmd.SetContext(WithExitCode(context.Background(), code))
	return cmd
}

func TestWithoutOurPlugins(t *testing.T) {
	got := withoutOurPlugins([]string{
		"--enable-admission-plugins=NodeRestriction,PodPreset,SecurityContextDeny",
		"--disable-admission-plugins", "DenyEscalatingExec,ResourceQuota",
		"--v=2",
	})
	want := []string{"--enable-admission-plugins=NodeRestriction", "--disable-admission-plugins", "ResourceQuota", "--v=2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestChainDiff(t *testing.T) {
	got := chainDiff("validating", []string{"A", "B", "C"}, []string{"A", "X", "C", "B"})
	want := []string{"+ X (validating; a Portcullis plugin)", "! the shared validating plugins run in another order"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := chainDiff("mutating", []string{"A"}, []string{"A"}); len(got) != 0 {
		t.Errorf("identical chains differ: %v", got)
	}
}
