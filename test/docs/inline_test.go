package docs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestEveryInlineCommandAccounted: every inline command line of the documentation has exactly
// one entry in Inline, every entry names one, and an entry's Block is a command block of
// Blocks that holds the same command.
func TestEveryInlineCommandAccounted(t *testing.T) {
	root := RepoRoot(t)
	spans, err := InlineCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) == 0 {
		t.Fatal("no inline command line in README.md and docs/")
	}
	entries := map[[2]string]InlineEntry{}
	for _, e := range Inline {
		if _, dup := entries[[2]string{e.File, e.Text}]; dup {
			t.Errorf("%s: %q is listed twice", e.File, e.Text)
		}
		entries[[2]string{e.File, e.Text}] = e
		if (e.Block == "") == (e.NotRun == "") {
			t.Errorf("%s: the entry for %q needs either Block or NotRun, not both or neither", e.File, e.Text)
		}
	}
	all, err := commandSpans(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range CommandNames {
		if !slices.ContainsFunc(all, func(s InlineSpan) bool { return s.Text == name }) {
			t.Errorf("test/docs.CommandNames lists `%s`, which no page shows", name)
		}
		if e, listed := slices.BinarySearch(CommandNames, name); !listed || CommandNames[e] != name {
			t.Errorf("test/docs.CommandNames is not sorted at `%s`", name)
		}
	}
	seen := map[[2]string]bool{}
	for _, s := range spans {
		if _, ok := entries[[2]string{s.File, s.Text}]; !ok {
			t.Errorf("%s:%d: the inline command `%s` has no entry in test/docs.Inline: show it in a command block a test runs (and name that block's key), or say why it is not run as written (NotRun)", s.File, s.Line, s.Text)
		}
		seen[[2]string{s.File, s.Text}] = true
	}
	blocks, err := CommandBlocks(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Inline {
		if !seen[[2]string{e.File, e.Text}] {
			t.Errorf("%s: test/docs.Inline lists `%s`, which the page no longer shows", e.File, e.Text)
		}
		if e.Block == "" {
			continue
		}
		found := false
		for _, entry := range Blocks {
			if entry.Key != e.Block {
				continue
			}
			for _, b := range blocks {
				if b.File == entry.File && Matches(b.Text, entry.Key) {
					found = true
					if !SameCommand(b.Text, e.Text) {
						t.Errorf("%s: `%s` is listed as run by the block of %s with key %q, which does not hold it:\n%s", e.File, e.Text, entry.File, entry.Key, b.Text)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: `%s` names the block key %q, which no entry of Blocks has", e.File, e.Text, e.Block)
		}
	}
}

func TestInlineCommands(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "Run `kubectl get --raw /readyz` and `kubeadm upgrade apply` (a name), `kubectl`.\n" +
		"```sh\n`kubectl get pods -A` in a block\n```\n" +
		"  ```\n  `crictl ps --name x` in an indented block\n  ```\n" +
		"Then `./kube-apiserver preflight --manifest …`.\n" +
		"A span that wraps: `cp /a\n  /b` here.\n"
	for name, text := range map[string]string{"README.md": doc, "docs/a.md": "`systemctl cat kube-apiserver` names a unit; `journalctl -u x -f`.\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := InlineCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []InlineSpan{
		{File: "README.md", Line: 1, Text: "kubectl get --raw /readyz"},
		{File: "README.md", Line: 8, Text: "./kube-apiserver preflight --manifest …"},
		{File: "README.md", Line: 9, Text: "cp /a /b"},
		{File: "docs/a.md", Line: 1, Text: "systemctl cat kube-apiserver"},
		{File: "docs/a.md", Line: 1, Text: "journalctl -u x -f"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, c := range []struct {
		block, inline string
		want          bool
	}{
		{"skopeo copy --all a \\\n  docker://b\n", "skopeo copy --all a docker://b", true},
		{"kube-apiserver preflight --manifest /etc/x.yaml\n", "kube-apiserver preflight --manifest …", true},
		{"kubectl get --raw /readyz\n", "kubectl get --raw /livez", false},
		{"anything\n", "…", false},
	} {
		if got := SameCommand(c.block, c.inline); got != c.want {
			t.Errorf("SameCommand(%q, %q) = %v, want %v", c.block, c.inline, got, c.want)
		}
	}
}
