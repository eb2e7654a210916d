package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// suiteDirs are the directories (from the repository's root) whose packages' tests the
// integration, release and upgrade suites record; render refuses a record with a top-level test
// in no row, which only .ci/run's verify-compatibility reads. This reads the sources, every
// minor's files alike, so make test's unit suite finds the missing row first.
var suiteDirs = map[string]string{
	"test/integration": suiteIntegration,
	"test/release":     suiteRelease,
	"test/upgrade":     suiteUpgrade,
}

func TestEveryTopLevelTestIsInARow(t *testing.T) {
	root := filepath.Join("..", "..")
	found := 0
	for dir, suite := range suiteDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			for _, decl := range file.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !isTopLevelTest(fn) {
					continue
				}
				found++
				o := outcome{suite: suite, pkg: filepath.ToSlash(rel), test: fn.Name.Name}
				if !inARow(o) {
					t.Errorf("%s: %s.%s is in no row of the table (hack/compatibility/table.go): .ci/run's make verify-compatibility would fail", path, o.pkg, o.test)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == 0 {
		t.Fatal("found no top-level tests under the suites' directories")
	}
}

// isTopLevelTest reports whether fn is what go test runs as a test: TestXxx(t *testing.T).
func isTopLevelTest(fn *ast.FuncDecl) bool {
	name, ok := strings.CutPrefix(fn.Name.Name, "Test")
	// TestMain is not a test, nor is Testify: a lower-case letter after "Test".
	if !ok || name == "Main" || (name != "" && name[0] >= 'a' && name[0] <= 'z') {
		return false
	}
	params := fn.Type.Params.List
	if len(params) != 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}
