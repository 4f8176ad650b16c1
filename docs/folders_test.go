package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// folderCell is a row's first cell in architecture.md's folders table; the folders it names are
// in backquotes.
var (
	folderCell = regexp.MustCompile("^\\| (`[^|]+)\\|")
	backquoted = regexp.MustCompile("`([^`]+)`")
)

// foldersTable returns the rows of the table under the header "| folder | what lives there |".
func foldersTable(page string) []string {
	_, rest, ok := strings.Cut(page, "\n| folder | what lives there |")
	if !ok {
		return nil
	}
	var rows []string
	for _, line := range strings.Split(rest, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		rows = append(rows, line)
	}
	return rows
}

// TestArchitectureNamesEveryPackage holds docs/architecture.md's folders table to the code: every
// folder with Go code (not only tests) has a row, and every row names a folder that exists, so a
// package cannot be added or moved without the picture following it.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, row := range foldersTable(string(page)) {
		cell := folderCell.FindStringSubmatch(row)
		if cell == nil {
			continue // the header's rule
		}
		for _, m := range backquoted.FindAllStringSubmatch(cell[1], -1) {
			named[m[1]] = true
		}
	}
	if len(named) < 10 {
		t.Fatalf("found %d folders in architecture.md's table: the pattern or the page is wrong", len(named))
	}

	code := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
		code[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range code {
		if !named[dir] {
			t.Errorf("%s holds Go code, but docs/architecture.md's folders table has no row naming it", dir)
		}
	}
	for dir := range named {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			t.Errorf("docs/architecture.md's folders table names %s, which does not exist", dir)
		}
	}
}
