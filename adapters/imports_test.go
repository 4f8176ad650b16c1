// Package adapters_test holds the rule every adapter follows: it translates between one platform
// and channels, and can reach nothing else of the project — not the queue, not the thread store,
// not Redis.
package adapters_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/switchboard-bot/switchboard/"

// allowed are the project packages an adapter's code may import: the channels vocabulary and the
// adapters' kit, render and the conversation vocabulary (of the standard library only; never the
// router or delivery). Tests may also use the platform fakes, the
// fake model, the test helper that waits on a condition, the concurrent log buffer and the
// counting Handler (internal/chantest).
var allowed = []string{"channels", "channels/kit", "render", "core/conv"}

var allowedInTests = []string{"internal/fake/", "internal/poll", "internal/logbuf", "internal/leasetest", "internal/chantest"}

// forbidden are outside packages no adapter may import, whatever reaches it transitively.
var forbidden = []string{"github.com/redis/go-redis", "github.com/alicebob/miniredis"}

func TestAdaptersImportOnlyChannelsRenderAndConv(t *testing.T) {
	dirs, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			checked++
			own := module + "adapters/" + dir
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if reason := refuse(p, own, strings.HasSuffix(path, "_test.go")); reason != "" {
					t.Errorf("%s imports %s: %s", path, p, reason)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatal("no adapter source files found")
	}
}

func TestConvImportsOnlyTheStandardLibrary(t *testing.T) {
	for _, pkg := range []string{"core/conv"} {
		files, err := filepath.Glob("../" + pkg + "/*.go")
		if err != nil || len(files) == 0 {
			t.Fatalf("no files in %s: %v", pkg, err)
		}
		for _, path := range files {
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
					t.Errorf("%s imports %s: %s is a leaf of the standard library only", path, p, pkg)
				}
			}
		}
	}
}

func refuse(p, own string, test bool) string {
	for _, f := range forbidden {
		if strings.HasPrefix(p, f) {
			return "adapters know nothing of Redis"
		}
	}
	if !strings.HasPrefix(p, module) || strings.HasPrefix(p, own) {
		return ""
	}
	rel := strings.TrimPrefix(p, module)
	for _, a := range allowed {
		if rel == a {
			return ""
		}
	}
	if test {
		for _, a := range allowedInTests {
			if strings.HasPrefix(rel, a) {
				return ""
			}
		}
	}
	return "an adapter imports channels, channels/kit, render and core/conv only (never the router or delivery)"
}
