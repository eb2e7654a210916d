package app

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// upstreamRunCalls is every call upstream's app.Run makes, in source order: the steps run()
// composes. Since 1.37 it names the informers (run_from_1_37_test.go).
func upstreamRunCalls() []string {
	calls := []string{
		"klog.Infof", "utilversion.Get",
		"klog.InfoS", "os.Getenv", "os.Getenv", "os.Getenv",
	}
	if upstreamRunNamesInformers {
		calls = append(calls, "cache.NewInformerName")
	}
	return append(calls, "NewConfig", "config.Complete", "CreateServerChain", "server.PrepareRun", "prepared.Run")
}

// TestRunComposesUpstreamRun reads upstream's app.Run from the module cache and fails when
// its steps change, so that a Kubernetes bump reviews run(), which composes the same steps.
func TestRunComposesUpstreamRun(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes in the module cache: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "cmd", "kube-apiserver", "app", "server.go")
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Name.Name != "Run" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				switch f := call.Fun.(type) {
				case *ast.Ident:
					calls = append(calls, f.Name)
				case *ast.SelectorExpr:
					if x, ok := f.X.(*ast.Ident); ok {
						calls = append(calls, x.Name+"."+f.Sel.Name)
					}
				}
			}
			return true
		})
	}
	if diff := cmp.Diff(upstreamRunCalls(), calls); diff != "" {
		t.Errorf("upstream's app.Run in %s changed (-pinned +upstream): review run() in run.go, then the pin:\n%s", path, diff)
	}
}
