package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	doc := "# Title\n" +
		"```sh\n" +
		"echo top\n" +
		"```\n" +
		"1. A step:\n" +
		"   ```bash\n" +
		"   cat > f <<EOF\n" +
		"     indented: yes\n" +
		"   EOF\n" +
		"\n" +
		"   ```\n" +
		"````console\n" +
		"```sh\n" +
		"inner fence\n" +
		"````\n" +
		"~~~json\n" +
		"{}\n" +
		"~~~\n" +
		"```\n" +
		"plain\n" +
		"```\n"
	got := Parse("x.md", []byte(doc))
	want := []CodeBlock{
		{File: "x.md", Line: 2, Info: "sh", Text: "echo top\n"},
		{File: "x.md", Line: 6, Info: "bash", Text: "cat > f <<EOF\n  indented: yes\nEOF\n\n"},
		{File: "x.md", Line: 12, Info: "console", Text: "```sh\ninner fence\n"},
		{File: "x.md", Line: 16, Info: "json", Text: "{}\n"},
		{File: "x.md", Line: 19, Info: "", Text: "plain\n"},
	}
	if len(got) != len(want) {
		t.Fatalf("Parse found %d blocks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	var commands int
	for _, b := range got {
		if b.IsCommand() {
			commands++
		}
	}
	if commands != 3 {
		t.Errorf("%d command blocks, want 3 (sh, bash, console)", commands)
	}
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		text, key string
		want      bool
	}{
		{"a\nb\n", "b", true},
		{"a\nb\n", "^b", false},
		{"a\nb\n", "^a\nb", true},
		{"x a\n", "^a", false},
	} {
		if got := Matches(c.text, c.key); got != c.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.text, c.key, got, c.want)
		}
	}
}

// TestEveryBlockAccounted: every command block of the documentation has exactly one entry in
// Blocks, and every entry names exactly one block.
func TestEveryBlockAccounted(t *testing.T) {
	root := RepoRoot(t)
	blocks, err := CommandBlocks(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatal("no command block in README.md and docs/")
	}
	for _, b := range blocks {
		var matches []Entry
		for _, e := range Blocks {
			if e.File == b.File && Matches(b.Text, e.Key) {
				matches = append(matches, e)
			}
		}
		switch len(matches) {
		case 1:
		case 0:
			t.Errorf("%s:%d: a command block no entry of test/docs.Blocks accounts for: run it from a test (docs.Block, docs.Run) and list it with Test, or list it with the reason it cannot run (Untestable):\n%s", b.File, b.Line, b.Text)
		default:
			t.Errorf("%s:%d: %d entries of test/docs.Blocks match the block (keys %q): make them unique", b.File, b.Line, len(matches), keys(matches))
		}
	}
	seen := map[[2]string]bool{}
	for _, e := range Blocks {
		if seen[[2]string{e.File, e.Key}] {
			t.Errorf("%s: key %q is listed twice", e.File, e.Key)
		}
		seen[[2]string{e.File, e.Key}] = true
		if (e.Test == "") == (e.Untestable == "") {
			t.Errorf("%s: the entry for %q needs either Test or Untestable, not both or neither", e.File, e.Key)
		}
		if strings.TrimSpace(e.Key) == "" {
			t.Errorf("%s: an entry with an empty key", e.File)
			continue
		}
		var n int
		for _, b := range blocks {
			if b.File == e.File && Matches(b.Text, e.Key) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d command blocks contain the key %q, want exactly 1", e.File, n, e.Key)
		}
	}
}

func keys(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Key)
	}
	return out
}

// TestEntriesNameTheirTests: the test a Test entry names exists, and its source names the
// block's key (the exported constant of this package holding it), so it takes its command
// from the document.
func TestEntriesNameTheirTests(t *testing.T) {
	root := RepoRoot(t)
	constants := keyConstants(t, root)
	sources := map[string]map[string]string{} // package dir → test name → source
	for _, e := range Blocks {
		if e.Test == "" {
			continue
		}
		dir, name, ok := strings.Cut(e.Test, ".")
		if !ok || !strings.HasPrefix(name, "Test") {
			t.Errorf("%s: Test %q is not <package dir>.<TestName>", e.File, e.Test)
			continue
		}
		if sources[dir] == nil {
			sources[dir] = testFunctions(t, filepath.Join(root, dir))
		}
		src, ok := sources[dir][name]
		if !ok {
			t.Errorf("%s: the block with %q names %s, which is no test function of %s's _test.go files", e.File, e.Key, e.Test, dir)
			continue
		}
		name, ok = constants[e.Key]
		if !ok {
			t.Errorf("%s: the key %q of a tested block is no exported constant of test/docs: declare one, and use it in %s", e.File, e.Key, e.Test)
			continue
		}
		if !passesKey(src, name) {
			t.Errorf("%s: %s does not pass docs.%s, the key of the block it is listed as running, to a call (docs.Block or a helper that runs the block)", e.File, e.Test, name)
		}
	}
}

// passesKey reports whether the function in src passes docs.<name> as an argument of a call:
// a mention in a comment, or a key compared with nothing, does not run a block.
func passesKey(src, name string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		return false
	}
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		for _, arg := range call.Args {
			if sel, ok := arg.(*ast.SelectorExpr); ok && sel.Sel.Name == name {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "docs" {
					found = true
				}
			}
		}
		return true
	})
	return found
}

// keyConstants maps each string value of an exported constant of this package to its name.
func keyConstants(t *testing.T, root string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root, "test", "docs", "docs.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !name.IsExported() || i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[value] = name.Name
			}
		}
	}
	return out
}

// testFunctions returns the source of each Test function of dir's _test.go files.
func testFunctions(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, data, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			out[fn.Name.Name] = string(data[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
		}
	}
	return out
}

func TestPassesKey(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"func TestX(t *testing.T) { docs.Run(t, docs.Block(t, f, docs.KeyA), o) }", true},
		{"func TestX(t *testing.T) { n.run(t, operating, docs.KeyA) }", true},
		{"func TestX(t *testing.T) {\n\t// runs docs.KeyA\n\t_ = 1\n}", false},
		{"func TestX(t *testing.T) { k := docs.KeyA; _ = k }", false},
		{"func TestX(t *testing.T) { docs.Run(t, docs.Block(t, f, docs.KeyB), o) }", false},
	} {
		if got := passesKey(tc.src, "KeyA"); got != tc.want {
			t.Errorf("passesKey(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}
