// Command openapi-ours keeps, of a file openapi-gen wrote, only the definitions of this
// distribution's own API types. openapi-gen writes definitions for the packages it reads to
// learn their model names too (core/v1, meta/v1, ...): those are upstream's, served by
// upstream's own generated definitions, and they differ between Kubernetes minors, so the
// file keeps none of them and builds against every supported minor's k8s.io/api.
//
// Usage: go run ./hack/openapi-ours FILE (rewrites FILE).
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
)

// ourPrefix starts the name openapi-gen gives the function of each definition of ours
// (schema_<import path with dots and slashes as underscores>_<Type>).
const ourPrefix = "schema_portcullis_k8s_"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: openapi-ours FILE")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "openapi-ours: %v\n", err)
		os.Exit(1)
	}
}

func rewrite(path string) error {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	kept := 0
	var decls []ast.Decl
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name == "GetOpenAPIDefinitions" {
			decls = append(decls, decl)
			if ok {
				n, err := keepOurEntries(fn)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				kept = n
			}
			continue
		}
		if strings.HasPrefix(fn.Name.Name, ourPrefix) {
			decls = append(decls, decl)
		}
	}
	if kept == 0 {
		return fmt.Errorf("%s: no definition of ours in GetOpenAPIDefinitions", path)
	}
	file.Decls = decls
	dropUnusedImports(file)
	// Comments of dropped functions would otherwise be printed in place.
	file.Comments = keptComments(file)
	var out bytes.Buffer
	if err := format.Node(&out, fset, file); err != nil {
		return err
	}
	return os.WriteFile(path, withoutImportGaps(out.Bytes()), 0o644)
}

// withoutImportGaps removes the blank lines the dropped imports leave in the import block.
func withoutImportGaps(src []byte) []byte {
	start := bytes.Index(src, []byte("\nimport (\n"))
	if start < 0 {
		return src
	}
	end := start + bytes.Index(src[start:], []byte("\n)\n"))
	block := bytes.ReplaceAll(src[start:end], []byte("\n\n"), []byte("\n"))
	for bytes.Contains(block, []byte("\n\n")) {
		block = bytes.ReplaceAll(block, []byte("\n\n"), []byte("\n"))
	}
	return append(append(append([]byte{}, src[:start]...), block...), src[end:]...)
}

// keepOurEntries drops from GetOpenAPIDefinitions' map every entry whose value is not a
// call of one of our definitions' functions; it returns how many it kept.
func keepOurEntries(fn *ast.FuncDecl) (int, error) {
	for _, stmt := range fn.Body.List {
		ret, ok := stmt.(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 {
			continue
		}
		lit, ok := ret.Results[0].(*ast.CompositeLit)
		if !ok {
			continue
		}
		var elts []ast.Expr
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				return 0, fmt.Errorf("GetOpenAPIDefinitions: an entry that is not key: value")
			}
			call, ok := kv.Value.(*ast.CallExpr)
			if !ok {
				continue
			}
			if id, ok := call.Fun.(*ast.Ident); ok && strings.HasPrefix(id.Name, ourPrefix) {
				elts = append(elts, e)
			}
		}
		lit.Elts = elts
		return len(elts), nil
	}
	return 0, fmt.Errorf("GetOpenAPIDefinitions does not return a map literal")
}

// dropUnusedImports removes the imports no kept declaration refers to.
func dropUnusedImports(file *ast.File) {
	used := map[string]bool{}
	for _, decl := range file.Decls {
		if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			continue
		}
		ast.Inspect(decl, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok {
					used[id.Name] = true
				}
			}
			return true
		})
	}
	var imports []*ast.ImportSpec
	for _, decl := range file.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		var specs []ast.Spec
		for _, s := range g.Specs {
			spec := s.(*ast.ImportSpec)
			if used[importName(spec)] {
				specs = append(specs, spec)
				imports = append(imports, spec)
			}
		}
		g.Specs = specs
	}
	file.Imports = imports
}

func importName(spec *ast.ImportSpec) string {
	if spec.Name != nil {
		return spec.Name.Name
	}
	path, _ := strconv.Unquote(spec.Path.Value)
	return path[strings.LastIndex(path, "/")+1:]
}

// keptComments returns the comment groups outside every dropped declaration.
func keptComments(file *ast.File) []*ast.CommentGroup {
	var kept []*ast.CommentGroup
	for _, c := range file.Comments {
		inside := false
		for _, decl := range file.Decls {
			if c.Pos() >= decl.Pos() && c.End() <= decl.End() {
				inside = true
				break
			}
		}
		before := len(file.Decls) > 0 && c.End() <= file.Decls[0].Pos()
		if inside || before || isDocOfKept(c, file) {
			kept = append(kept, c)
		}
	}
	return kept
}

func isDocOfKept(c *ast.CommentGroup, file *ast.File) bool {
	for _, decl := range file.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Doc == c {
			return true
		}
	}
	return false
}
