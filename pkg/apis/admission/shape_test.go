package admission_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/portcullis-k8s/portcullis/"

// The configuration API's shape, one direction only: the API tree (this package and its
// subpackages) imports nothing of the module outside itself; the loader
// (pkg/admission/portcullisconfig) imports the API tree and nothing that reads a
// configuration; everything that reads one (cmd/, pkg/, plugin/) imports only the internal
// types and the loader, never the versioned types, their conversions or the validation.
var (
	apiTree = "pkg/apis/admission"
	loader  = "pkg/admission/portcullisconfig"
	// loaderMayImport are the module's packages the loader may import beside the API tree.
	loaderMayImport = []string{"pkg/releases", "pkg/kubecompat"}
	// consumerDirs are where the configuration's readers are. The harnesses (internal/,
	// hack/, test/) write configuration files, in the versioned kinds, and are not held here.
	consumerDirs = []string{"cmd", "pkg", "plugin"}
	// versionedKinds is the staging module's tree of the group's versions, any version.
	versionedKinds = "github.com/portcullis-k8s/api/admission/"
)

func TestImportsGoOneWay(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	checked := 0
	for _, dir := range consumerDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			pkg := filepath.ToSlash(filepath.Dir(rel))
			file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			for _, spec := range file.Imports {
				imp, err := strconv.Unquote(spec.Path.Value)
				if err != nil {
					return err
				}
				if problem := importProblem(pkg, imp); problem != "" {
					t.Errorf("%s imports %s: %s", rel, imp, problem)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatal("no files checked")
	}
}

// importProblem says what is wrong with pkg (a directory of the module) importing imp, or "":
// a reader may import the internal types (the tree's root) and the loader, nothing else of
// the tree and no versioned kind.
func importProblem(pkg, imp string) string {
	inTree := func(p string) bool { return p == apiTree || strings.HasPrefix(p, apiTree+"/") }
	ours, isOurs := strings.CutPrefix(imp, module)
	switch {
	case inTree(pkg):
		if isOurs && !inTree(ours) {
			return "the API tree imports nothing of the module outside itself"
		}
	case pkg == loader:
		if isOurs && !inTree(ours) && !slices.Contains(loaderMayImport, ours) {
			return "the loader imports the API tree, not the configuration's readers"
		}
	default:
		if strings.HasPrefix(imp, versionedKinds) || (isOurs && strings.HasPrefix(ours, apiTree+"/")) {
			return "a reader of the configuration takes the internal types from the loader (pkg/admission/portcullisconfig), already converted and validated"
		}
	}
	return ""
}

// TestImportProblemCatchesEachDirection: each rule refuses what it is for.
func TestImportProblemCatchesEachDirection(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		refused  bool
	}{
		{apiTree + "/validation", module + "plugin/pkg/admission/webhook", true},
		{apiTree + "/validation", module + apiTree, false},
		{loader, module + "pkg/admission/enforcement", true},
		{loader, module + apiTree + "/validation", false},
		{"plugin/pkg/admission/webhook", module + apiTree + "/validation", true},
		{"cmd/kube-apiserver/app/preflight", "github.com/portcullis-k8s/api/admission/v1alpha1", true},
		{"plugin/pkg/admission/webhook", module + apiTree, false},
		{"plugin/pkg/admission/webhook", module + loader, false},
		{"pkg/admission/trace", "github.com/portcullis-k8s/api/admission/v1beta1", true},
		{"pkg/admission/trace", module + apiTree + "/v1beta1", true},
	} {
		if got := importProblem(tc.pkg, tc.imp) != ""; got != tc.refused {
			t.Errorf("%s importing %s: refused %v, want %v", tc.pkg, tc.imp, got, tc.refused)
		}
	}
}
