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
			sources[dir] = packageFunctions(t, filepath.Join(root, dir))
		}
		if _, ok := sources[dir][name]; !ok || !strings.HasPrefix(name, "Test") {
			t.Errorf("%s: the block with %q names %s, which is no test function of %s's _test.go files", e.File, e.Key, e.Test, dir)
			continue
		}
		key, ok := constants[e.Key]
		if !ok {
			t.Errorf("%s: the key %q of a tested block is no exported constant of test/docs: declare one, and use it in %s", e.File, e.Key, e.Test)
			continue
		}
		if !runsKey(sources[dir], name, key) {
			t.Errorf("%s: %s does not pass docs.%s, the key of the block it is listed as running, to a call (docs.Block or a helper that runs the block), itself or through a function of its package it calls", e.File, e.Test, key)
		}
	}
}

// runsKey reports whether the function start of funcs (a package's functions and methods by
// name) passes docs.<key> to a call, itself or through the package's functions it calls.
func runsKey(funcs map[string]string, start, key string) bool {
	seen := map[string]bool{}
	next := []string{start}
	for len(next) > 0 {
		name := next[0]
		next = next[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		src, ok := funcs[name]
		if !ok {
			continue
		}
		if passesKey(src, key) {
			return true
		}
		next = append(next, calledNames(src)...)
	}
	return false
}

// calledNames are the names of the unexported functions and methods the function in src
// calls (a test's helpers; an exported name is another package's, or a type's API).
func calledNames(src string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+src, 0)
	if err != nil {
		return nil
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			var name *ast.Ident
			switch fun := call.Fun.(type) {
			case *ast.Ident:
				name = fun
			case *ast.SelectorExpr:
				name = fun.Sel
			}
			if name != nil && !name.IsExported() {
				names = append(names, name.Name)
			}
		}
		return true
	})
	return names
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

// packageFunctions returns the source of each function and method of dir's _test.go files, by
// name (the functions and methods of one name together).
func packageFunctions(t *testing.T, dir string) map[string]string {
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
			if !ok {
				continue
			}
			out[fn.Name.Name] += string(data[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset]) + "\n"
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

func TestRunsKey(t *testing.T) {
	funcs := map[string]string{
		"TestDirect":  "func TestDirect(t *testing.T) { n.RunBlock(t, f, docs.KeyA) }",
		"TestHelper":  "func TestHelper(t *testing.T) { s := swap(t); s.restart(t) }",
		"swap":        "func swap(t *testing.T) swapped { return swapped{} }",
		"restart":     "func (s swapped) restart(t *testing.T) { run(t) }",
		"run":         "func run(t *testing.T) { n.RunBlock(t, f, docs.KeyA) }",
		"TestNone":    "func TestNone(t *testing.T) { swap(t) }",
		"TestLoop":    "func TestLoop(t *testing.T) { loop(t) }",
		"loop":        "func loop(t *testing.T) { loop(t) }",
		"TestComment": "func TestComment(t *testing.T) {\n\t// run(t) runs docs.KeyA\n}",
		"TestOther":   "func TestOther(t *testing.T) { other.Run(t) }",
		"Run":         "func Run(t *testing.T) { n.RunBlock(t, f, docs.KeyA) }",
	}
	for name, want := range map[string]bool{"TestDirect": true, "TestHelper": true, "TestNone": false, "TestLoop": false, "TestComment": false, "TestOther": false} {
		if got := runsKey(funcs, name, "KeyA"); got != want {
			t.Errorf("runsKey(%s) = %v, want %v", name, got, want)
		}
	}
}
