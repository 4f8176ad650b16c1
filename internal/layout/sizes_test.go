package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The bounds every non-test file of the module keeps: a type with more methods than maxMethods
// has two jobs, and so has a file past maxFileLines; a function past maxFuncLines is steps to
// name. Test files are not bound (their tables are long by nature).
const (
	maxMethods   = 25
	maxFileLines = 600
	maxFuncLines = 80
)

// moduleRoot is the repository's root, two folders up from this package.
const moduleRoot = "../.."

// parsed is every non-test Go file under the module root, parsed once for all the checks.
var parsed struct {
	once  sync.Once
	fset  *token.FileSet
	files map[string]*ast.File
	err   error
}

// sourceFiles returns every non-test Go file under the module root, by path from the root.
func sourceFiles(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	parsed.once.Do(func() { parsed.fset, parsed.files, parsed.err = parseModule() })
	if parsed.err != nil {
		t.Fatal(parsed.err)
	}
	if len(parsed.files) < 100 {
		t.Fatalf("found %d Go files under %s; the walk is not at the module's root", len(parsed.files), moduleRoot)
	}
	return parsed.fset, parsed.files
}

func parseModule() (*token.FileSet, map[string]*ast.File, error) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		files[filepath.ToSlash(rel)] = f
		return nil
	})
	return fset, files, err
}

// receiver is the name of the type a method is declared on ("" for a function).
func receiver(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func TestNoTypeHasMoreThan25Methods(t *testing.T) {
	_, files := sourceFiles(t)
	methods := map[string]int{}
	for path, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && receiver(fd) != "" {
				methods[filepath.ToSlash(filepath.Dir(path))+"."+receiver(fd)]++
			}
		}
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s has %d methods (at most %d): split it by concern into components", typ, n, maxMethods)
		}
	}
}

func TestNoFileIsLongerThan600Lines(t *testing.T) {
	fset, files := sourceFiles(t)
	for path, f := range files {
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s is %d lines (at most %d): it holds two things", path, n, maxFileLines)
		}
	}
}

func TestNoFunctionIsLongerThan80Lines(t *testing.T) {
	fset, files := sourceFiles(t)
	for path, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				name := fd.Name.Name
				if r := receiver(fd); r != "" {
					name = r + "." + name
				}
				t.Errorf("%s: %s is %d lines (at most %d): name its steps", path, name, n, maxFuncLines)
			}
		}
	}
}
