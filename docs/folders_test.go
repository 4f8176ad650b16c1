package docs_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of this repository's module.
const module = "github.com/switchboard-bot/switchboard/"

var backquoted = regexp.MustCompile("`([^`]+)`")

// folderRow is one row of architecture.md's folders table: the folders its first cell names, and
// the packages its imports cell names (all: the cell says "everything", as cmd/bot's does).
type folderRow struct {
	folders []string
	imports map[string]bool
	all     bool
}

// foldersTable reads the table under the header "| folder | what lives there | imports … |".
func foldersTable(page string) []folderRow {
	_, rest, ok := strings.Cut(page, "\n| folder | what lives there |")
	if !ok {
		return nil
	}
	var rows []folderRow
	for _, line := range strings.Split(rest, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.Contains(cells[1], "`") {
			continue // the header's rule
		}
		r := folderRow{imports: map[string]bool{}, all: strings.Contains(cells[len(cells)-2], "everything")}
		for _, m := range backquoted.FindAllStringSubmatch(cells[1], -1) {
			r.folders = append(r.folders, m[1])
		}
		for _, m := range backquoted.FindAllStringSubmatch(cells[len(cells)-2], -1) {
			r.imports[m[1]] = true
		}
		rows = append(rows, r)
	}
	return rows
}

// moduleImports returns the folders under root that hold Go code (test files aside), each with
// the packages of this module its code imports, as folders.
func moduleImports(root string) (map[string]map[string]bool, error) {
	code := map[string]map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(rel)
		if code[dir] == nil {
			code[dir] = map[string]bool{}
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if pkg, ok := strings.CutPrefix(p, module); ok {
				code[dir][pkg] = true
			}
		}
		return nil
	})
	return code, err
}

// TestArchitectureNamesEveryPackage holds docs/architecture.md's folders table to the code: every
// folder with Go code (not only tests) has a row, every row names a folder that exists, and every
// package of the module a folder's code imports is named in its row's imports (or shares its
// row), so a package cannot be added, moved or given a new dependency without the picture
// following it.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root, pages := readPages(t)
	rows := foldersTable(string(pages[filepath.Join(root, "docs", "architecture.md")]))
	if len(rows) < 10 {
		t.Fatalf("found %d rows in architecture.md's folders table: the pattern or the page is wrong", len(rows))
	}
	rowOf := map[string]int{}
	for i, r := range rows {
		for _, f := range r.folders {
			rowOf[f] = i
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("docs/architecture.md's folders table names %s, which does not exist", f)
			}
		}
	}
	code, err := moduleImports(root)
	if err != nil {
		t.Fatal(err)
	}
	for dir, imports := range code {
		i, ok := rowOf[dir]
		if !ok {
			t.Errorf("%s holds Go code, but docs/architecture.md's folders table has no row naming it", dir)
			continue
		}
		for pkg := range imports {
			j, named := rowOf[pkg]
			if !rows[i].all && !rows[i].imports[pkg] && !(named && j == i) {
				t.Errorf("%s imports %s, but its row in docs/architecture.md's folders table does not say so", dir, pkg)
			}
		}
	}
}

// goPath is a Go file named in backquotes with its folder, as the pages name the code.
var goPath = regexp.MustCompile("`((?:[A-Za-z0-9_.-]+/)+[A-Za-z0-9_.-]+\\.go)`")

// TestDocsNameGoFilesThatExist holds the pages to the code: a Go file they name with its folder
// exists, so a moved file cannot leave a page pointing at where it was.
func TestDocsNameGoFilesThatExist(t *testing.T) {
	root, pages := readPages(t)
	checked := 0
	for page, body := range pages {
		rel, _ := filepath.Rel(root, page)
		for _, m := range goPath.FindAllStringSubmatch(string(body), -1) {
			checked++
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s names %s, which does not exist", rel, m[1])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no Go files named: the pattern or the pages are wrong")
	}
}
